#!/usr/bin/env bash
# xftctl launch: every rank reports where it runs (`xftctl rank-probe`: hostname
# and sched_getaffinity) and that must equal the plan from `xftctl topology`.
# Locally (2 ranks on this machine) and on a 4-host namespace test cluster
# (tests/cluster/cluster.sh, real sshd, mpirun over xftctl's ssh key and
# known_hosts). Also: a failing rank is named with its last stderr lines, a
# launch timeout stops every rank, and --dry-run prints the exact Open MPI 4.1
# command and the ssh agent script mpirun runs; --hostfile (the form setup hosts
# writes) picks hosts, their order and ranks; --comm-cores is ignored with a
# warning. On 2 of the hosts, an inventory
# whose key path (and a known_hosts path) has a space: the launch works, and a
# secret forwarded with `-x NAME` reaches the remote ranks while no process's
# command line on this machine (mpirun, ssh, orted, ranks: the test hosts share
# its PID namespace) ever holds it. Last, h02 gets EFA's libfabric (a copy under
# its own /opt/amazon/efa/lib64): --dry-run passes it in LD_LIBRARY_PATH to h02's
# rank, a libfabric program started as that rank loads that copy, and a launch
# with h01 (without it) is refused. All test hosts share this machine's CPUs, so
# plans use --cores-per-rank 1.
set -euo pipefail

XFTCTL=${XFTCTL:?set XFTCTL to the built xftctl}
SRC=${XFT_SOURCE_DIR:?set XFT_SOURCE_DIR}
CLUSTER=$SRC/tests/cluster/cluster.sh

work=$(mktemp -d /tmp/xft-launch-test-XXXXXX)
# Test hosts have their own /tmp, /root and /var/tmp, so ranks there run a copy
# of the binary from a path every host sees (the build tree may be under /tmp).
remote_dir=$(mktemp -d /run/xft-launch-bin-XXXXXX)
cp "$XFTCTL" "$remote_dir/xftctl"
RANK_XFTCTL=$remote_dir/xftctl
cleanup() {
  [[ -d $work/cluster ]] && bash "$CLUSTER" stop "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work" "$remote_dir"
}
trap cleanup EXIT
export XDG_CACHE_HOME=$work/cache  # the facts cache of this run only

failures=0
pass() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
expect_eq() {  # WHAT EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then pass "$1"; else
    fail "$1"
    diff <(echo "$2") <(echo "$3") >&2 || true
  fi
}
expect_contains() {  # WHAT NEEDLE HAYSTACK
  if [[ $3 == *"$2"* ]]; then pass "$1"; else fail "$1: missing [$2] in:"$'\n'"$3"; fi
}

# "RANK CPULIST" per rank from `xftctl topology --json` ("numactl -C <list> -m <node>").
planned_cpus() {
  "$XFTCTL" "$@" --json | grep -o '"numactl": "numactl -C [^ ]* ' | awk '{print NR - 1, $4}'
}
# "RANK HOST CPULIST" per rank from the rank-probe lines of a launch.
reported_cpus() {
  grep -o 'rank=[0-9]* local_rank=[0-9]* host=[^ ]* cpus=[^ ]*' |
    sed 's/rank=\([0-9]*\) local_rank=[0-9]* host=\([^ ]*\) cpus=\(.*\)/\1 \2 \3/' | sort -n
}

# --- local: 2 ranks on this machine -------------------------------------------
me=$(hostname)
plan=$(planned_cpus topology --local --ranks-per-host 2 --cores-per-rank 1)
out=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --timeout 60 -- "$XFTCTL" rank-probe)
expect_eq "local: each rank's affinity equals the plan" \
  "$(echo "$plan" | awk -v h="$me" '{print $1, h, $2}')" "$(echo "$out" | reported_cpus)"
expect_contains "local: rank lines are tagged with rank and host" "[1 $me] rank=1 local_rank=1 host=$me" "$out"
expect_eq "local: OMP_NUM_THREADS is the rank's core count (every bound core computes)" 2 "$(grep -c ' cpus=[0-9]* omp=1$' <<<"$out")"

dry=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --dry-run -- "$XFTCTL" rank-probe)
root_flag=$([[ $(id -u) == 0 ]] && echo " --allow-run-as-root" || true)
cpu0=$(echo "$plan" | awk 'NR == 1 {print $2}')
cpu1=$(echo "$plan" | awk 'NR == 2 {print $2}')
expect_eq "local: --dry-run prints the exact mpirun command" \
  "mpirun$root_flag --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -np 1 -H localhost:2 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=shm numactl -C $cpu0 -m 0 $XFTCTL rank-probe : -np 1 -H localhost:2 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=shm numactl -C $cpu1 -m 0 $XFTCTL rank-probe" \
  "$dry"

