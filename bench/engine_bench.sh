#!/usr/bin/env bash
# Single-rank engine benchmark, figures not a test:
#  1. bench_roofline: machine read bandwidth and bf16 peak, then the engine
#     (decode and a 512-token prefill) on fake Qwen2.5-0.5B/1.5B in bf16 and
#     int8 against them (see bench/roofline.cpp for the columns);
#  2. one line per dtype of `xftctl run qwen --bench --json` on the same
#     fake model, so the CLI's figure can be checked against the table.
#
#   bench/engine_bench.sh [--fake-model qwen2.5-0.5b | --model DIR] [extra run-qwen flags]
#   env: XFTCTL (default build/cli/xftctl), BENCH_ROOFLINE (default build/bench/bench_roofline,
#        "skip" to leave it out), ROOFLINE_ARGS (extra bench_roofline flags),
#        DTYPES (default "bf16 int8 int4"), INPUT_TOKENS (512), OUTPUT_TOKENS (32), ITERS (2),
#        ROUNDS (1: each dtype once; more alternate the dtypes, ratios per round and of the best)
# Measure on a quiet machine: `taskset -c 0,1 bench/engine_bench.sh`.
#
# "weights GB/s" is the CLI's decode_weight_bytes_per_token (every projection
# and the head, one embedding row) over the mean next-token time.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
xftctl=${XFTCTL:-$here/build/cli/xftctl}
roofline=${BENCH_ROOFLINE:-$here/build/bench/bench_roofline}
dtypes=${DTYPES:-"bf16 int8 int4"}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--fake-model qwen2.5-0.5b)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$roofline" != skip ]; then
  # shellcheck disable=SC2086
  "$roofline" ${ROOFLINE_ARGS:-}
  echo
fi

echo "== xftctl run qwen ${args[*]} --bench (input ${INPUT_TOKENS:-512}, output ${OUTPUT_TOKENS:-32}) =="
printf '%-6s %-10s %10s %10s %10s %10s %12s %12s %10s %10s\n' dtype format "first ms" "next ms" "p90 ms" "tok/s" "prefill t/s" "weights GB/s" "MiB/token" "RSS MiB"
for round in $(seq "${ROUNDS:-1}"); do
  for dtype in $dtypes; do
    "$xftctl" run qwen "${args[@]}" --dtype "$dtype" --bench --json \
        --input-tokens "${INPUT_TOKENS:-512}" --output-tokens "${OUTPUT_TOKENS:-32}" \
        --iters "${ITERS:-2}" --warmup 1 >"$tmp/$dtype.$round.json"
    python3 - "$tmp/$dtype.$round.json" "$dtype" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
per_token = j.get("decode_weight_bytes_per_token", j["weight_bytes"])
print(f"{sys.argv[2]:<6} {j.get('format', sys.argv[2]):<10} {j['first_token_ms']:10.2f} {j['next_token_ms']:10.2f} "
      f"{j['next_token_p90_ms']:10.2f} {j['decode_tokens_per_s']:10.2f} {j['prefill_tokens_per_s']:12.1f} "
      f"{per_token / j['next_token_ms'] / 1e6:12.2f} {per_token / 2**20:10.1f} {max(j['rss_mib_per_rank']):10.0f}")
PY
  done
done
# Ratios: of the best decode of each dtype in this run, and round by round (the
# dtypes of one round ran one after the other, the closest this loop gets to
# the same machine state: median [min, max] over the rounds); resident memory.
# bench_roofline's "alternating" lines interleave single steps instead, and
# also give the CPU-time ("excl.") ratio, which a busy machine disturbs less.
python3 - "$tmp" "${ROUNDS:-1}" $dtypes <<'PY'
import json, statistics, sys
tmp, rounds, dtypes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {d: [json.load(open(f"{tmp}/{d}.{r}.json")) for r in range(1, rounds + 1)] for d in dtypes}
for a, b in (("int4", "int8"), ("int4", "bf16"), ("int8", "bf16")):
    if a in runs and b in runs:
        best = max(r["decode_tokens_per_s"] for r in runs[a]) / max(r["decode_tokens_per_s"] for r in runs[b])
        per_round = [x["decode_tokens_per_s"] / y["decode_tokens_per_s"] for x, y in zip(runs[a], runs[b])]
        rss = min(max(r["rss_mib_per_rank"]) for r in runs[a]) / min(max(r["rss_mib_per_rank"]) for r in runs[b])
        print(f"ratio {a}/{b}: decode {best:.2f}x best of each, {statistics.median(per_round):.2f}x "
              f"[{min(per_round):.2f}, {max(per_round):.2f}] per round; resident memory {rss:.2f}x")
PY
