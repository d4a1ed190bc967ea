#!/usr/bin/env bash
# The official `openai` package for Node (from the npm registry) drives
# `xftctl run qwen --serve` on the Qwen1 test model as a user's program would:
# models, chat (plain, streamed with usage), completions with logprobs, n = 2,
# json_schema, json_object and a tool_choice naming a function,
# and, on a second server whose answers are scripted (the hidden
# --scripted-answer: the random model never calls a tool by itself), tool
# calls streamed in fragments that the SDK's stream helper assembles.
# openai_node_sdk.mjs checks the fields the SDK hands back.
#
# The package is installed once per build tree ($XFT_BUILD_DIR/openai-node-sdk);
# without the registry (and no installed copy) the test fails, saying so.
set -euo pipefail
: "${XFTCTL:?path of the xftctl binary}"
: "${XFT_SOURCE_DIR:?source tree}"
: "${XFT_BUILD_DIR:?build tree}"
here="$XFT_SOURCE_DIR/tests/integration"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for log in "$tmp"/*.log; do [ -f "$log" ] && sed "s|^|  $(basename "$log"): |" "$log" >&2; done; exit 1; }

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed: run scripts/install-deps.sh"
# The newest SDK needs Node 22; Debian 12's Node 18 gets the last release that
# supports it. OPENAI_SDK_VERSION tries another one.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major >= 22)); then sdk_version=7.59.0; else sdk_version=4.104.0; fi
sdk_version=${OPENAI_SDK_VERSION:-$sdk_version}
sdk_dir="$XFT_BUILD_DIR/openai-node-sdk/$sdk_version"
installed=$(node -p "try { require('$sdk_dir/node_modules/openai/package.json').version } catch { '' }")
if [ "$installed" != "$sdk_version" ]; then
  mkdir -p "$sdk_dir"
  npm install --prefix "$sdk_dir" --no-audit --no-fund --no-save --loglevel=error --fetch-retries=1 "openai@$sdk_version" >"$tmp/npm.log" 2>&1 ||
    fail "npm could not install openai@$sdk_version from the registry ($(npm config get registry)): $(grep -m1 -o 'reason: .*' "$tmp/npm.log" || grep -m1 'npm error' "$tmp/npm.log")"
fi

"$XFTCTL" model make-test "$tmp/m" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000 >/dev/null
# Two calls in the Hermes form Qwen writes them.
printf '%s' 'Checking both.<tool_call>
{"name": "get_weather", "arguments": {"city": "München", "days": 3, "units": {"temp": "C"}}}
</tool_call>
<tool_call>
{"name": "get_time", "arguments": {"zone": "Europe/Berlin"}}
</tool_call>' >"$tmp/calls.txt"

# start_server NAME ARGS...: a server on a free port; sets PORT.
start_server() {
  local log="$tmp/$1.log"; shift
  : >"$log"
  "$XFTCTL" run qwen --model "$tmp/m" --threads 2 --serve 127.0.0.1:0 --served-model-name qwen-test \
    --max-context 512 "$@" 2>"$log" &
  pids+=("$!")
  PORT=""
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's|^.*xftctl: serving .* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$log")
    [ -n "$PORT" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || fail "the server exited"
    sleep 0.1
  done
  fail "the server did not start in 60 s"
}
start_server plain --max-new-tokens 64
plain_port=$PORT
start_server scripted --max-new-tokens 200 --scripted-answer "$tmp/calls.txt"
scripted_port=$PORT

OPENAI_SDK_DIR="$sdk_dir" node "$here/openai_node_sdk.mjs" "http://127.0.0.1:$plain_port/v1" \
  "http://127.0.0.1:$scripted_port/v1" >"$tmp/sdk.out" 2>&1 || { cat "$tmp/sdk.out" >&2; fail "openai@$sdk_version checks"; }
grep -q "^all checks passed$" "$tmp/sdk.out" || { cat "$tmp/sdk.out" >&2; fail "the SDK script did not finish"; }
for p in "${pids[@]}"; do
  kill -TERM "$p"
  wait "$p" || fail "a server did not stop cleanly on SIGTERM"
done
pids=()
echo "openai_node_sdk: openai@$sdk_version on node $(node --version): $(grep -c '^ok ' "$tmp/sdk.out") checks passed"