# Scripts carried over from CCL_WORKER_COUNT still run: the flag changes nothing and says why.
set +e
comm_out=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --comm-cores 1 --dry-run -- "$XFTCTL" rank-probe 2>"$work/comm.err")
rc=$?
set -e
expect_eq "local: --comm-cores is accepted" 0 "$rc"
expect_eq "local: --comm-cores says it is ignored, in one line" \
  "xftctl: warning: --comm-cores is ignored: xftctl runs no communication threads (allreduce runs on the compute threads), so every core computes" \
  "$(cat "$work/comm.err")"
expect_eq "local: --comm-cores leaves the mpirun command as it was" "$dry" "$comm_out"

json=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --dry-run --json -- "$XFTCTL" rank-probe)
expect_eq "local: --dry-run --json argv is the printed command, token by token" \
  "$(echo "$dry" | tr ' ' '\n')" "$(jq -r '.argv[]' <<<"$json")"
expect_eq "local: --dry-run --json ranks, no agent, env names" \
  '{"ranks":2,"ssh_agent":null,"env":["FI_PROVIDER"],"forwarded_env":[]}' \
  "$(jq -c '{ranks, ssh_agent, env, forwarded_env}' <<<"$json")"
err=$("$XFTCTL" launch --local 2 --json -- true 2>&1 || true)
expect_eq "local: --json without --dry-run is a usage error" \
  "xftctl: launch: --json requires --dry-run (see \`xftctl launch --help\`)" "$err"

# Intel MPI's mpirun first on PATH: refused before it is handed Open MPI flags.
mkdir -p "$work/intel-bin"
printf '#!/bin/sh\necho "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)"\necho "Copyright 2003-2023, Intel Corporation."\n' >"$work/intel-bin/mpirun"
chmod +x "$work/intel-bin/mpirun"
set +e
err=$(PATH="$work/intel-bin:$PATH" "$XFTCTL" launch --local 2 --dry-run -- true 2>&1)
rc=$?
set -e
expect_eq "local: Intel MPI's mpirun exits 1" 1 "$rc"
expect_eq "local: Intel MPI's mpirun is refused with how to reach Open MPI" \
  "xftctl: mpirun is Intel MPI (Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)); xftctl builds Open MPI command lines: set XFTCTL_MPIRUN to Open MPI's mpirun (/usr/bin/mpirun.openmpi on Debian/Ubuntu, /usr/lib64/openmpi/bin/mpirun on RHEL/Alibaba Cloud Linux, /opt/amazon/openmpi/bin/mpirun with EFA)" \
  "$err"

start=$SECONDS
set +e
err=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --timeout 60 -- sh -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then echo "loading shard 1" >&2; echo "shard 1 is corrupt" >&2; exit 7; fi; sleep 50' \
  2>&1 >/dev/null)
rc=$?
set -e
expect_eq "local: a failing rank makes launch exit 2" 2 "$rc"
expect_contains "local: the failing rank is named" \
  "xftctl: rank 1 ($me, localhost) exited with code 7; mpirun stopped every other rank" "$err"
expect_contains "local: its last stderr lines are shown" \
  $'xftctl: last stderr of rank 1:\nxftctl:   loading shard 1\nxftctl:   shard 1 is corrupt' "$err"
((SECONDS - start < 40)) && pass "local: the other rank did not keep the launch waiting" ||
  fail "local: failing launch took $((SECONDS - start)) s"

start=$SECONDS
set +e
err=$("$XFTCTL" launch --local 2 --cores-per-rank 1 --timeout 3 -- sh -c "echo \$\$ >> $work/sleepers; exec sleep 300" 2>&1)
rc=$?
set -e
expect_eq "local: a timed-out launch exits 2" 2 "$rc"
expect_contains "local: timeout message" "xftctl: launch timed out: every rank was stopped" "$err"
((SECONDS - start < 20)) && pass "local: timeout honoured" || fail "local: timeout took $((SECONDS - start)) s"
left=0
while read -r pid; do
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
  [[ -n $state && $state != Z ]] && left=$((left + 1))
done <"$work/sleepers"
expect_eq "local: no rank survives the timeout" 0 "$left"

