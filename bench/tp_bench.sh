#!/usr/bin/env bash
# Tensor parallelism on this machine: fake Qwen2.5-1.5B decode at 1 rank x 2
# cores against 2 ranks x 1 core with each allreduce backend, tokens/s, the
# ratio to 1 rank and the communication share (--profile); then the resident
# memory of every rank at 1, 2 and 4 ranks (each rank loads only its slice).
#   bash bench/tp_bench.sh [MODEL]     (default qwen2.5-1.5b; XFTCTL=path)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
X=${XFTCTL:-$ROOT/build/cli/xftctl}
MODEL=${1:-qwen2.5-1.5b}
export XFTCTL_LOG_TIMESTAMPS=off  # the ranks' profile lines are read from a file below
common=(--fake-model "$MODEL" --bench --input-tokens 32 --output-tokens 32 --iters 3 --warmup 1 --json)

json_of() { sed -n '/^{/,/^}/p'; }  # rank 0's JSON object from the run's stdout

run() {  # LABEL ARGS... -> prints a row; sets TPS
  local label=$1
  shift
  local out err
  err=$(mktemp)
  out=$("$X" run qwen "${common[@]}" --profile "$@" 2>"$err" | json_of)
  TPS=$(python3 -c "import json,sys; print('%.2f' % json.loads(sys.argv[1])['decode_tokens_per_s'])" "$out")
  local rss
  rss=$(python3 -c "import json,sys; print(', '.join('%.0f' % r for r in json.loads(sys.argv[1])['rss_mib_per_rank']))" "$out")
  local share
  share=$(sed 's/^\[0 [^]]*\] //' "$err" | awk '$1 == "comm" { $1 = ""; print }' | tr -s ' ')
  [[ -n $share ]] || share=" 0%"
  rm -f "$err"
  printf '%-28s %10s %8s %18s   %s\n' "$label" "$TPS" "${RATIO_TO:+$(python3 -c "print('%.2f' % ($TPS / $RATIO_TO))")}" "$share" "$rss"
}

echo "fake $MODEL, bf16 decode, 32 in + 32 out, on $(nproc) cores"
printf '%-28s %10s %8s %18s   %s\n' "layout" "tokens/s" "vs 1" "comm share" "RSS MiB per rank"
RATIO_TO=
run "1 rank x 2 cores" --threads 2
RATIO_TO=$TPS
run "2 ranks x 1 core, shm" --local 2 --cores-per-rank 1 --comm shm
run "2 ranks x 1 core, mpi" --local 2 --cores-per-rank 1 --comm mpi
run "2 ranks x 1 core, auto" --local 2 --cores-per-rank 1 --comm auto
run "2 ranks, shm, bf16 payload" --local 2 --cores-per-rank 1 --comm shm --comm-bf16
echo
echo "memory: resident MiB per rank (4 ranks oversubscribe the cores)"
for n in 1 2 4; do
  RATIO_TO=
  run "$n rank(s)" --local "$n" --comm mpi
done
