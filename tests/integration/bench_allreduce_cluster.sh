#!/usr/bin/env bash
# `xftctl bench allreduce` through the inventory on 4 namespace test hosts (real
# sshd, mpirun over TCP): every algorithm correct at awkward element counts with
# 2, 3 and 4 ranks on 2, 3 and 4 hosts, `hier` with 2 hosts x 2 ranks, one JSON
# record per (algorithm, size), and a rank that dies or a host that cannot be
# reached ends the run with a message naming it.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

# Test hosts have a private /tmp and /root: ranks run a copy of the binary from /run.
shared=$(mktemp -d /run/xft-allreduce-test-XXXXXX)
remove_on_exit "$shared"
cp "$XFTCTL" "$shared/xftctl"
X=$shared/xftctl

start_cluster 4 --auth key
kh=$TEST_TMP/known_hosts
"$X" -i "$CLUSTER_INVENTORY" ping --accept-new-host-keys --known-hosts "$kh" >/dev/null
bench() { "$X" -i "$CLUSTER_INVENTORY" bench allreduce --known-hosts "$kh" --cores-per-rank 1 "$@"; }
counts=(--check-counts 1,7,65,1025,16385)
# Every test host shares the same 2 cores: ranks yield instead of spinning while they wait.
export OMPI_MCA_mpi_yield_when_idle=1

step "every algorithm, float32 and bfloat16, 2/3/4 ranks on 2/3/4 hosts"
for hosts in h01,h02 "h0[1-3]" "h0[1-4]"; do
  bench --hosts "$hosts" --ranks-per-host 1 --check "${counts[@]}" --stall-timeout 60 >"$TEST_TMP/check.txt" 2>"$TEST_TMP/check.err" \
    || fail "--check on $hosts: $(cat "$TEST_TMP/check.txt" "$TEST_TMP/check.err")"
  grep -q "^check: all correct" "$TEST_TMP/check.txt" || fail "$hosts: not all correct: $(cat "$TEST_TMP/check.txt")"
  for algo in mpi ring recursive_doubling rabenseifner direct hier; do
    for dtype in float32 bfloat16; do
      grep -q "^check $algo $dtype: .* calls: ok$" "$TEST_TMP/check.txt" \
        || fail "$algo $dtype not checked ok on $hosts: $(cat "$TEST_TMP/check.txt")"
    done
  done
  echo "ok: $hosts"
done

step "hier: 2 hosts x 2 ranks (shared memory inside a host, MPI across)"
bench --hosts h01,h02 --ranks-per-host 2 --check --algo hier,ring "${counts[@]}" --stall-timeout 60 \
  >"$TEST_TMP/hier.txt" 2>"$TEST_TMP/hier.err" || fail "hier check: $(cat "$TEST_TMP/hier.txt" "$TEST_TMP/hier.err")"
grep -q "^check hier float32: .* calls: ok$" "$TEST_TMP/hier.txt" || fail "hier 2x2: $(cat "$TEST_TMP/hier.txt")"
bench --hosts h01,h02 --ranks-per-host 2 -b 1K -e 64K -f 8 -n 5 -w 1 --algo mpi,hier --format json \
  >"$TEST_TMP/hier.json" 2>"$TEST_TMP/hier.err" || fail "hier json: $(cat "$TEST_TMP/hier.err")"
assert_eq 6 "$(jq length "$TEST_TMP/hier.json")" "json: 2 algorithms x 3 sizes"
jq -e 'all(.[]; .ranks == 4 and .wrong == 0 and .t_min_us <= .t_avg_us and .t_avg_us <= .t_max_us)' \
  "$TEST_TMP/hier.json" >/dev/null || fail "hier json records: $(cat "$TEST_TMP/hier.json")"

step "a rank that dies is named"
rc=0
bench --ranks-per-host 1 -b 8 -e 4K -n 3 -w 1 --algo ring --fail-rank 2 --fail-at 1K --fail-mode kill \
  >/dev/null 2>"$TEST_TMP/kill.err" || rc=$?
assert_eq 2 "$rc" "exit code when a rank dies"
assert_contains "$(cat "$TEST_TMP/kill.err")" "rank 2 (h03, $HOST_H03_ADDR) was killed by signal 9" "the dead rank"

step "an unreachable host is named"
cluster stop-host h04
rc=0
timeout 60 "$X" -i "$CLUSTER_INVENTORY" bench allreduce --known-hosts "$kh" --cores-per-rank 1 \
  --connect-timeout 3 -b 8 -e 8 >/dev/null 2>"$TEST_TMP/down.err" || rc=$?
assert_eq 4 "$rc" "exit code with a host down"
assert_contains "$(cat "$TEST_TMP/down.err")" \
  "xftctl: bench allreduce: h04 ($HOST_H04_ADDR) is unreachable: mpirun's ssh said \"Connection refused\"" \
  "the unreachable host is named"
echo "bench_allreduce_cluster: ok"
