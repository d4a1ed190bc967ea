#!/usr/bin/env bash
# Single-rank engine benchmark: `xftctl run qwen --bench` for each weight
# format on one model, as a table. Figures, not a test.
#
#   bench/engine_bench.sh [--fake-model qwen2.5-0.5b | --model DIR] [extra run-qwen flags]
#   env: XFTCTL (default build/cli/xftctl), DTYPES (default "bf16 int8 fp16 fp32")
#
# "weights GB/s" is the rank's packed weight bytes over the mean next-token
# time: compare it with the read bandwidth bench_roofline measures.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
xftctl=${XFTCTL:-$here/build/cli/xftctl}
dtypes=${DTYPES:-"bf16 int8 fp16 fp32"}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--fake-model qwen2.5-0.5b)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-6s %10s %10s %10s %10s %12s %10s %10s\n' dtype "first ms" "next ms" "p90 ms" "tok/s" "prefill t/s" "weights GB/s" "MiB"
for dtype in $dtypes; do
  "$xftctl" run qwen "${args[@]}" --dtype "$dtype" --bench --json \
      --input-tokens "${INPUT_TOKENS:-128}" --output-tokens "${OUTPUT_TOKENS:-32}" \
      --iters "${ITERS:-3}" --warmup 1 >"$tmp/$dtype.json"
  python3 - "$tmp/$dtype.json" "$dtype" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<6} {j['first_token_ms']:10.2f} {j['next_token_ms']:10.2f} {j['next_token_p90_ms']:10.2f} "
      f"{j['decode_tokens_per_s']:10.2f} {j['prefill_tokens_per_s']:12.1f} {j['decode_weight_gb_per_s']:10.2f} "
      f"{j['weight_bytes'] / 2**20:10.1f}")
PY
done
