#!/usr/bin/env bash
# xftctl bench allreduce on this host (--local N ranks through mpirun):
# every algorithm correct for 2, 3 and 4 ranks at awkward sizes (also with
# tiny shared-memory buffers so chunking and slicing are exercised), the output
# formats parse with their column names, --compare / --tune / --algo auto /
# selection strings work, and a rank that dies or stalls ends the run with an
# error naming it instead of a hang. No shm segment may be left behind.
set -euo pipefail
: "${XFTCTL:?path of the built xftctl}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
segments() { ls /dev/shm 2>/dev/null | grep -c '^xftctl-' || true; }
segments_before=$(segments)
bench() { "$XFTCTL" bench allreduce "$@"; }

# --- correctness: every algorithm, both dtypes, 2/3/4 ranks -------------------
# 256 KiB shm buffers (16 KiB small/large switch) put the chunk edges of the
# built-in count list at 64K elements, which keeps the run short on 2 cores.
# 3 and 4 ranks share the 2 cores, so they get a shorter list (still odd
# counts, counts below and not divisible by the rank count, and chunk edges).
for n in 2 3 4; do
  counts=()
  ((n == 2)) || counts=(--check-counts 1,2,3,5,7,8,13,64,65,127,1000,1023,1025,4097,16385,65535,65536,65537,131075)
  XFT_SHM_BUFFER_BYTES=262144 XFT_SHM_SMALL_BYTES=16384 \
    bench --local "$n" --check "${counts[@]}" --stall-timeout 120 >"$work/check$n.txt" 2>"$work/check$n.err" \
    || { cat "$work/check$n.txt" "$work/check$n.err"; fail "--check with $n ranks"; }
  grep -q "^check: all correct" "$work/check$n.txt" || fail "no 'all correct' for $n ranks"
  for algo in mpi ring recursive_doubling rabenseifner direct shm hier; do
    for dtype in float32 bfloat16; do
      grep -q "^check $algo $dtype: .* calls: ok$" "$work/check$n.txt" \
        || { cat "$work/check$n.txt"; fail "$algo $dtype not checked ok with $n ranks"; }
    done
  done
  grep -q "^check backend shm -> shm:0-max (given): ok" "$work/check$n.txt" || fail "shm backend with $n ranks"
  grep -q "^check backend auto -> .*, bf16 payload: ok" "$work/check$n.txt" || fail "auto bf16 backend with $n ranks"
done
# Tiny shm buffers: many chunks, the slice path from 1 KiB on.
XFT_SHM_BUFFER_BYTES=8192 XFT_SHM_SMALL_BYTES=1024 \
  bench --local 3 --check --algo shm,hier --check-counts 1,7,255,256,257,1023,2047,2048,2049,4099,100003 \
  >"$work/chunks.txt" 2>&1 || { cat "$work/chunks.txt"; fail "shm chunking"; }
grep -q "^check: all correct" "$work/chunks.txt" || { cat "$work/chunks.txt"; fail "shm chunking not correct"; }

# --- oneCCL table ----------------------------------------------------------------
bench --local 2 -b 8 -e 64K -n 5 -w 1 --algo ring,shm >"$work/oneccl.txt" 2>"$work/oneccl.err" \
  || { cat "$work/oneccl.txt" "$work/oneccl.err"; fail "oneccl run"; }
header=$(grep -m1 '#bytes' "$work/oneccl.txt" | tr -s ' ' | sed 's/^ //')
[[ $header == "#bytes #repetitions t_min[usec] t_max[usec] t_avg[usec] stddev[%] #wrong max_err slowest" ]] \
  || fail "oneccl header: '$header'"
[[ $(grep -c '^# #processes: 2$' "$work/oneccl.txt") == 2 ]] || fail "one oneCCL block per algorithm"
data() { awk '$1 !~ /^#/ && NF' "$@"; }  # table rows: not comments, not the indented header
rows=$(data "$work/oneccl.txt" | wc -l)
[[ $rows == 28 ]] || fail "oneccl: $rows rows, want 2 algorithms x 14 sizes"
data "$work/oneccl.txt" | awk '$2 != 5 || $7 != 0 || NF != 9 { bad = 1 } END { exit bad }' \
  || fail "oneccl rows: repetitions 5, #wrong 0, 9 columns"
