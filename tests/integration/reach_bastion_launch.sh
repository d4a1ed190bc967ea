#!/usr/bin/env bash
# Rank traffic never crosses the bastion: h02 and h03 drop every TCP packet
# from the control node (their firewall) and are reached through h01 (inventory
# jump:), so `xftctl launch` runs mpirun on h01, the first inventory host,
# through h01's SSH session; mpirun's own ssh and the ranks' traffic stay
# inside the cluster network, which the DROP counters show. The ranks run a
# copy of xftctl from /run, which every test host sees (in real clusters: the
# inventory's shared path, or a copy at the same path on every host).
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 3 --auth key
addr() { host_var "$1" ADDR; }
INV="$TEST_TMP/inventory.yaml"
export XDG_CACHE_HOME="$TEST_TMP/cache"
bin_dir=$(mktemp -d /run/xft-bastion-bin-XXXXXX)
remove_on_exit "$bin_dir"
cp "$XFTCTL" "$bin_dir/xftctl"

# The DROP rule's packet count in HOST's INPUT chain.
dropped() { host_run "$1" iptables -L INPUT -v -n -x | awk '$3 == "DROP" { print $1 }'; }

step "h02 and h03 accept no TCP from the control node; h01 is their bastion"
for h in h02 h03; do
  host_run "$h" iptables -A INPUT -p tcp -s "$CLUSTER_GATEWAY" -j DROP
done
{
  echo "defaults: {key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v'), ranks: 1}"
  echo "hosts:"
  echo "  - {name: h01, address: $(addr h01)}"
  for h in h02 h03; do echo "  - {name: $h, address: $(addr "$h"), jump: root@$(addr h01)}"; done
} >"$INV"
export CLUSTER_INVENTORY=$INV

step "setup hosts: passwordless SSH between the hosts, which mpirun on h01 uses"
xft setup hosts --accept-new-host-keys --skip packages
assert_eq 0 "$RC" "setup hosts through the bastion; out: $OUT; err: $ERR"

step "launch --dry-run --json says mpirun runs on h01, and why"
xft launch --cores-per-rank 1 --dry-run --json -- "$bin_dir/xftctl" rank-probe
assert_eq 0 "$RC" "dry run; err: $ERR"
assert_eq "{\"where\":\"first host\",\"host\":\"h01\",\"address\":\"$(addr h01)\",\"user\":\"root\",\"via\":[],\"reason\":\"h02 is reached through bastion root@$(addr h01): mpirun runs on h01 so rank traffic never crosses the bastion\"}" \
  "$(jq -c .launch_site <<<"$OUT")" "the launch site"
assert_eq "mpirun" "$(jq -r '.argv[0]' <<<"$OUT")" "h01's own mpirun"
assert_eq "/tmp/xftctl-launch.XXXXXXXX/mpirun-ssh" "$(jq -r '.ssh_agent.path' <<<"$OUT")" "the agent script's place on h01"

before_h02=$(dropped h02)
before_h03=$(dropped h03)
step "launch over 3 hosts: mpirun on h01, output streamed back"
xft launch --cores-per-rank 1 --timeout 120 -- hostname
assert_eq 0 "$RC" "launch through the bastion; out: $OUT; err: $ERR"
assert_eq $'[0 h01] h01\n[1 h02] h02\n[2 h03] h03' "$(grep -h '^\[' <<<"$OUT"$'\n'"$ERR" | sort)" "every rank answered from its host"
assert_contains "$ERR" "launch: h02 is reached through bastion root@$(addr h01): mpirun runs on h01" "the launch says where mpirun runs"
assert_eq "$before_h02" "$(dropped h02)" "no packet from the control node to h02 directly"
assert_eq "$before_h03" "$(dropped h03)" "no packet from the control node to h03 directly"

step "a failing rank behind the bastion is named"
xft launch --cores-per-rank 1 --timeout 120 -- sh -c 'test "$OMPI_COMM_WORLD_RANK" != 2 || { echo rank two broke >&2; exit 3; }'
assert_eq 2 "$RC" "a failed rank; out: $OUT; err: $ERR"
assert_contains "$ERR" "rank 2 (h03, $(addr h03)) exited with code 3" "the failed rank named"
assert_eq "$before_h03" "$(dropped h03)" "no packet from the control node to h03 directly (failure)"
step "run qwen and bench allreduce across the 3 hosts through h01 (ranks run the binary xftctl runs as: the copy in /run)"
RC=0
"$bin_dir/xftctl" -i "$INV" run qwen --cores-per-rank 1 --fake-model qwen2.5-0.5b --bench --input-tokens 4 \
  --output-tokens 2 --iters 1 --warmup 0 >"$TEST_TMP/qwen" 2>&1 || RC=$?
assert_eq 0 "$RC" "run qwen through the bastion: $(cat "$TEST_TMP/qwen")"
assert_contains "$(cat "$TEST_TMP/qwen")" "ranks        3" "three ranks ran"
assert_eq "$before_h02" "$(dropped h02)" "no packet from the control node to h02 directly (run qwen)"
assert_eq "$before_h03" "$(dropped h03)" "no packet from the control node to h03 directly (run qwen)"

RC=0
"$bin_dir/xftctl" -i "$INV" bench allreduce --cores-per-rank 1 -b 8 -e 4K -n 3 -w 1 >"$TEST_TMP/bench" 2>&1 || RC=$?
assert_eq 0 "$RC" "bench allreduce through the bastion: $(cat "$TEST_TMP/bench")"
assert_eq "$before_h02" "$(dropped h02)" "no packet from the control node to h02 directly (bench allreduce)"
assert_eq "$before_h03" "$(dropped h03)" "no packet from the control node to h03 directly (bench allreduce)"

step "run qwen --serve says where the server listens and how to reach it"
xft run qwen --cores-per-rank 1 --fake-model qwen2.5-0.5b --serve 8000 --dry-run
assert_eq 0 "$RC" "serve dry run; err: $ERR"
assert_contains "$ERR" "run qwen: the server listens on 127.0.0.1:8000 of h01 ($(addr h01)), behind the bastion; reach it from here with: ssh -N -L 8000:127.0.0.1:8000 root@$(addr h01)" "the forward command"
echo "PASS: reach_bastion_launch"
