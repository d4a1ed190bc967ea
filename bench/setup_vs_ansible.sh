#!/usr/bin/env bash
# `xftctl setup hosts` against the equivalent Ansible playbook
# (bench/ansible/setup.yml) on the same number of fresh test hosts that start
# from the same state: password-only root logins, no keys, empty known_hosts.
# Each run is timed on its own fresh cluster, then the end state is checked the
# same way (every host reaches every other by name and by address with the
# real OpenSSH client, BatchMode, StrictHostKeyChecking=yes), so the ratio
# compares equal work. Prints figures; a benchmark, never a test.
#
#   bench/setup_vs_ansible.sh [HOSTS=8]
#
# Env: XFTCTL (default build/cli/xftctl), XFT_SETUP_ARGS (extra flags for
# `setup hosts`, default "--skip packages --accept-new-host-keys").
# Needs root (the test cluster). Installs Debian's ansible and sshpass with
# apt when missing. Ansible gets its own config, known_hosts, control sockets
# and temp dirs under a temp dir: ~/.ssh, ~/.ansible and /etc/ansible are
# never touched. Its settings are the fast ones (pipelining, no fact
# gathering, ControlPersist, forks = HOSTS), so the comparison is fair to it.
# Target (issue 3): xftctl at least 10x faster on 8 hosts.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
hosts=${1:-8}
xftctl=${XFTCTL:-$here/build/cli/xftctl}
setup_args=${XFT_SETUP_ARGS:---skip packages --accept-new-host-keys}
cluster_sh="$here/tests/cluster/cluster.sh"

[[ $EUID -eq 0 ]] || { echo "setup_vs_ansible.sh: the test cluster needs root" >&2; exit 1; }
if ! command -v ansible-playbook >/dev/null || ! command -v sshpass >/dev/null; then
  echo "== installing ansible and sshpass (apt)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ansible sshpass >/dev/null
fi

work=$(mktemp -d /tmp/xft-bench-setup.XXXXXX)
cluster_dir=""
stop_cluster() {
  [[ -n $cluster_dir ]] && bash "$cluster_sh" stop "$cluster_dir" >/dev/null 2>&1 || true
  cluster_dir=""
}
trap 'rc=$?; stop_cluster; rm -rf "$work"; exit $rc' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

XFT_TEST_PASSWORD="xft-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')"
export XFT_TEST_PASSWORD

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# start_fresh_cluster NAME: a new cluster of $hosts hosts in $work/NAME.
start_fresh_cluster() {
  cluster_dir="$work/$1"
  bash "$cluster_sh" start "$cluster_dir" -n "$hosts" --auth password --share-all --private /etc/xftctl --owner $$ >/dev/null
  # shellcheck source=/dev/null
  source "$cluster_dir/cluster.env"
}

host_addr() {
  local name=${1^^}
  name="HOST_${name//[^A-Z0-9]/_}_ADDR"
  echo "${!name}"
}

# Every host to every other host, by name and by address; prints failures,
# returns non-zero when any.
verify_end_state() {  # LABEL
  local from to failures="$work/failures"
  : >"$failures"
  for from in $CLUSTER_HOSTS; do
    (
      for to in $CLUSTER_HOSTS; do
        [[ $from == "$to" ]] && continue
        for target in "$to" "$(host_addr "$to")"; do
          bash "$cluster_sh" run "$cluster_dir" "$from" \
            ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 "root@$target" true \
            </dev/null >/dev/null 2>&1 || echo "$from -> $target" >>"$failures"
        done
      done
    ) &
  done
  wait
  if [[ -s $failures ]]; then
    echo "$1: end state NOT reached; failing ssh logins:" >&2
    sed 's/^/  /' "$failures" >&2
    return 1
  fi
  echo "$1: end state verified ($(($(wc -w <<<"$CLUSTER_HOSTS") * ($(wc -w <<<"$CLUSTER_HOSTS") - 1) * 2)) ssh logins by name and address)"
}