sizes=$(data "$work/oneccl.txt" | awk '{ print $1 }' | sort -n | uniq | tr '\n' ' ')
[[ $sizes == "8 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536 " ]] || fail "sizes: $sizes"

# --- nccl-tests table, with --compare ----------------------------------------------
bench --local 2 -b 1K -e 16K -n 5 -w 1 --algo ring,direct --dtype bfloat16 --format nccl --compare \
  >"$work/nccl.txt" 2>"$work/nccl.err" || { cat "$work/nccl.txt" "$work/nccl.err"; fail "nccl run"; }
header=$(grep -m1 '^# *size ' "$work/nccl.txt" | tr -s ' ')
[[ $header == "# size count type redop root time algbw busbw #wrong max_err slowest vs_mpi" ]] \
  || fail "nccl header: '$header'"
grep -q '^# algorithm: mpi$' "$work/nccl.txt" || fail "--compare runs mpi first"
# mpi relative to itself is 1.00; bf16 counts are bytes/2; busbw = algbw * 2(n-1)/n = algbw for 2 ranks.
awk '!/^#/ && NF { if ($3 != "bfloat16" || $2 * 2 != $1 || $6 <= 0 || $9 != 0) bad = 1 } END { exit bad }' \
  "$work/nccl.txt" || fail "nccl rows"
awk '/^# algorithm: mpi$/ { m = 1; next } /^# algorithm/ { m = 0 } m && !/^#/ && NF && $12 != "1.00" { bad = 1 } END { exit bad }' \
  "$work/nccl.txt" || fail "mpi vs_mpi must be 1.00"
awk '!/^#/ && NF && ($7 != $8) { bad = 1 } END { exit bad }' "$work/nccl.txt" || fail "busbw == algbw for 2 ranks"

# --- JSON and CSV ------------------------------------------------------------------
bench --local 3 -b 8 -e 4K -f 4 -n 3 -w 1 --algo mpi,ring,rabenseifner --dtype float32,bfloat16 --format json \
  >"$work/out.json" 2>"$work/json.err" || { cat "$work/json.err"; fail "json run"; }
[[ $(jq length "$work/out.json") == 30 ]] || fail "json: want 3 algorithms x 5 sizes (8..2048) x 2 dtypes records"
[[ $(jq '[.[] | {algorithm, bytes, dtype}] | unique | length' "$work/out.json") == 30 ]] || fail "json: duplicates"
jq -e 'all(.[]; has("algorithm") and has("bytes") and has("dtype") and .ranks == 3 and has("t_min_us")
       and has("t_avg_us") and has("t_max_us") and has("algbw_gbps") and has("busbw_gbps") and .wrong == 0
       and .t_min_us <= .t_avg_us and .t_avg_us <= .t_max_us)' "$work/out.json" >/dev/null || fail "json fields"
jq -e 'all(.[] | select(.dtype == "bfloat16"); .max_err < 0.02)' "$work/out.json" >/dev/null || fail "bf16 max_err"
bench --local 2 -b 64 -e 256 -n 3 -w 1 --algo direct --format csv >"$work/out.csv" 2>/dev/null || fail "csv run"
[[ $(head -1 "$work/out.csv") == algorithm,dtype,ranks,bytes,count,repetitions,t_min_us,t_max_us,t_avg_us,* ]] \
  || fail "csv header"
[[ $(wc -l <"$work/out.csv") == 4 ]] || fail "csv: header + 3 rows"

# --- selection strings, --tune and --algo auto ---------------------------------------
bench --local 2 -b 512 -e 4K -n 3 -w 1 --algo 'recursive_doubling:0-1024;ring:1025-max' --format csv \
  >"$work/sel.csv" 2>/dev/null || fail "selection string run"
[[ $(grep -c '^"recursive_doubling:0-1024;ring:1025-max",float32' "$work/sel.csv") == 4 ]] || fail "selection rows"
tune="$work/tune/allreduce-tune.json"
bench --local 2 -b 1K -e 64K -f 8 -n 20 -w 2 --tune --tune-file "$tune" >"$work/tune.txt" 2>&1 \
  || { cat "$work/tune.txt"; fail "tune run"; }
