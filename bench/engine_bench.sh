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
#        DTYPES (default "bf16 int8"), INPUT_TOKENS (512), OUTPUT_TOKENS (32), ITERS (2)
# Measure on a quiet machine: `taskset -c 0,1 bench/engine_bench.sh`.
#
# "weights GB/s" is the CLI's weight_bytes (embedding table included, though a
# step reads one row of it) over the mean next-token time: an upper figure.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
xftctl=${XFTCTL:-$here/build/cli/xftctl}
roofline=${BENCH_ROOFLINE:-$here/build/bench/bench_roofline}
dtypes=${DTYPES:-"bf16 int8"}
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
printf '%-6s %10s %10s %10s %10s %12s %12s %10s\n' dtype "first ms" "next ms" "p90 ms" "tok/s" "prefill t/s" "weights GB/s" "MiB"
for dtype in $dtypes; do
  "$xftctl" run qwen "${args[@]}" --dtype "$dtype" --bench --json \
      --input-tokens "${INPUT_TOKENS:-512}" --output-tokens "${OUTPUT_TOKENS:-32}" \
      --iters "${ITERS:-2}" --warmup 1 >"$tmp/$dtype.json"
  python3 - "$tmp/$dtype.json" "$dtype" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<6} {j['first_token_ms']:10.2f} {j['next_token_ms']:10.2f} {j['next_token_p90_ms']:10.2f} "
      f"{j['decode_tokens_per_s']:10.2f} {j['prefill_tokens_per_s']:12.1f} {j['decode_weight_gb_per_s']:12.2f} "
      f"{j['weight_bytes'] / 2**20:10.1f}")
PY
done