# --- the test cluster: 4 hosts, key logins ------------------------------------
export XFT_TEST_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
bash "$CLUSTER" start "$work/cluster" -n 4 --auth key >/dev/null
# shellcheck source=/dev/null
source "$work/cluster/cluster.env"
inv=(-i "$CLUSTER_INVENTORY")
kh=$work/known_hosts
"$XFTCTL" "${inv[@]}" ping --accept-new-host-keys --known-hosts "$kh" >/dev/null

facts=$("$XFTCTL" "${inv[@]}" facts --known-hosts "$kh" --json)
expect_eq "cluster: facts of 4 hosts probed over SSH" 4 "$(echo "$facts" | grep -c '"from_cache": false')"
[[ -f $XDG_CACHE_HOME/xftctl/facts/h03.json ]] && pass "cluster: facts cached per host" || fail "no facts cache file"
local_facts=$("$XFTCTL" facts --local --json)
expect_eq "cluster: remote facts (via the probe script) equal this machine's CPU layout" \
  "$(echo "$local_facts" | grep -o '"cores": [0-9]*')" "$(echo "$facts" | grep -o '"cores": [0-9]*' | sort -u)"
cached=$("$XFTCTL" "${inv[@]}" facts --known-hosts "$kh")
expect_eq "cluster: second facts run uses the cache" 4 "$(echo "$cached" | grep -c '(cached; --refresh to probe again)')"

topo=(--ranks-per-host 2 --cores-per-rank 1 --known-hosts "$kh")
map=$("$XFTCTL" "${inv[@]}" topology "${topo[@]}")
expect_contains "cluster: rank map" "0  | h01       | $HOST_H01_ADDR | 0-1" "$map"
expect_contains "cluster: rank map, last host" "3  | h04       | $HOST_H04_ADDR | 6-7" "$map"
expect_contains "cluster: transport matrix row" "0  -            shm          tcp;ofi_rxm" "$map"

plan=$(planned_cpus "${inv[@]}" topology "${topo[@]}")
# TMPDIR fixes where the agent's private directory goes (its name is mkdtemp's).
dry=$(TMPDIR=/tmp "$XFTCTL" "${inv[@]}" launch "${topo[@]}" --dry-run -- "$RANK_XFTCTL" rank-probe)
agent=/tmp/xftctl-launch.XXXXXX/mpirun-ssh
expected="mpirun$root_flag --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include $CLUSTER_SUBNET --mca plm_rsh_agent '/bin/sh $agent' --mca plm_rsh_no_tree_spawn 1"
rank=0
for h in h01 h02 h03 h04; do
  addr_var=HOST_${h^^}_ADDR
  for local_rank in 0 1; do
    cpus=$(echo "$plan" | awk -v r=$rank '$1 == r {print $2}')
    ((rank > 0)) && expected+=" :"
    expected+=" -np 1 -H ${!addr_var}:2 -x OMP_NUM_THREADS=1 -x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth0 numactl -C $cpus -m 0 $RANK_XFTCTL rank-probe"
    rank=$((rank + 1))
  done
done
# Token by token, so a difference points at the token.
expect_eq "cluster: --dry-run tokens (Open MPI 4.1)" "$(echo "$expected" | tr ' ' '\n')" "$(echo "$dry" | head -n 1 | tr ' ' '\n')"
expect_eq "cluster: --dry-run prints the ssh agent script" \
  "# $agent, mpirun's ssh (made for the launch in a private directory, mode 0700, removed after it):
#!/bin/sh
# mpirun's ssh for one xftctl launch; Open MPI runs it as: mpirun-ssh HOST COMMAND...
exec ssh -x -o BatchMode=yes -o StrictHostKeyChecking=yes -o 'UserKnownHostsFile=\"$kh\"' -o IdentitiesOnly=yes -i $CLUSTER_KEY -l root -p 22 -- \"\$@\"" \
  "$(echo "$dry" | tail -n +2)"

json=$(TMPDIR=/tmp "$XFTCTL" "${inv[@]}" launch "${topo[@]}" --dry-run --json -- "$RANK_XFTCTL" rank-probe)
expect_eq "cluster: --dry-run --json argv (the agent one token)" \
  "$(echo "$expected" | sed "s|'/bin/sh $agent'|/bin/sh@$agent|; s|'FI_PROVIDER=tcp;ofi_rxm'|FI_PROVIDER=tcp;ofi_rxm|g" | tr ' ' '\n' | sed '/^$/d; s|@| |')" \
  "$(jq -r '.argv[]' <<<"$json")"
