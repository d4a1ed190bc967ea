#!/usr/bin/env bash
# `xftctl run qwen --serve`'s chat page (GET /) in headless chromium, driven
# over the DevTools protocol by cdp.py: typing "Hello" and clicking Send
# streams an answer into the page (seen growing while it streamed), the answer
# is exactly the non-streaming API's answer to the same request (greedy:
# the page takes temperature and max_tokens from its URL), the status line
# shows the server's /metrics gauges and the answer's token count, Stop ends
# the answer and the server's generation of it, and the server stops on SIGTERM. Leaves a screenshot in
# $XFT_BUILD_DIR/test-artifacts/chat_page.png.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
: "${XFT_BUILD_DIR:?set XFT_BUILD_DIR to the build tree (ctest does)}"
command -v chromium >/dev/null || fail "chromium is not installed: run scripts/install-deps.sh"

# What the page sends besides the conversation; the curl request below sends the same.
# 256 tokens (the page's default) take long enough on the test model to be sampled
# several times 50 ms apart.
max_tokens=256
temperature=0
message="Hello"

# The Qwen1 test model (run_qwen.sh's): its greedy answers are varied text, where
# the Qwen2/Qwen3 test models only ever answer newlines.
step "make-test qwen model"
model="$TEST_TMP/model"
xft model make-test "$model" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000
assert_eq 0 "$RC" "make-test exit code ($ERR)"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
step "serve on $base"
"$XFTCTL" run qwen --model "$model" --serve "127.0.0.1:$port" --max-new-tokens 24 >"$TEST_TMP/server.log" 2>&1 &
server_pid=$!
_LIB_BACKGROUND_PIDS+=("$server_pid")  # killed on exit if the test stops early
server_failed() { fail "$* (server log:
$(tail -n 30 "$TEST_TMP/server.log"))"; }

for ((i = 0; ; i++)); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$base/health" || true)
  [[ $code == 200 ]] && break
  kill -0 "$server_pid" 2>/dev/null || server_failed "the server exited before /health answered"
  ((i < 600)) || server_failed "GET /health did not return 200 within 60 s (last: $code)"
  sleep 0.1
done

step "GET / is the chat page"
page_type=$(curl -s -o "$TEST_TMP/page.html" -w '%{http_code} %{content_type}' --max-time 10 "$base/")
assert_eq "200 text/html; charset=utf-8" "$page_type" "GET / status and content type"
assert_contains "$(cat "$TEST_TMP/page.html")" 'id="messages"' "the chat page"

step "the page streams an answer (headless chromium)"
shot="$XFT_BUILD_DIR/test-artifacts/chat_page.png"
mkdir -p "$(dirname "$shot")"
rm -f "$shot"
/usr/bin/python3 "$XFT_SOURCE_DIR/tests/integration/cdp.py" chat-page \
  "$base/?temperature=$temperature&max_tokens=$max_tokens" "$shot" "$message" >"$TEST_TMP/page.json" ||
  server_failed "cdp.py chat-page failed"

step "the same request without streaming"
model_id=$(curl -sf --max-time 10 "$base/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])') ||
  server_failed "GET /v1/models"
request=$(python3 -c 'import json, sys
print(json.dumps({"model": sys.argv[1], "messages": [{"role": "user", "content": sys.argv[2]}],
                  "max_tokens": int(sys.argv[3]), "temperature": float(sys.argv[4])}))' \
            "$model_id" "$message" "$max_tokens" "$temperature")
curl -s --max-time 60 -o "$TEST_TMP/completion.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d "$request" "$base/v1/chat/completions" >"$TEST_TMP/completion.code" || server_failed "POST /v1/chat/completions"
assert_eq 200 "$(cat "$TEST_TMP/completion.code")" "POST /v1/chat/completions status ($(cat "$TEST_TMP/completion.json"))"

python3 - "$shot" "$TEST_TMP/completion.json" "$TEST_TMP/page.json" <<'PY' || fail "chat page checks (above)"
import json, os, re, sys
shot, completion, result = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
sys.excepthook = lambda kind, error, tb: print(f"{kind.__name__}: {error}\ncdp.py said: {json.dumps(result)}", file=sys.stderr)
with open(shot, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG"
assert os.path.getsize(shot) > 10000, f"the screenshot is only {os.path.getsize(shot)} bytes"
# Growth as recorded inside the page at every assignment to the answer bubble (a
# textContent hook the test injects); sampling from outside every 50 ms can
# miss a fast answer entirely, so observed_lengths is only reported.
lengths = result["mutation_lengths"]
assert len(lengths) >= 2 and lengths == sorted(set(lengths)), f"the answer was not seen growing: {lengths}"
expected = completion["choices"][0]["message"]["content"]
assert expected, f"the non-streaming answer is empty: {completion}"
assert result["assistant_text"] == expected, \
    f"page answer {result['assistant_text']!r} != non-streaming answer {expected!r}"
status = result["status"]
assert re.search(r"server: [0-9.]+ tokens/s, [0-9]+ running, [0-9]+ waiting", status), f"status line: {status!r}"
tokens = completion["usage"]["completion_tokens"]
assert f"this answer: {tokens} tokens" in status, f"status line {status!r} lacks the {tokens} tokens of the answer"
assert not result["page_errors"], f"JavaScript errors: {result['page_errors']}"
print(f"ok: {len(expected)} characters, {tokens} tokens, {len(lengths)} lengths seen while it streamed;"
      f" status line: {status}")
PY

step "Stop ends the answer, and the server stops generating it"
# 2000 tokens would take seconds; Stop comes at the answer's first characters.
stop_tokens=2000
/usr/bin/python3 "$XFT_SOURCE_DIR/tests/integration/cdp.py" chat-stop \
  "$base/?temperature=$temperature&max_tokens=$stop_tokens" "$message" >"$TEST_TMP/stop.json" ||
  server_failed "cdp.py chat-stop failed"
python3 - "$TEST_TMP/stop.json" "$stop_tokens" <<'PY' || fail "Stop checks (above)"
import json, sys
result, max_tokens = json.load(open(sys.argv[1])), int(sys.argv[2])
sys.excepthook = lambda kind, error, tb: print(f"{kind.__name__}: {error}\ncdp.py said: {json.dumps(result)}", file=sys.stderr)
assert result["stopped_class"] and result["text_length"] > 0, "the answer bubble is not marked stopped"
assert result["send_enabled"], "Send is still disabled after Stop"
assert result["seconds_to_idle"] < 5, f"the server ran {result['seconds_to_idle']} s on after Stop"
assert 0 < result["generated_tokens"] < max_tokens, \
    f"the server generated {result['generated_tokens']} of {max_tokens} tokens despite Stop"
assert not result["page_errors"], f"JavaScript errors: {result['page_errors']}"
print(f"ok: idle {result['seconds_to_idle']} s after Stop, {result['generated_tokens']} of {max_tokens} tokens generated")
PY

step "SIGTERM stops the server"
kill -TERM "$server_pid"
for ((i = 0; i < 150; i++)); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$server_pid" 2>/dev/null && server_failed "the server still runs 15 s after SIGTERM"
rc=0
wait "$server_pid" || rc=$?
assert_eq 0 "$rc" "the server's exit code after SIGTERM"
echo "screenshot: $shot"
echo "PASS serve_chat_page"
