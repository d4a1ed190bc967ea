#!/usr/bin/env bash
# `xftctl inventory show|validate|import` on fixture files: exact output and
# exit codes, no SSH. Needs $XFTCTL and $XFT_SOURCE_DIR (set by ctest).
set -uo pipefail
: "${XFTCTL:?path of the built xftctl}" "${XFT_SOURCE_DIR:?source tree}"
data="$XFT_SOURCE_DIR/tests/data/inventory"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# check NAME EXPECTED_RC EXPECTED_STDOUT EXPECTED_STDERR -- command...
check() {
  local name=$1 want_rc=$2 want_out=$3 want_err=$4
  shift 5
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [[ $rc != "$want_rc" ]]; then
    echo "FAIL $name: exit $rc, expected $want_rc"; cat "$work/err"; failures=$((failures + 1)); return
  fi
  if [[ "$(cat "$work/out")" != "$want_out" ]]; then
    echo "FAIL $name: stdout differs"; diff <(echo "$want_out") "$work/out"; failures=$((failures + 1)); return
  fi
  if [[ "$(cat "$work/err")" != "$want_err" ]]; then
    echo "FAIL $name: stderr differs"; diff <(echo "$want_err") "$work/err"; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

cd "$work"
unset XFTCTL_INVENTORY

check validate-minimal 0 "$data/minimal.yaml: 5 hosts, OK" "" -- \
  "$XFTCTL" -i "$data/minimal.yaml" inventory validate

check show-minimal 0 "NAME    ADDRESS      USER  PORT  RANKS  PROVIDER       IFACE  SHARED  AUTH
node01  192.168.0.1  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD
node02  192.168.0.2  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD
node03  192.168.0.3  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD
node04  192.168.0.4  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD
head    192.168.0.9  root  22    1      tcp;ofi_rxm    eth1   /mnt    env:HEAD_PASSWORD" "" -- \
  "$XFTCTL" -i "$data/minimal.yaml" inventory show

# The inventory is found through $XFTCTL_INVENTORY, then ./inventory.yaml.
check validate-from-env 0 "$data/groups.yaml: 3 hosts, OK" "" -- \
  env XFTCTL_INVENTORY="$data/groups.yaml" "$XFTCTL" inventory validate
cp "$data/minimal.yaml" inventory.yaml
check validate-from-cwd 0 "inventory.yaml: 5 hosts, OK" "" -- "$XFTCTL" inventory validate
rm inventory.yaml
check no-inventory 1 "" "xftctl: no inventory found: tried -i (not given), \$XFTCTL_INVENTORY (not set) and ./inventory.yaml (missing); pass -i FILE or write inventory.yaml (see docs/inventory.md)" -- \
  "$XFTCTL" inventory show

check show-json 0 '[
  {
    "name": "node01",
    "address": "10.0.0.1",
    "user": "root",
    "port": 22,
    "ranks": "per-socket",
    "fabric": {
      "provider": "tcp;ofi_rxm",
      "iface": ""
    },
    "shared": "",
    "auth": "key:/etc/xft/id_ed25519",
    "groups": [
      "compute"
    ]
  },
  {
    "name": "node02",
    "address": "10.0.0.2",
    "user": "root",
    "port": 22,
    "ranks": "per-socket",
    "fabric": {
      "provider": "tcp;ofi_rxm",
      "iface": ""
    },
    "shared": "",
    "auth": "key:/etc/xft/id_ed25519",
    "groups": [
      "compute"
    ]
  },
  {
    "name": "head",
    "address": "head.cluster.example",
    "user": "root",
    "port": 2222,
    "ranks": 2,
    "fabric": {
      "provider": "tcp;ofi_rxm",
      "iface": ""
    },
    "shared": "",
    "auth": "prompt",
    "groups": [
      "compute",
      "login"
    ]
  }
]' "" -- "$XFTCTL" -i "$data/groups.yaml" inventory show --json