expect_eq "cluster: --dry-run --json agent path and script" \
  "$agent|$(echo "$dry" | tail -n +3)" "$(jq -r '"\(.ssh_agent.path)|\(.ssh_agent.script)"' <<<"$json" | sed '$d')"

# psm3 with the inventory's fabric.env: the OFI MTL on psm3, every rank carries the values.
psm3_inv=$work/psm3.yaml
sed -e 's/provider: "tcp;ofi_rxm"/provider: psm3/' \
  -e 's|^    iface: eth0|    iface: eth0\n    env: {PSM3_IDENTIFY: 1, FI_PROVIDER_PATH: /opt/psm3/lib}|' \
  "$CLUSTER_INVENTORY" >"$psm3_inv"
dry=$(TMPDIR=/tmp "$XFTCTL" -i "$psm3_inv" launch "${topo[@]}" -x PSM3_IDENTIFY=2 --dry-run -- "$RANK_XFTCTL" rank-probe)
cpus=$(echo "$plan" | awk '$1 == 0 {print $2}')
expect_eq "cluster: psm3 --dry-run uses the OFI MTL and carries fabric.env (first rank)" \
  "mpirun$root_flag --bind-to none --tag-output --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include psm3 --mca oob_tcp_if_include $CLUSTER_SUBNET --mca plm_rsh_agent '/bin/sh $agent' --mca plm_rsh_no_tree_spawn 1 -np 1 -H $HOST_H01_ADDR:2 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=psm3 -x PSM3_IDENTIFY=2 -x FI_PROVIDER_PATH=/opt/psm3/lib numactl -C $cpus -m 0 $RANK_XFTCTL rank-probe" \
  "$(echo "$dry" | head -n 1 | sed 's/ : .*//')"

out=$("$XFTCTL" "${inv[@]}" launch "${topo[@]}" --timeout 120 -- "$RANK_XFTCTL" rank-probe)
expected_ranks=$(echo "$plan" | awk '{h = sprintf("h%02d", int($1 / 2) + 1); print $1, h, $2}')
expect_eq "cluster: 8 ranks on 4 hosts, each on its host with the planned CPUs" \
  "$expected_ranks" "$(echo "$out" | reported_cpus)"

# --hostfile: a file in the form setup hosts writes to /etc/xftctl/hostfile, hand
# edited: its hosts in its order are the rank order, slots=N each host's ranks.
cat >"$work/hostfile" <<'EOF'
# MPI hostfile written by xftctl setup hosts (one line per inventory host).
h04 slots=1

h02 slots=2 max_slots=4
EOF
hf=(--hostfile "$work/hostfile" --cores-per-rank 1 --known-hosts "$kh")
dry=$(TMPDIR=/tmp "$XFTCTL" "${inv[@]}" launch "${hf[@]}" --dry-run -- "$RANK_XFTCTL" rank-probe)
expect_eq "cluster: --hostfile selects its hosts in its order with its slots (-np and -H per rank)" \
  "-np 1 -H $HOST_H04_ADDR:1
-np 1 -H $HOST_H02_ADDR:2
-np 1 -H $HOST_H02_ADDR:2" "$(echo "$dry" | head -n 1 | grep -oE -- '-np [0-9]+ -H [^ ]+')"
hf_plan=$(planned_cpus "${inv[@]}" topology "${hf[@]}")
out=$("$XFTCTL" "${inv[@]}" launch "${hf[@]}" --timeout 120 -- "$RANK_XFTCTL" rank-probe)
expect_eq "cluster: --hostfile ranks run on h04 then h02, with the planned CPUs" \
  "$(echo "$hf_plan" | awk '{print $1, ($1 == 0 ? "h04" : "h02"), $2}')" "$(echo "$out" | reported_cpus)"
set +e
err=$("$XFTCTL" "${inv[@]}" launch "${hf[@]}" --hosts h01 --dry-run -- true 2>&1)
rc=$?
set -e
expect_eq "cluster: --hostfile with --hosts is a usage error (exit 5)" 5 "$rc"
expect_eq "cluster: --hostfile with --hosts says to give one" \
  "xftctl: --hostfile and --hosts both select hosts: give one of them (the hostfile's hosts, in its order, or an inventory pattern)" \
  "$err"
