#!/usr/bin/env bash
# Continuous batching under load: the server on a fake model (default
# qwen2.5-0.5b, bf16, this machine's cores), then bench/serve_load.py at 1, 4
# and 16 concurrent streaming clients: aggregate and decode tokens/s with the
# ratio to one client, and p50/p99 time to first token.
# First, what 500 idle connections cost the server (IDLE=N for another count, 0 for none).
#   bash bench/serve_load.sh [MODEL] [MAX_TOKENS] [PROMPT_WORDS]   (default qwen2.5-0.5b 128 8; XFTCTL=path)
# SERVE_ARGS adds server flags, e.g. SERVE_ARGS="--prefill-chunk 0" or "--no-batch-invariant".
# Last, CHAT_TURNS (default 3) two-turn chats: turn 2 adds about 20 tokens to a
# history of about 500; first-token times of both turns and their ratio (prefix
# reuse). CLIENTS=1,4,16 sets the load levels; CLIENTS= runs only the chats.
# SCHEMA_AB=N instead: N rounds at the largest CLIENTS level of free chat vs
# response_format json_schema (mask cost), e.g.
#   SCHEMA_AB=3 CLIENTS=16 REQUESTS=1 IDLE=0 bash bench/serve_load.sh qwen2.5-0.5b 64
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
X=${XFTCTL:-$ROOT/build/cli/xftctl}
MODEL=${1:-qwen2.5-0.5b}
MAX_TOKENS=${2:-128}
PROMPT_WORDS=${3:-8}
log=$(mktemp)
export XFTCTL_LOG_TIMESTAMPS=off  # the startup line is read below
"$X" run qwen --fake-model "$MODEL" --serve 127.0.0.1:0 --max-batch 16 --max-context 1024 ${SERVE_ARGS:-} 2>"$log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|^xftctl: serving .* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$log")
  [[ -n $port ]] && break
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { echo "server did not start" >&2; exit 1; }
sed -n 2p "$log"
python3 "$ROOT/bench/serve_load.py" --port "$port" --clients "${CLIENTS-1,4,16}" --requests "${REQUESTS:-2}" --max-tokens "$MAX_TOKENS" --prompt-words "$PROMPT_WORDS" \
  --idle "${IDLE:-500}" --pid "$pid" --chat-turns "${CHAT_TURNS:-3}" --schema-ab "${SCHEMA_AB:-0}"