cp "$data/errors.yaml" errors.yaml
check validate-errors 1 "" "errors.yaml:3:3: defaults.password: passwords must not be stored in the inventory (remove it; export the password in an environment variable and name it with password_env: VAR, or set password_prompt: true)
errors.yaml:5:11: hosts[0].name: bad range \`node[04-01]\`: 04 > 01 (write the lower bound first: 01-04)
errors.yaml:7:14: hosts[1].address: \`192.168.0.[1-3]\` expands to 3 addresses but name \`node[01-04]\` to 4 hosts (make both ranges the same length)
errors.yaml:9:5: hosts[2].adress: unknown key (did you mean \`address\`?)
errors.yaml:10:12: hosts[2].ranks: 0 is below 1 (use a count of at least 1, per-socket or per-numa)
errors.yaml:12:14: hosts[3].address: \`192.168.0.300\` is not an IPv4/IPv6 address or a valid DNS host name
errors.yaml:13:11: hosts[3].port: 70000 is out of range (use 1..65535, usually 22)
errors.yaml:14:13: hosts[3].fabric: expected a map (like {provider: \"tcp;ofi_rxm\", iface: eth0}), got a list
errors.yaml:17:12: hosts[4].ranks: \`per-core\` is not a number, per-socket or per-numa (e.g. ranks: 2)
errors.yaml:18:11: hosts[5].name: duplicate host name \`a3\` (also declared at line 15; names must be unique)" -- \
  "$XFTCTL" -i errors.yaml inventory validate
validate_errors_stderr=$(cat "$work/err")
check show-errors 1 "" "$validate_errors_stderr" -- "$XFTCTL" -i errors.yaml inventory show
check validate-json 0 '{
  "path": "'"$data"'/minimal.yaml",
  "ok": true,
  "hosts": 5
}' "" -- "$XFTCTL" -i "$data/minimal.yaml" inventory validate --json
# --json: every problem as an object on stdout; stderr as without --json.
check validate-errors-json 1 "$("$XFTCTL" -i errors.yaml inventory validate --json 2>/dev/null)" \
  "$validate_errors_stderr" -- "$XFTCTL" -i errors.yaml inventory validate --json
summary=$(jq -c '[.path, .ok, (.problems | length), .problems[9]]' "$work/out")
if [[ $summary == '["errors.yaml",false,10,{"file":"errors.yaml","line":18,"column":11,"message":"hosts[5].name: duplicate host name `a3` (also declared at line 15; names must be unique)"}]' ]]; then
  echo "ok   validate-errors-json-problems"
else
  echo "FAIL validate-errors-json-problems: $summary"; failures=$((failures + 1))
fi
check validate-missing-json 1 '{
  "path": null,
  "ok": false,
  "problems": [
    {
      "message": "inventory nothere.yaml (from -i) does not exist or is not a file"
    }
  ]
}' "xftctl: inventory nothere.yaml (from -i) does not exist or is not a file" -- \
  "$XFTCTL" -i nothere.yaml inventory validate --json
if grep -q do-not-store-me "$work/err"; then echo "FAIL the password value was printed"; failures=$((failures + 1)); fi

check import-xft-demo 0 'hosts:
  - name: "192.168.0.[1-4]"' "" -- "$XFTCTL" inventory import "$data/xft_demo_hosts.ini"

check import-password-env 0 'defaults:
  password_env: XFT_SSH_PASSWORD
hosts:
  - name: "192.168.0.[1-4]"' "xftctl: export XFT_SSH_PASSWORD=... (the SSH password) before running xftctl on this inventory" -- \
  "$XFTCTL" inventory import "$data/xft_demo_hosts.ini" --password-env XFT_SSH_PASSWORD

cp "$data/xft_demo_hosts_password.ini" hosts
check import-refuses-password 1 "" "hosts:2:1: ansible_ssh_pass: passwords are not copied into the inventory (pass --password-env XFT_SSH_PASSWORD to import: the YAML then says password_env: XFT_SSH_PASSWORD, and you export XFT_SSH_PASSWORD=... before running xftctl)" -- \
  "$XFTCTL" inventory import hosts
if grep -q not-a-real-secret "$work/err"; then echo "FAIL the password value was printed"; failures=$((failures + 1)); fi
refusal=$(cat "$work/err")

# The XFT demo's file as shipped, password line included: --password-env takes its place.
check import-password-replaced 0 "" "xftctl: wrote demo.yaml: 2 hosts
xftctl: export XFT_SSH_PASSWORD=... (the SSH password) before running xftctl on this inventory" -- \
  "$XFTCTL" inventory import hosts --password-env XFT_SSH_PASSWORD -o demo.yaml
check password-replaced-yaml 0 'defaults:
  password_env: XFT_SSH_PASSWORD
hosts:
  - name: "192.168.0.[1-2]"' "" -- cat demo.yaml
check password-replaced-validates 0 "demo.yaml: 2 hosts, OK" "" -- "$XFTCTL" -i demo.yaml inventory validate
check import-password-env-format-deepspeed 1 "" "hosts:1:1: host: \`[all_hosts:vars]\` is an Ansible section, not a hostfile line (import it with --format ansible)
hosts:2:1: host: \`ansible_ssh_pass=...\` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. worker-1 slots=4)
hosts:5:1: host: \`[all_hosts]\` is an Ansible section, not a hostfile line (import it with --format ansible)
hosts:6:1: host: \`192.168.0.1\` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. worker-1 slots=4)
hosts:7:1: host: \`192.168.0.2\` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. worker-1 slots=4)" -- \
  "$XFTCTL" inventory import hosts --format deepspeed --password-env XFT_SSH_PASSWORD
if grep -rq not-a-real-secret "$work/err" demo.yaml; then echo "FAIL the password value was printed or written"; failures=$((failures + 1)); fi

# A DeepSpeed hostfile is told by its NAME slots=N lines; slots become ranks.
cp "$data/deepspeed_hostfile" hostfile
check import-deepspeed 0 "" "xftctl: wrote ds.yaml: 5 hosts" -- "$XFTCTL" inventory import hostfile -o ds.yaml
check deepspeed-shows 0 "NAME         ADDRESS      USER  PORT  RANKS  PROVIDER     IFACE  SHARED  AUTH
worker-1     worker-1     root  22    2      tcp;ofi_rxm  -      -       auto
worker-2     worker-2     root  22    2      tcp;ofi_rxm  -      -       auto
worker-3     worker-3     root  22    2      tcp;ofi_rxm  -      -       auto
worker-4     worker-4     root  22    2      tcp;ofi_rxm  -      -       auto
192.168.0.9  192.168.0.9  root  22    1      tcp;ofi_rxm  -      -       auto" "" -- "$XFTCTL" -i ds.yaml inventory show
check import-deepspeed-forced 0 'defaults:
  ranks: 2
hosts:
  - name: "worker-[1-4]"
  - name: 192.168.0.9
    ranks: 1' "" -- "$XFTCTL" inventory import hostfile --format deepspeed

# -o writes the file atomically; the result validates and shows the same hosts.
cp "$data/cluster.ini" cluster.ini
check import-to-file 0 "" "xftctl: warning: cluster.ini:13:1: xft_build_dir: ignored (no inventory field corresponds to it)
xftctl: wrote imported.yaml: 5 hosts" -- "$XFTCTL" inventory import cluster.ini -o imported.yaml
check imported-validates 0 "imported.yaml: 5 hosts, OK" "" -- "$XFTCTL" -i imported.yaml inventory validate
check imported-shows 0 "NAME   ADDRESS      USER  PORT  RANKS  PROVIDER     IFACE  SHARED  AUTH
node1  192.168.0.1  root  22    1      tcp;ofi_rxm  -      -       key:/root/.ssh/id_ed25519
node2  192.168.0.2  root  22    1      tcp;ofi_rxm  -      -       key:/root/.ssh/id_ed25519
node3  192.168.0.3  root  22    1      tcp;ofi_rxm  -      -       key:/root/.ssh/id_ed25519
node4  192.168.0.4  root  22    1      tcp;ofi_rxm  -      -       key:/root/.ssh/id_ed25519
head   192.168.0.9  xft   2222  1      tcp;ofi_rxm  -      -       key:/root/.ssh/id_ed25519" "" -- \
  "$XFTCTL" -i imported.yaml inventory show
if ls -A | grep -q xftctl-tmp; then echo "FAIL a temp file was left behind"; failures=$((failures + 1)); fi

# A failed import leaves an existing output file untouched.
echo "keep" >kept.yaml
check import-failure-keeps-output 1 "" "$refusal" -- "$XFTCTL" inventory import hosts -o kept.yaml
if [[ "$(cat kept.yaml)" != keep ]]; then echo "FAIL kept.yaml was overwritten"; failures=$((failures + 1)); fi

check import-missing-file 1 "" "xftctl: cannot open nonexistent.ini: No such file or directory" -- \
  "$XFTCTL" inventory import nonexistent.ini

# Host selection (-l/--limit, --hosts, -f): every word is resolved before any
# host is contacted, so these refusals need no SSH.
check limit-typo 1 "" "xftctl: --hosts: nod01 is not an inventory host or group (did you mean \`node01\`?)" -- \
  "$XFTCTL" -i "$data/groups.yaml" exec -f 8 -l 'all,!nod01' -- true
check limit-long-name 1 "" "xftctl: --hosts: @compte is not an inventory group (did you mean \`@compute\`?)" -- \
  "$XFTCTL" -i "$data/groups.yaml" ping --limit '@compte,!head'
check limit-empty 1 "" "xftctl: --hosts: \`compute,!compute\` selects no host (the ! and & words remove every host the others name)" -- \
  "$XFTCTL" -i "$data/groups.yaml" sync . --dest /tmp/x --hosts 'compute,!compute'

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all inventory CLI checks passed"