jq -e '.layouts["ranks=2 nodes=1 per_node=2"].float32.selection | test("^[a-z_]+:0-")' "$tune" >/dev/null \
  || { cat "$tune"; fail "tune table"; }
grep -q "saved to $tune" "$work/tune.txt" || fail "tune run does not say where it saved"
bench --local 2 -b 1K -e 8K -n 3 -w 1 --algo auto --tune-file "$tune" >"$work/auto.txt" 2>&1 \
  || { cat "$work/auto.txt"; fail "auto run"; }
grep -q "^# auto (float32) = .* \[tuned, $tune\]" "$work/auto.txt" || { cat "$work/auto.txt"; fail "auto not from table"; }
bench --local 2 -b 1K -e 1K -n 3 -w 1 --algo auto --tune-file "$work/none.json" >"$work/auto2.txt" 2>&1 \
  || fail "auto without table"
grep -q "^# auto (float32) = shm:0-max \[built-in default" "$work/auto2.txt" || fail "auto default on one host"

# --- failures end the run and name the rank ---------------------------------------------
set +e
bench --local 3 -b 8 -e 4K -n 3 -w 1 --algo ring --fail-rank 1 --fail-at 1K --fail-mode kill \
  >"$work/kill.txt" 2>"$work/kill.err"
code=$?
set -e
[[ $code != 0 ]] || fail "a killed rank must fail the run"
grep -q "rank 1 .*killed by signal 9" "$work/kill.err" || { cat "$work/kill.err"; fail "killed rank not named"; }

start=$SECONDS
set +e
timeout 120 "$XFTCTL" bench allreduce --local 3 -b 8 -e 4K -n 3 -w 1 --algo shm --stall-timeout 4 \
  --fail-rank 2 --fail-at 256 --fail-mode hang >"$work/hang.txt" 2>"$work/hang.err"
code=$?
set -e
[[ $code != 0 && $code != 124 ]] || { cat "$work/hang.err"; fail "a stalled rank must end the run (exit $code)"; }
(( SECONDS - start < 60 )) || fail "stalled rank took $((SECONDS - start)) s to detect"
grep -q "rank 2 (.*) did not arrive within 4 s\|waiting for rank 2 (" "$work/hang.err" \
  || { cat "$work/hang.err"; fail "stalled rank not named"; }

# --- input errors are one line, before any rank starts ------------------------------------
set +e
err=$(bench --local 2 --algo 'ring:0-10;warp:11-max' 2>&1 >/dev/null); code=$?
set -e
[[ $code == 1 && $(wc -l <<<"$err") == 1 && $err == *"unknown allreduce algorithm 'warp'"* ]] || fail "bad --algo: $err"

# The seed's CCL_ALLREDUCE, with oneCCL-only names, read from the environment when --algo is not given.
seed="recursive_doubling:0-16384;2d:16385-524288;nreduce:524289-max"
CCL_ALLREDUCE=$seed bench --local 2 -b 4K -e 1M -f 16 >"$work/ccl.txt" 2>"$work/ccl.err" ||
  { cat "$work/ccl.txt" "$work/ccl.err"; fail "CCL_ALLREDUCE=$seed"; }
expected="xftctl: bench allreduce: --algo from CCL_ALLREDUCE=$seed
xftctl: bench allreduce: oneCCL's \`2d\` runs as \`hier\` (reduce inside each host, then across hosts)
xftctl: bench allreduce: oneCCL's \`nreduce\` runs as \`rabenseifner\` (reduce-scatter then allgather)"
[[ $(cat "$work/ccl.err") == "$expected" ]] || fail "CCL_ALLREDUCE notes: $(cat "$work/ccl.err")"
grep -q "^# algorithm: $seed, dtype: float32" "$work/ccl.txt" || fail "the selection from CCL_ALLREDUCE is not the one run"
[[ $(awk '$1 ~ /^[0-9]+$/ && $7 != 0' "$work/ccl.txt") == "" ]] || fail "wrong results under CCL_ALLREDUCE: $(cat "$work/ccl.txt")"

sleep 1
[[ $(segments) == "$segments_before" ]] || { ls -l /dev/shm; fail "shm segments left behind"; }
echo "bench_allreduce: ok"