xftctl_seconds=""
if [[ -x $xftctl ]] && "$xftctl" --help 2>/dev/null | grep -q "^  setup "; then
  echo "== xftctl setup hosts on $hosts fresh hosts"
  start_fresh_cluster xftctl
  mkdir -p "$work/home-xftctl"
  started=$(now)
  # shellcheck disable=SC2086
  HOME="$work/home-xftctl" "$xftctl" -i "$CLUSTER_INVENTORY" setup hosts $setup_args >"$work/xftctl.log" 2>&1 ||
    { echo "xftctl setup hosts failed; its output:" >&2; cat "$work/xftctl.log" >&2; exit 1; }
  xftctl_seconds=$(elapsed "$started" "$(now)")
  verify_end_state "xftctl setup hosts"
  stop_cluster
else
  echo "== xftctl setup hosts: not available in $xftctl (skipped)"
fi

echo "== ansible-playbook on $hosts fresh hosts"
start_fresh_cluster ansible
ansible_dir="$work/ansible"
mkdir -p "$ansible_dir/cp" "$ansible_dir/tmp" "$ansible_dir/home"
# The control node's key, authorized by the playbook as xftctl authorizes its own.
ssh-keygen -q -t ed25519 -N '' -C xftctl-bench-control -f "$ansible_dir/control_key"
# Host keys the control connections will meet, trusted up front as xftctl's
# --accept-new-host-keys does on first contact (nothing goes unchecked).
host_lines="" known=""
for h in $CLUSTER_HOSTS; do
  host_lines+="$h ansible_host=$(host_addr "$h") host_key_file=$cluster_dir/hosts/$h/ssh_host_ed25519_key.pub"$'\n'
  known+="$(host_addr "$h") $(cut -d' ' -f1,2 "$cluster_dir/hosts/$h/ssh_host_ed25519_key.pub")"$'\n'
done
printf '%s' "$known" >"$ansible_dir/known_hosts"
awk -v lines="${host_lines%$'\n'}" -v key="$ansible_dir/control_key.pub" \
  '{ gsub(/@HOST_LINES@/, lines); gsub(/@CONTROL_KEY@/, key); print }' \
  "$here/bench/ansible/inventory.ini.in" >"$ansible_dir/inventory.ini"
cat >"$ansible_dir/ansible.cfg" <<EOF
[defaults]
inventory = $ansible_dir/inventory.ini
forks = $hosts
host_key_checking = True
gathering = explicit
local_tmp = $ansible_dir/tmp
remote_tmp = /tmp/.ansible-bench
retry_files_enabled = False
interpreter_python = /usr/bin/python3
[ssh_connection]
pipelining = True
control_path_dir = $ansible_dir/cp
ssh_args = -F /dev/null -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$ansible_dir/known_hosts -o StrictHostKeyChecking=yes
EOF
started=$(now)
ANSIBLE_CONFIG="$ansible_dir/ansible.cfg" HOME="$ansible_dir/home" ANSIBLE_HOME="$ansible_dir/home/.ansible" \
  ansible-playbook "$here/bench/ansible/setup.yml" >"$work/ansible.log" 2>&1 ||
  { echo "ansible-playbook failed; its output:" >&2; cat "$work/ansible.log" >&2; exit 1; }
ansible_seconds=$(elapsed "$started" "$(now)")
verify_end_state "ansible-playbook"
# Close Ansible's persistent control connections before the hosts go away.
for socket in "$ansible_dir"/cp/*; do
  [[ -S $socket ]] && ssh -o ControlPath="$socket" -O exit dummy >/dev/null 2>&1 || true
done
stop_cluster

echo
if [[ -n $xftctl_seconds ]]; then
  awk -v x="$xftctl_seconds" -v a="$ansible_seconds" -v n="$hosts" 'BEGIN {
    printf "%d hosts   xftctl setup hosts: %.1f s   ansible-playbook: %.1f s   ratio %.1fx (target >= 10x)\n",
      n, x, a, (x > 0 ? a / x : 0) }'
else
  printf "%d hosts   ansible-playbook: %s s   (xftctl setup hosts not available: no ratio)\n" "$hosts" "$ansible_seconds"
fi