printf 'h01 slots=1\nh05 slots=1\n' >"$work/bad-hostfile"
set +e
err=$("$XFTCTL" "${inv[@]}" launch --hostfile "$work/bad-hostfile" --known-hosts "$kh" --dry-run -- true 2>&1)
rc=$?
set -e
expect_eq "cluster: a hostfile host not in the inventory exits 1" 1 "$rc"
expect_eq "cluster: a hostfile host not in the inventory is named with file:line" \
  "xftctl: $work/bad-hostfile:2:1: host: \`h05\` is not a host of $CLUSTER_INVENTORY (did you mean \`h01\`? or add it there)" \
  "$err"

set +e
err=$("$XFTCTL" "${inv[@]}" launch "${topo[@]}" --timeout 120 -- sh -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 5 ]; then echo "rank five: out of memory" >&2; exit 9; fi; sleep 60' 2>&1 >/dev/null)
rc=$?
set -e
expect_eq "cluster: a failing remote rank makes launch exit 2" 2 "$rc"
expect_contains "cluster: the failing host and rank are named" \
  "xftctl: rank 5 (h03, $HOST_H03_ADDR) exited with code 9; mpirun stopped every other rank" "$err"
expect_contains "cluster: with its stderr" $'xftctl: last stderr of rank 5:\nxftctl:   rank five: out of memory' "$err"

# --- 2 hosts, a key path and a known_hosts path with a space -------------------
mkdir -p "$work/key dir" "$work/kh dir" "$work/agent-tmp"
cp "$CLUSTER_KEY" "$work/key dir/id_ed25519"
cp "$kh" "$work/kh dir/known_hosts"
spaced_inv=$work/spaced.yaml
awk -v key="$work/key dir/id_ed25519" '/^  key: / {print "  key: \"" key "\""; next} {print}' \
  "$CLUSTER_INVENTORY" >"$spaced_inv"
grep -q 'key dir' "$spaced_inv" || fail "spaced: the inventory names the copied key"
spaced=(-i "$spaced_inv" launch --hosts h01,h02 --ranks-per-host 1 --cores-per-rank 1
  --known-hosts "$work/kh dir/known_hosts")

dry=$(TMPDIR=/tmp XFT_LAUNCH_SECRET=never-printed "$XFTCTL" "${spaced[@]}" -x XFT_LAUNCH_SECRET --dry-run -- true)
expect_contains "spaced: --dry-run forwards the secret by name only" \
  "-x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth0 -x XFT_LAUNCH_SECRET numactl" "$dry"
[[ $dry != *never-printed* ]] && pass "spaced: --dry-run never shows the secret's value" ||
  fail "spaced: the secret's value is in the --dry-run output"
json=$(TMPDIR=/tmp XFT_LAUNCH_SECRET=never-printed "$XFTCTL" "${spaced[@]}" -x XFT_LAUNCH_SECRET --dry-run --json -- true)
expect_eq "spaced: --dry-run --json names the forwarded secret" '["XFT_LAUNCH_SECRET"]' "$(jq -c .forwarded_env <<<"$json")"
[[ $json != *never-printed* ]] && pass "spaced: --dry-run --json never shows the secret's value" ||
  fail "spaced: the secret's value is in the --dry-run --json output"
expect_eq "spaced: the agent script quotes each path as one argument" \
  "exec ssh -x -o BatchMode=yes -o StrictHostKeyChecking=yes -o 'UserKnownHostsFile=\"$work/kh dir/known_hosts\"' -o IdentitiesOnly=yes -i '$work/key dir/id_ed25519' -l root -p 22 -- \"\$@\"" \
  "$(echo "$dry" | tail -n 1)"

# The secret is read from a file by grep, so no command line of ours holds it either.
secret="xft-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$secret" >"$work/secret"
TMPDIR=$work/agent-tmp XFT_LAUNCH_SECRET=$secret "$XFTCTL" "${spaced[@]}" -x XFT_LAUNCH_SECRET --timeout 120 \
  -- sh -c 'printf "%s secret=%s\n" "$(hostname)" "$XFT_LAUNCH_SECRET"; sleep 4' >"$work/spaced.out" 2>&1 &
