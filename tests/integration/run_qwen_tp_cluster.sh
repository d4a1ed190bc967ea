#!/usr/bin/env bash
# `xftctl run qwen` across 4 namespace test hosts through the inventory (real
# sshd, mpirun over TCP): the golden test models' reference logits and greedy
# continuation on 1-4 hosts, hierarchical with 2 hosts x 2 ranks, and a rank
# killed mid-generation ends the run on every host with its name.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
source "$XFT_SOURCE_DIR/tests/integration/run_qwen_tp_lib.sh"

step "4 test hosts through the inventory"
start_cluster 4 --auth key
kh=$TEST_TMP/known_hosts
"$X" -i "$CLUSTER_INVENTORY" ping --accept-new-host-keys --known-hosts "$kh" >/dev/null
INV=(-i "$CLUSTER_INVENTORY")
net=(--known-hosts "$kh" --cores-per-rank 1 --ranks-per-host 1)
check_ranks "1 host" qwen2-tiny-s7 "${net[@]}" --hosts h01
for name in "${models[@]}"; do
  check_ranks "2 hosts" "$name" "${net[@]}" --hosts h01,h02 --comm mpi
  check_ranks "3 hosts (uneven heads)" "$name" "${net[@]}" --hosts "h0[1-3]" --comm mpi
  check_ranks "4 hosts" "$name" "${net[@]}" --comm mpi
done

step "hierarchical: 2 hosts x 2 ranks"
hier=(--known-hosts "$kh" --cores-per-rank 1 --ranks-per-host 2 --hosts h01,h02 --comm hier)
"$X" "${INV[@]}" run qwen "${hier[@]}" --fake-model qwen2.5-0.5b --bench --input-tokens 4 --output-tokens 2 --iters 1 --warmup 0 \
  >"$TEST_TMP/hier" 2>&1 || fail "hier bench: $(cat "$TEST_TMP/hier")"
assert_contains "$(cat "$TEST_TMP/hier")" "ranks        4, allreduce hier" "hier backend in use"
check_ranks "2 hosts x 2 ranks (hier)" qwen3-tiny-s11 "${hier[@]}"

step "a rank killed mid-generation ends the run everywhere, named"
# The clock starts when rank 2's process dies, not when the run starts: how
# long the hosts take to start and load the model depends on what else runs.
# The test hosts share this machine's PID namespace, so rank 2 is the rank
# worker whose environment says OMPI_COMM_WORLD_RANK=2.
rank_pid() {
  local pid
  for pid in $(pgrep -f "$shared/xftctl .*--rank-worker" || true); do
    grep -qx "OMPI_COMM_WORLD_RANK=$1" < <(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) && { echo "$pid"; return 0; }
  done
  return 1
}
gone() { [[ ! -e /proc/$1 ]] || [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) == Z ]]; }
"$X" "${INV[@]}" run qwen "${net[@]}" --model "$shared/qwen2-tiny-s7" --raw --greedy --max-new-tokens 100000 \
  --max-context 4096 --prompt "hello" --fail-rank 2 --fail-at-token 20 >/dev/null 2>"$TEST_TMP/kill" &
run=$!
victim="" died=""
while kill -0 "$run" 2>/dev/null; do
  if [[ -z $victim ]]; then
    victim=$(rank_pid 2) || victim=""
  elif gone "$victim"; then
    died=$EPOCHREALTIME
    break
  fi
  sleep 0.05
done
rc=0
wait "$run" || rc=$?
ended=$EPOCHREALTIME
[[ -n $died ]] || fail "rank 2 was never seen to die (pid '${victim}'): $(cat "$TEST_TMP/kill")"
elapsed=$(awk -v a="$died" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
assert_eq 2 "$rc" "exit code after a rank died"
assert_contains "$(cat "$TEST_TMP/kill")" "xftctl: rank 2 (h03, $HOST_H03_ADDR) was killed by signal 9" "the dead rank is named"
awk -v e="$elapsed" 'BEGIN { exit !(e <= 10) }' || fail "the run took ${elapsed}s to end after rank 2 died (limit 10 s)"
sleep 1
left=$(pgrep -f "$shared/xftctl" || true)
assert_eq "" "$left" "no rank process left on any host"
echo "ok: killed rank named, run ended ${elapsed}s after it died, nothing left"
