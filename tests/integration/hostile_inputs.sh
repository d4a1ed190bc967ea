#!/usr/bin/env bash
# The hostile-value corpus (tests/data/hostile/values.tsv) against the real
# commands on 2 namespace test hosts. Every `reject` row must stop `inventory
# validate`, `setup hosts --check` and `launch --dry-run` with one error line
# that names the field; every `literal` row must reach the hosts byte for byte
# (directories, the ranks' environment, synced files). After every
# command no /tmp/PWNED* marker may exist on the control node or on any host.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

CORPUS="$XFT_SOURCE_DIR/tests/data/hostile/values.tsv"
rm -f /tmp/PWNED*
start_cluster 2 --auth key --share-all --private /etc/xftctl --private /opt
H=(h01 h02)
INV="$TEST_TMP/hostile.yaml"
checked=0
host_run h02 touch /tmp/PWNED-selftest
(no_markers "self-test") 2>/dev/null && fail "the marker check does not see a host's /tmp"
host_run h02 rm /tmp/PWNED-selftest
xft ping --accept-new-host-keys
assert_eq 0 "$RC" "ping the test hosts (their keys trusted on first use, as asked); err: $ERR"

# A host's /tmp is its own directory under the cluster dir, so one ls here
# sees the control node's and every host's /tmp at once.
no_markers() {  # WHAT: fails if any marker exists here or on a host
  local found
  found=$(ls -d /tmp/PWNED* "$CLUSTER_DIR"/hosts/*/tmp/PWNED* 2>/dev/null || true)
  [[ -z $found ]] || fail "$1: marker file created: $found"
}

json() { jq -Rn --arg v "$1" '$v'; }

# write_inventory FIELD VALUE: the cluster's inventory with VALUE in FIELD (JSON
# strings are YAML double-quoted scalars, so the value arrives byte for byte).
write_inventory() {
  local field=$1 value v key user=root shared=/mnt iface=eth0 provider='"tcp;ofi_rxm"'
  local port=22 ranks=1 password_env="" name1=h01 address1=$HOST_H01_ADDR nfs="" env="" reach=""
  v=$(json "$2")
  key=$(json "$CLUSTER_KEY")
  case $field in
    user) user=$v ;;
    key) key=$v ;;
    shared) shared=$v ;;
    fabric.iface) iface=$v ;;
    fabric.provider) provider=$v ;;
    fabric.env) env=", env: {XFT_HOSTILE: $v}" ;;
    port) port=$v ;;
    ranks) ranks=$v ;;
    password_env) password_env=$v ;;
    become | become_password_env | jump) reach="  $field: $v" ;;
    name) name1=$v ;;
    address) address1=$v ;;
    nfs.options) nfs="nfs: {server: h01, options: $v}" ;;
    nfs.export) nfs="nfs: {server: h01, export: $v}" ;;
    *) fail "values.tsv: no inventory field $field in hostile_inputs.sh (add it)" ;;
  esac
  {
    echo "defaults:"
    echo "  user: $user"
    if [[ -n $password_env ]]; then echo "  password_env: $password_env"; else echo "  key: $key"; fi
    echo "  port: $port"
    echo "  ranks: $ranks"
    echo "  shared: $shared"
    echo "  fabric: {provider: $provider, iface: $iface$env}"
    [[ -z $reach ]] || echo "$reach"
    echo "hosts:"
    echo "  - {name: $name1, address: $address1}"
    echo "  - {name: h02, address: $HOST_H02_ADDR}"
    [[ -z $nfs ]] || echo "$nfs"
  } >"$INV"
}

xinv() { CLUSTER_INVENTORY=$INV xft "$@"; }

# The one error line: exit non-zero, exactly one line on stderr, naming FIELD.
expect_rejected() {  # FIELD WHAT
  ((RC != 0)) || fail "$2: accepted; out: $OUT"
  [[ $(wc -l <<<"$ERR") -eq 1 ]] || fail "$2: expected one error line, got:
$ERR"
  assert_contains "$ERR" "$1" "$2: the error names the field"
}

# --- reject rows --------------------------------------------------------------
ansible_reject() {  # VAR VALUE
  local ini="$TEST_TMP/hosts.ini"
  printf '[all_hosts]\nh01 ansible_host=%s %s="%s"\n' "$HOST_H01_ADDR" "$1" "$2" >"$ini"
  [[ $1 == ansible_host ]] && printf '[all_hosts]\nh01 ansible_host="%s"\n' "$2" >"$ini"
  xft inventory import "$ini"
  ((RC != 0)) || fail "import $1=$2 accepted: $OUT"
  assert_contains "$ERR" "$1" "import $1=$2 names the variable"
}

reject_row() {  # FIELD VALUE
  local field=$1 value=$2 what="$1=$(json "$2")"
  case $field in
    ansible.*) ansible_reject "${field#ansible.}" "$value" ;;
    extra_var)
      xft playbook run "$XFT_SOURCE_DIR/playbooks/setup_hosts.yaml" --skip packages -e "$value"
      ((RC != 0)) || fail "$what accepted"
      [[ $(wc -l <<<"$ERR") -eq 1 ]] || fail "$what: expected one error line, got:
$ERR" ;;
    CCL_ALLREDUCE)
      # Refused on the control node before any rank starts or any line echoes it.
      CCL_ALLREDUCE=$value xinv bench allreduce -b 8 -e 8 -n 1
      expect_rejected "CCL_ALLREDUCE" "bench allreduce with $what"
      CCL_ALLREDUCE=$value xinv run qwen --fake-model qwen2.5-0.5b --prompt hi --max-new-tokens 1
      expect_rejected "CCL_ALLREDUCE" "run qwen with $what" ;;
    sync_dest)
      mkdir -p "$TEST_TMP/tree" && echo data >"$TEST_TMP/tree/f"
      xft sync "$TEST_TMP/tree" --dest "$value"
      ((RC != 0)) || fail "$what accepted"
      assert_contains "$ERR" "--dest" "$what: the error names --dest" ;;
    *)
      write_inventory "$field" "$value"
      xinv inventory validate
      expect_rejected "$field" "validate $what"
      xinv setup hosts --check --skip packages
      expect_rejected "$field" "setup hosts --check $what"
      xinv launch --dry-run -- true
      expect_rejected "$field" "launch --dry-run $what" ;;
  esac
  no_markers "$what"
}

# --- literal rows -------------------------------------------------------------
literal_shared() {  # VALUE: the directory and the shared-path check carry it
  local value=$1 h
  write_inventory shared "$value"
  xinv setup hosts --accept-new-host-keys --skip packages
  assert_eq 0 "$RC" "setup hosts with shared=$value; out: $OUT; err: $ERR"
  for h in "${H[@]}"; do
    host_run "$h" test -d "$value" || fail "$h: no directory named exactly $value"
  done
}

literal_key() {  # VALUE: a key path with a space logs in (libssh) and launches (mpirun's ssh)
  local value="$TEST_TMP/${1#/tmp/}"
  mkdir -p "$(dirname "$value")"
  cp "$CLUSTER_KEY" "$value" && chmod 600 "$value"
  write_inventory key "$value"
  xinv setup hosts --check --accept-new-host-keys --skip packages
  assert_eq 0 "$RC" "setup hosts --check with key=$value; err: $ERR"
  xinv launch --timeout 120 -- hostname
  assert_eq 0 "$RC" "launch with key=$value; err: $ERR"
  assert_contains "$OUT" "h01" "rank on h01"
  assert_contains "$OUT" "h02" "rank on h02"
}

literal_provider() {  # VALUE: the ranks' FI_PROVIDER is exactly the value
  write_inventory fabric.provider "$1"
  xinv launch --dry-run -- true
  assert_eq 0 "$RC" "launch --dry-run with provider=$1; err: $ERR"
  assert_contains "$OUT" "FI_PROVIDER=$1" "provider on the mpirun line"
  [[ $1 == *verbs* ]] && return 0  # no RDMA device here: the line is all that can be checked
  xinv launch --timeout 120 -- sh -c 'printf "[%s]\n" "$FI_PROVIDER"'
  assert_eq 0 "$RC" "launch with provider=$1; err: $ERR"
  assert_contains "$OUT" "[$1]" "FI_PROVIDER seen by a rank"
}

literal_fabric_env() {  # VALUE: one argument of mpirun's -x, the ranks' XFT_HOSTILE exactly
  write_inventory fabric.env "$1"
  xinv launch --dry-run -- true
  assert_eq 0 "$RC" "launch --dry-run with fabric.env=$1; err: $ERR"
  xinv launch --timeout 120 -- sh -c 'printf "[%s]\n" "$XFT_HOSTILE"'
  assert_eq 0 "$RC" "launch with fabric.env=$1; err: $ERR"
  assert_contains "$OUT" "[$1]" "XFT_HOSTILE seen by a rank"
}

literal_nfs() {  # FIELD VALUE: accepted, and the planned /etc/exports line carries it
  write_inventory "$1" "$2"
  xinv inventory validate
  assert_eq 0 "$RC" "validate $1=$2; err: $ERR"
  xinv setup hosts --check --diff --accept-new-host-keys --skip packages
  ((RC != 4)) || fail "setup hosts --check with $1=$2: unreachable; err: $ERR"
  local expected=$2
  [[ $1 == nfs.export ]] && expected=${2// /\\040}
  assert_contains "$OUT" "$expected" "the exports line with $1=$2"
}

# NAME=VALUE bound into the shipped playbook's marker command: the shell gets the
# value as one file name (these values hold a '/', so the file cannot be made
# and the task names exactly that path), never as code.
literal_extra_var() {
  write_inventory shared /mnt
  xinv playbook run "$XFT_SOURCE_DIR/playbooks/setup_hosts.yaml" --accept-new-host-keys --skip packages -e "$1"
  ((RC == 0 || RC == 2)) || fail "playbook run -e $1: exit $RC; err: $ERR"
  assert_contains "$OUT" "cannot create /mnt/.xftctl-shared-${1#*=}: Directory nonexistent" "the value as one file name"
}

literal_sync_dest() {  # VALUE: files land under exactly that path
  local h
  mkdir -p "$TEST_TMP/tree" && echo data >"$TEST_TMP/tree/f"
  write_inventory shared /mnt
  xinv sync "$TEST_TMP/tree" --dest "$1" --accept-new-host-keys
  assert_eq 0 "$RC" "sync --dest $1; err: $ERR"
  for h in "${H[@]}"; do
    assert_eq data "$(host_run "$h" cat "$1/f")" "synced file under $1 on $h"
  done
}

literal_row() {  # FIELD VALUE
  case $1 in
    shared) literal_shared "$2" ;;
    key) literal_key "$2" ;;
    fabric.provider) literal_provider "$2" ;;
    fabric.env) literal_fabric_env "$2" ;;
    nfs.*) literal_nfs "$1" "$2" ;;
    extra_var) literal_extra_var "$2" ;;
    sync_dest) literal_sync_dest "$2" ;;
    *) fail "values.tsv: no literal check for $1 in hostile_inputs.sh (add one)" ;;
  esac
  no_markers "$1=$(json "$2")"
}

while IFS=$'\t' read -r field expect raw; do
  [[ -z $field || $field == \#* ]] && continue
  # mpirun on the first host behind a bastion: a real /bin/sh reads those in
  # tests/unit/launcher/launch_through_test.cpp (these hosts have no bastion).
  [[ $field == first_host_arg || $field == first_host_env ]] && continue
  printf -v value '%b' "$raw"
  step "$expect $field $(json "$value")"
  case $expect in
    reject) reject_row "$field" "$value" ;;
    literal) literal_row "$field" "$value" ;;
    *) fail "values.tsv: bad EXPECT $expect" ;;
  esac
  checked=$((checked + 1))
done <"$CORPUS"

((checked > 50)) || fail "only $checked corpus rows were read"
echo "hostile_inputs: $checked values, no marker anywhere: ok"