launch_pid=$!
saw_ssh=0 leaks=0 agent_mode= mode=
# "-i", then the whole key path as the next argument, in some ssh's argv.
ssh_has_spaced_key() {  # CMDLINE_FILE
  local prev= arg
  while IFS= read -r -d '' arg; do
    [[ $prev == -i && $arg == "$work/key dir/id_ed25519" ]] && return 0
    prev=$arg
  done <"$1"
  return 1
}
while kill -0 "$launch_pid" 2>/dev/null; do
  for f in $(grep -laF IdentitiesOnly=yes /proc/[0-9]*/cmdline 2>/dev/null); do
    ssh_has_spaced_key "$f" 2>/dev/null && saw_ssh=1
  done
  leaks=$((leaks + $({ grep -laFf "$work/secret" /proc/[0-9]*/cmdline 2>/dev/null || true; } | wc -l)))
  for a in "$work"/agent-tmp/xftctl-launch.*/mpirun-ssh; do
    # The launch may remove it between the test and stat: keep the last mode read.
    [[ -f $a ]] && mode=$(stat -c '%a' "$(dirname "$a")" "$a" 2>/dev/null | tr '\n' ' ') && agent_mode=$mode
  done
  sleep 0.2
done
rc=0
wait "$launch_pid" || rc=$?
expect_eq "spaced: launch with a key path that has a space exits 0" 0 "$rc"
expect_eq "spaced: the secret reached both remote ranks" \
  "[0 h01] h01 secret=$secret
[1 h02] h02 secret=$secret" "$(grep ' secret=' "$work/spaced.out" | sort)"
expect_eq "spaced: mpirun's ssh ran with the key path as one argument" 1 "$saw_ssh"
expect_eq "spaced: no command line held the secret during the launch" 0 "$leaks"
expect_eq "spaced: the agent script and its directory were private (0700)" "700 700 " "$agent_mode"
expect_eq "spaced: the agent's directory is gone after the launch" "" "$(ls -A "$work/agent-tmp")"

# --- EFA's libfabric on h02 ------------------------------------------------------
# Last, since h02's facts change: a copy of this machine's libfabric.so.1 under
# a tmpfs over h02's /opt, seen by its mount namespace (its SSH sessions and
# ranks) alone.
system_libfabric=$(ldconfig -p | awk '$1 == "libfabric.so.1" && !found { print $NF; found = 1 }')
[[ -f $system_libfabric ]] || fail "no libfabric.so.1 in the loader's cache: $(ldconfig -p | grep fabric)"
efa_libfabric=/opt/amazon/efa/lib64/libfabric.so.1
bash "$CLUSTER" run "$work/cluster" h02 sh -c \
  "mount -t tmpfs xft-efa /opt && mkdir -p ${efa_libfabric%/*} && cp '$system_libfabric' $efa_libfabric"
[[ ! -e $efa_libfabric ]] || fail "$efa_libfabric exists outside h02"
efa=(launch --hosts h02 --ranks-per-host 1 --cores-per-rank 1 --known-hosts "$kh")
dry=$(TMPDIR=/tmp "$XFTCTL" "${inv[@]}" "${efa[@]}" --refresh --dry-run -- "$RANK_XFTCTL" rank-probe)
expect_contains "efa: --dry-run on h02 (facts refreshed) puts EFA's libfabric first for its rank" \
  "-np 1 -H $HOST_H02_ADDR:1 -x OMP_NUM_THREADS=1 -x LD_LIBRARY_PATH=${efa_libfabric%/*} -x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth0 numactl" \
  "$dry"
rc=0
err=$("$XFTCTL" "${inv[@]}" launch --hosts h01,h02 --ranks-per-host 1 --cores-per-rank 1 --known-hosts "$kh" \
  --dry-run -- true 2>&1) || rc=$?
expect_eq "efa: h01 without and h02 with EFA's libfabric in one launch exits 1" 1 "$rc"
expect_eq "efa: ... and says which host has which and the fix" \
  "xftctl: launch: hosts h01 and h02 differ in EFA's libfabric (none on h01, ${efa_libfabric%/*} on h02), so their ranks would load different libfabric builds: install aws-efa-installer on every host of the launch or on none, then --refresh the facts, or launch them separately" \
  "$err"
# xftctl opens libfabric.so.1 with dlopen when it needs it (fabric/libfabric.h),
# so the rank's environment decides which file that is: the dynamic loader
# says which one it initialises for a libfabric program started there.
maps_probe='LD_DEBUG=libs fi_info --version 2>&1 >/dev/null | grep -m1 -o "calling init: /[^ ]*libfabric[^ ]*" | cut -d" " -f3'
out=$("$XFTCTL" "${inv[@]}" "${efa[@]}" --timeout 120 -- sh -c "$maps_probe")
expect_eq "efa: the rank on h02 loaded EFA's libfabric" "[0 h02] $efa_libfabric" "$out"

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all launch checks passed"
