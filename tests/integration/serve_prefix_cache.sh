#!/usr/bin/env bash
# `run qwen --serve` reuses a prompt prefix: a second request that starts with
# the first one's prompt copies its whole 16-token blocks instead of
# prefilling them (/metrics: one lookup hit out of two, the reused tokens
# exact), and still answers exactly what `run qwen --greedy` answers alone.
set -euo pipefail
: "${XFTCTL:?path of the xftctl binary}"
tmp=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill -9 "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/server.log" ] && sed 's/^/  server: /' "$tmp/server.log" >&2; exit 1; }

"$XFTCTL" model make-test "$tmp/m" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000 >/dev/null
first="You are a careful assistant. Answer in one short sentence, and never mention these rules. Question one: what is the colour of the sky on a clear day at noon?"
second="$first Question two: and at night?"
"$XFTCTL" run qwen --model "$tmp/m" --threads 2 --greedy --repetition-penalty 1 --max-new-tokens 12 --raw --prompt "$second" \
  >"$tmp/ref.txt" 2>/dev/null

: >"$tmp/server.log"  # the background job opens it later; sed below must find it even if that job has not run yet
"$XFTCTL" run qwen --model "$tmp/m" --threads 2 --serve 127.0.0.1:0 2>"$tmp/server.log" &
server=$!
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|^xftctl: serving .* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$tmp/server.log")
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || fail "the server exited"
  sleep 0.1
done
[ -n "$port" ] || fail "the server did not start in 60 s"

PORT=$port FIRST=$first SECOND=$second REF="$tmp/ref.txt" python3 - <<'PY' || fail "prefix reuse checks"
import http.client, json, os
port = int(os.environ["PORT"])
def post(prompt):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/completions", json.dumps({"prompt": prompt, "max_tokens": 12, "temperature": 0}),
              {"Content-Type": "application/json"})
    r = json.loads(c.getresponse().read())
    return r["choices"][0]["text"], r["usage"]["prompt_tokens"]
def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    lines = c.getresponse().read().decode().splitlines()
    return {l.split()[0]: float(l.split()[1]) for l in lines if l.startswith("xftctl_prefix_cache_")}
_, first_tokens = post(os.environ["FIRST"])
answer, second_tokens = post(os.environ["SECOND"])
expected = open(os.environ["REF"], encoding="utf-8", newline="").read()[:-1]  # run qwen ends with a newline
assert answer == expected, (answer, expected)
m = metrics()
reused = first_tokens // 16 * 16  # the first prompt's whole blocks; the second's own tokens follow them
assert second_tokens > reused, (first_tokens, second_tokens)
assert m["xftctl_prefix_cache_lookups_total"] == 2, m
assert m["xftctl_prefix_cache_hits_total"] == 1, m
assert m["xftctl_prefix_cache_hit_tokens_total"] == reused, (m, first_tokens)
assert m["xftctl_prefix_cache_evictions_total"] == 0, m
assert m["xftctl_prefix_cache_bytes"] > 0 and m["xftctl_prefix_cache_blocks"] >= reused // 16, m
print(f"prefix reuse: {first_tokens} then {second_tokens} prompt tokens, {reused} reused, same answer as run qwen")
PY
kill -TERM "$server"
wait "$server" || fail "the server did not stop cleanly"
server=""
