#!/usr/bin/env bash
# `xftctl run qwen --serve` with a real HTTP client (Python's http.client)
# against the real server on the built-in test model: chat and text
# completions, whole and streamed (server-sent events), equal the engine's
# greedy output from `run qwen --prompt`; 16 concurrent streaming clients get
# the text each gets alone, in fewer steps than tokens (batched); malformed
# requests get OpenAI-style 400s and the server keeps serving; the API key,
# the queue limit (429), /metrics and a clean stop on SIGTERM. Browser rules
# (Host, Origin) and the warning for a public address without a key; a
# 2-rank server whose key reached its ranks through the environment only.
# As clients call it: IPv6 and --host/--port, raw HTTP/1.0 and chunked
# bodies, --served-model-name, the fields SDKs send by default, errors in
# OpenAI's shape, stable completion_tokens with stop strings, the access log.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
tmp=$TEST_TMP
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/server.log" ] && sed 's/^/  server: /' "$tmp/server.log" >&2; exit 1; }

# The Qwen1 test model: its greedy answers are long and varied (the qwen2 one answers newlines).
"$XFTCTL" model make-test "$tmp/m" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000 >/dev/null

# The engine's own greedy answers, one process each, no server involved.
"$XFTCTL" run qwen --model "$tmp/m" --threads 2 --greedy --repetition-penalty 1 --max-new-tokens 20 --prompt "Hello" \
  >"$tmp/ref_chat.txt" 2>/dev/null
"$XFTCTL" run qwen --model "$tmp/m" --threads 2 --greedy --repetition-penalty 1 --max-new-tokens 20 --raw --prompt "The capital of France is" \
  >"$tmp/ref_raw.txt" 2>/dev/null
# A long answer with a control token in it; which prompt gives one depends on the CPU's kernels.
long_prompt=""
for p in "Hello" "Good morning" "Hi" "Tell me a story" "Question 7" "abc" "What is 2+2?"; do
  "$XFTCTL" run qwen --model "$tmp/m" --threads 2 --greedy --repetition-penalty 1 --max-new-tokens 200 --prompt "$p" \
    >"$tmp/ref_long.txt" 2>/dev/null
  if grep -q '<|extra_[0-9]*|>' "$tmp/ref_long.txt"; then long_prompt=$p; break; fi
done
[ -n "$long_prompt" ] || fail "no candidate prompt's 200-token answer has a control token"

stop_server() {  # WHAT: SIGTERM, exit 0 within 15 s
  kill -TERM "$SERVER_PID"
  for _ in $(seq 1 150); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SERVER_PID" 2>/dev/null && fail "$1: still running 15 s after SIGTERM"
  local rc=0; wait "$SERVER_PID" || rc=$?
  [ "$rc" = 0 ] || fail "$1: exit code $rc after SIGTERM"
}

start_server "$tmp/server.log" --model "$tmp/m" --threads 2 --max-new-tokens 20 --max-context 256 --max-batch 16
grep -q "^xftctl: 1 rank, bf16/.*, batch up to 16, queue 64, context 256, KV .* MiB per 1000 positions$" "$tmp/server.log" \
  || fail "startup line: $(cat "$tmp/server.log")"

python3 - "$PORT" "$tmp/ref_chat.txt" "$tmp/ref_raw.txt" "$tmp/ref_long.txt" "$long_prompt" <<'PY' || fail "API checks"
import http.client, json, re, sys, threading
port = int(sys.argv[1])
ref_chat = open(sys.argv[2], encoding="utf-8", newline="").read()[:-1]  # run qwen ends the answer with a newline
ref_raw = open(sys.argv[3], encoding="utf-8", newline="").read()[:-1]
ref_long = open(sys.argv[4], encoding="utf-8", newline="").read()[:-1]
long_prompt = sys.argv[5]
assert ref_chat and ref_raw, "empty reference answers"

def request(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    c.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    r = c.getresponse()
    out = r.status, r.getheader("Content-Type"), r.read().decode()
    c.close()
    return out

def post(path, body, headers=None):
    status, ctype, text = request("POST", path, body, headers)
    return status, json.loads(text) if ctype.startswith("application/json") else text

def stream(path, body):
    """Returns (text, chunks) from an SSE response, checking the framing."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, body=json.dumps(dict(body, stream=True)), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.status
    assert r.getheader("Content-Type") == "text/event-stream", r.getheader("Content-Type")
    assert r.getheader("Transfer-Encoding") == "chunked"
    raw = r.read().decode()
    c.close()
    events = raw.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]", events[-3:]
    chunks = [json.loads(e[len("data: "):]) for e in events[:-2]]
    for e in events[:-2]:
        assert e.startswith("data: {"), e
    text = ""
    for ch in chunks:
        for choice in ch["choices"]:
            text += choice["delta"].get("content", "") if "delta" in choice else choice["text"]
    return text, chunks

chat = lambda content, **kw: dict({"model": "m", "messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": 20}, **kw)
# `run qwen` prints every token, control tokens (<|extra_164|>, ...) included; the API leaves them out by default.
raw_text = {"skip_special_tokens": False}

# Liveness and the model list.
assert request("GET", "/health")[0] == 200
status, body = post("/v1/models", {})
assert status == 405, status
status, _, text = request("GET", "/v1/models")
models = json.loads(text)
assert status == 200 and models["object"] == "list" and models["data"][0]["id"] == "m" and models["data"][0]["object"] == "model", models

# Whole answers equal the engine's greedy output.
status, r = post("/v1/chat/completions", chat("Hello", **raw_text))
assert status == 200, r
assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-") and r["model"] == "m", r
assert r["choices"][0]["message"] == {"role": "assistant", "content": ref_chat}, (r["choices"][0]["message"], ref_chat)
assert r["choices"][0]["finish_reason"] in ("stop", "length")
u = r["usage"]
assert u["prompt_tokens"] > 5 and 1 <= u["completion_tokens"] <= 20 and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"], u
status, r = post("/v1/completions", {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 20, **raw_text})
assert status == 200 and r["object"] == "text_completion" and r["choices"][0]["text"] == ref_raw, (r, ref_raw)
# By default the control tokens are left out of the text, and only them.
clean = post("/v1/completions", {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 20})[1]["choices"][0]["text"]
assert clean == re.sub(r"<\|[a-z_0-9]+\|>", "", ref_raw), (clean, ref_raw)
assert re.search(r"<\|extra_[0-9]+\|>", ref_long), "the long reference answer has no control token to leave out"
assert post("/v1/chat/completions", chat(long_prompt, max_tokens=200, **raw_text))[1]["choices"][0]["message"]["content"] == ref_long
clean = post("/v1/chat/completions", chat(long_prompt, max_tokens=200))[1]["choices"][0]["message"]["content"]
assert clean == re.sub(r"<\|[a-z_0-9]+\|>", "", ref_long) and clean != ref_long, (clean, ref_long)

# Streamed answers: the same text, OpenAI's chunk format, usage at the end.
text, chunks = stream("/v1/chat/completions", chat("Hello", stream_options={"include_usage": True}, **raw_text))
assert text == ref_chat, (text, ref_chat)
assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}, chunks[0]
assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) >= 2, "not streamed token by token"
assert chunks[-2]["choices"][0]["finish_reason"] in ("stop", "length") and chunks[-2]["choices"][0]["delta"] == {}
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == u["completion_tokens"], chunks[-1]
text, chunks = stream("/v1/completions", {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 20, **raw_text})
assert text == ref_raw and chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length"), (text, ref_raw)

# A stop string cuts the text before it, and the answer ends with "stop".
cut = ref_raw[3:6]
status, r = post("/v1/completions", {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 20, "stop": [cut], **raw_text})
assert r["choices"][0]["text"] == ref_raw[:ref_raw.find(cut)] and r["choices"][0]["finish_reason"] == "stop", (r, cut)

# 16 concurrent streaming clients: each gets the text it gets alone.
prompts = [f"Question {i}: tell me about number {i * 7}" for i in range(16)]
alone = [post("/v1/chat/completions", chat(p))[1]["choices"][0]["message"]["content"] for p in prompts]
def steps():
    for line in request("GET", "/metrics")[2].splitlines():
        if line.startswith("xftctl_steps_total "): return int(line.split()[1])
before = steps()
results = [None] * 16
def client(i):
    results[i] = stream("/v1/chat/completions", chat(prompts[i]))[0]
threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
for i in range(16):
    assert results[i] == alone[i], (i, results[i], alone[i])
used = steps() - before
assert used < 16 * 10, f"{used} steps for 16 concurrent requests: not batched"
print(f"16 concurrent clients: same text as alone, {used} steps")

# Malformed requests: 400 in OpenAI's error shape, and the server keeps serving.
def bad(path, body, param=None, code=None):
    status, r = post(path, body)
    assert status == 400, (status, r)
    e = r["error"]
    assert set(e) == {"message", "type", "param", "code"} and e["type"] == "invalid_request_error" and e["message"], e
    if param is not None: assert e["param"] == param, e
    if code is not None: assert e["code"] == code, e
    return e["message"]
bad("/v1/chat/completions", '{"messages": [', code="invalid_json")
assert bad("/v1/chat/completions", chat("x", temprature=1), param="temprature") == "unknown field 'temprature'"
assert bad("/v1/chat/completions", chat("x", max_tokens=-3), param="max_tokens") == "'max_tokens' must be a positive integer, got -3"
bad("/v1/completions", {"prompt": "word " * 400, "max_tokens": 1}, code="context_length_exceeded")
bad("/v1/completions", {"prompt": "hi", "max_tokens": 1000}, param="max_tokens", code="context_length_exceeded")
bad("/v1/chat/completions", chat("x", n=9), param="n")
status, _, text = request("GET", "/v1/nothing")
assert status == 404 and json.loads(text)["error"]["code"] == "not_found"
status, r = post("/v1/chat/completions", chat("Hello", **raw_text))
assert status == 200 and r["choices"][0]["message"]["content"] == ref_chat, "the server stopped serving after bad requests"

metrics = request("GET", "/metrics")[2]
for needle in ['xftctl_http_requests_total{endpoint="/v1/chat/completions",status="400"} 4',
               'xftctl_http_requests_total{endpoint="/v1/completions",status="400"} 2',
               "# TYPE xftctl_time_to_first_token_seconds histogram",
               "xftctl_requests_running 0", "xftctl_requests_waiting 0", "xftctl_kv_cache_bytes 0"]:
    assert needle in metrics, (needle, metrics)
print("API checks passed")
PY

stop_server "first server"
grep -q "^xftctl: server stopped$" "$tmp/server.log" || fail "no stop message"

# The API key and the queue limit: one request decodes, one waits, the third is refused.
# A key file others can read is refused before anything starts; its CRLF is not part of the key.
printf 's3cret-key-123\r\n' >"$tmp/key"
chmod 644 "$tmp/key"
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve 0 --api-key-file "$tmp/key" 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && [ "$(cat "$tmp/err")" = "xftctl: run qwen: --api-key-file $tmp/key: other users can read it (mode 0644); run: chmod 600 $tmp/key" ] \
  || fail "0644 key file: rc $rc, $(cat "$tmp/err")"
chmod 600 "$tmp/key"
start_server "$tmp/server2.log" --model "$tmp/m" --threads 2 --max-batch 1 --max-queue 1 --api-key-file "$tmp/key"
grep -q ", API key required$" "$tmp/server2.log" || fail "startup line does not mention the key"
python3 - "$PORT" <<'PY' || fail "key and queue checks"
import http.client, json, sys, threading, time
port = int(sys.argv[1])
def post(body, key=None, path="/v1/completions", scheme="Bearer", host=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json"}
    if key: h["Authorization"] = scheme + " " + key
    if host: h["Host"] = host
    c.request("POST", path, body=json.dumps(body), headers=h)
    r = c.getresponse()
    out = r.status, json.loads(r.read())
    c.close()
    return out
status, r = post({"prompt": "hi", "max_tokens": 2})
assert status == 401 and r["error"]["code"] == "invalid_api_key", (status, r)
assert post({"prompt": "hi", "max_tokens": 2}, key="wrong")[0] == 401
assert post({"prompt": "hi", "max_tokens": 2}, key="s3cret-key-12")[0] == 401
assert post({"prompt": "hi", "max_tokens": 2}, key="s3cret-key-123", scheme="bearer")[0] == 200
# With a key, a name that is not loopback may reach the server (a proxy, a LAN name).
assert post({"prompt": "hi", "max_tokens": 2}, key="s3cret-key-123", host="gpu-box.lan:8000")[0] == 200
c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/health"); assert c.getresponse().status == 200
status, r = post({"prompt": "hi", "max_tokens": 2, "temperature": 0}, key="s3cret-key-123")
assert status == 200 and r["usage"]["completion_tokens"] >= 1, (status, r)
long_body = {"prompt": "hi", "max_tokens": 2000, "temperature": 0, "stop": ["never-produced-stop-string"]}
results = []
def slow(): results.append(post(long_body, key="s3cret-key-123"))
threads = [threading.Thread(target=slow) for _ in range(2)]
for t in threads:
    t.start(); time.sleep(0.5)  # the first runs, the second waits
status, r = post(long_body, key="s3cret-key-123")
assert status == 429 and r["error"]["type"] == "rate_limit_error", (status, r)
for t in threads: t.join()
assert sorted(s for s, _ in results) == [200, 200], results
print("key and queue checks passed")
PY
if grep -q "s3cret-key-123" "$tmp/server2.log"; then fail "the API key was logged"; fi
stop_server "second server"

# A public address without a key: a warning, and only loopback Host names and same-origin pages are served.
ADDR=0.0.0.0 start_server "$tmp/server3.log" --model "$tmp/m" --threads 2 --max-new-tokens 2
grep -q "^xftctl: warning: serving on 0.0.0.0 with no API key: anyone who can reach this port can use the model (set XFTCTL_API_KEY or --api-key-file FILE)$" \
  "$tmp/server3.log" || fail "no warning for 0.0.0.0 without a key: $(cat "$tmp/server3.log")"
python3 - "$PORT" <<'PY' || fail "browser checks"
import http.client, json, sys
port = int(sys.argv[1])
def call(method, path, headers, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    out = r.status, r.read().decode()
    c.close()
    return out
body = json.dumps({"prompt": "hi", "max_tokens": 2, "temperature": 0})
# DNS rebinding: a hostile name that resolves to this machine.
status, text = call("POST", "/v1/completions", {"Host": f"rebind.evil.example:{port}"}, body)
assert status == 403 and json.loads(text)["error"]["code"] == "forbidden_host", (status, text)
# A hostile page posting text/plain (no preflight) to the loopback address.
status, text = call("POST", "/v1/completions", {"Origin": "http://evil.example", "Content-Type": "text/plain"}, body)
assert status == 403 and json.loads(text)["error"]["code"] == "forbidden_origin", (status, text)
# The chat page's own requests: same origin.
status, text = call("POST", "/v1/completions", {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"}, body)
assert status == 200, (status, text)
status, text = call("GET", "/health", {"Host": f"localhost:{port}"})
assert status == 200, (status, text)
# HEAD: headers only.
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
c.request("HEAD", "/")
r = c.getresponse()
assert r.status == 200 and int(r.getheader("Content-Length")) > 1000 and r.read() == b"", r.status
print("browser checks passed")
PY
stop_server "keyless public server"

# Two ranks under mpirun: the key is only in the control node's environment; it reaches rank 0
# through mpirun's environment (-x NAME), never through any command line.
XFTCTL_API_KEY=env-key-4567 start_server "$tmp/server4.log" --model "$tmp/m" --local 2 --max-new-tokens 2
grep -q "xftctl: 2 ranks, .*, API key required$" "$tmp/server4.log" || fail "2 ranks, key: $(cat "$tmp/server4.log")"
KEY=env-key-4567 python3 - "$PORT" <<'PY' || fail "2-rank key checks"
import http.client, json, os, sys
port = int(sys.argv[1])
key = os.environ["KEY"]
told = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
    except OSError:
        continue
    assert not any(key in a for a in argv), f"the key is on the command line of {pid}: {argv}"
    told += "--require-api-key" in argv
assert told >= 2, f"{told} processes were told to require the key (2 ranks expected)"
def post(key=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json"}
    if key: h["Authorization"] = "Bearer " + key
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "hi", "max_tokens": 2, "temperature": 0}), headers=h)
    r = c.getresponse()
    out = r.status, json.loads(r.read())
    c.close()
    return out
status, r = post()
assert status == 401 and r["error"]["code"] == "invalid_api_key", (status, r)
status, r = post(key)
assert status == 200 and r["usage"]["completion_tokens"] >= 1, (status, r)
print("2-rank key checks passed")
PY
if grep -q "env-key-4567" "$tmp/server4.log"; then fail "the API key was logged"; fi
stop_server "2-rank server"

# --api-key with several ranks: allowed, since the key goes to mpirun's environment, not its command line.
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve 0 --local 2 --api-key flag-key-8901 --dry-run >"$tmp/dry" 2>&1 || rc=$?
[ "$rc" = 0 ] && grep -q -- "-x XFTCTL_API_KEY .* --require-api-key" "$tmp/dry" && ! grep -q "flag-key-8901" "$tmp/dry" \
  || fail "--api-key with 2 ranks: rc $rc, $(cat "$tmp/dry")"

# A rank told to require a key that did not reach it refuses to serve.
rc=0; env -u XFTCTL_API_KEY "$XFTCTL" run qwen --model "$tmp/m" --rank-worker --require-api-key --serve 127.0.0.1:0 \
  2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && grep -q "^xftctl: rank 0 (.*): run qwen: an API key is required but XFTCTL_API_KEY is not in this rank's environment (mpirun did not forward it); not serving without it$" "$tmp/err" \
  || fail "rank without its key: rc $rc, $(cat "$tmp/err")"

# As clients call it: an IPv6 address, a name given with --host/--port, a served model name; raw
# HTTP/1.0 and chunked bodies; the fields SDKs send by default; errors in OpenAI's shape; the
# same completion_tokens every time; one access-log line per request.
LISTEN="--serve [::1]:0" start_server "$tmp/server5.log" --model "$tmp/m" --threads 2 --max-new-tokens 8 --served-model-name qwen-test
grep -q "^xftctl: serving qwen-test on http://\[::1\]:$PORT (OpenAI API under /v1, chat page at /)$" "$tmp/server5.log" \
  || fail "IPv6 startup line: $(cat "$tmp/server5.log")"
python3 - "$PORT" <<'PY' || fail "client checks"
import json, socket, sys
port = int(sys.argv[1])

def raw(data):
    """One request on a fresh IPv6 connection; the whole answer (status, headers, body)."""
    s = socket.create_connection(("::1", port), timeout=120)
    s.sendall(data.encode())
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    s.close()
    head, _, body = out.decode().partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = {k.lower(): v for k, _, v in (l.partition(": ") for l in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":  # the server's own chunked answers
        text, rest = "", body
        while True:
            size, _, rest = rest.partition("\r\n")
            if int(size, 16) == 0:
                break
            text, rest = text + rest[:int(size, 16)], rest[int(size, 16) + 2:]
        body = text
    return lines[0], headers, body

def post(path, body, version="HTTP/1.1"):
    data = json.dumps(body)
    host = "Host: localhost\r\n" if version == "HTTP/1.1" else ""
    return raw(f"POST {path} {version}\r\n{host}Content-Type: application/json\r\nContent-Length: {len(data.encode())}\r\nConnection: close\r\n\r\n{data}")

def error(message, param, code, type="invalid_request_error"):
    return {"error": {"message": message, "type": type, "param": param, "code": code}}

hello = {"prompt": "Hello", "max_tokens": 8, "temperature": 0}
status, _, body = post("/v1/completions", hello)
assert status == "HTTP/1.1 200 OK", (status, body)
expected = json.loads(body)
assert expected["model"] == "qwen-test", expected

# HTTP/1.0 without Host, and a chunked request body: the same answer.
status, _, body = post("/v1/completions", hello, version="HTTP/1.0")
assert status == "HTTP/1.1 200 OK" and json.loads(body)["choices"] == expected["choices"], (status, body)
data = json.dumps(hello)
chunked = "".join(f"{len(part):x}\r\n{part}\r\n" for part in (data[:5], data[5:])) + "0\r\n\r\n"
status, _, body = raw("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked)
assert status == "HTTP/1.1 200 OK" and json.loads(body)["choices"] == expected["choices"], (status, body)

# OPTIONS without a CORS origin allowed: 405 and what is allowed.
status, headers, body = raw("OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
assert status == "HTTP/1.1 405 Method Not Allowed" and headers["allow"] == "POST", (status, headers)
assert json.loads(body) == error("use POST for /v1/chat/completions", None, "method_not_allowed"), body

# The model's name: this one or none; any other is 404 model_not_found.
chat = {"messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}
status, _, body = post("/v1/chat/completions", dict(chat, model="gpt-4o"))
assert status == "HTTP/1.1 404 Not Found", status
assert json.loads(body) == error("The model 'gpt-4o' does not exist: this server serves 'qwen-test' (GET /v1/models; rename it with --served-model-name)", "model", "model_not_found"), body
status, _, body = raw("GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
assert [m["id"] for m in json.loads(body)["data"]] == ["qwen-test"], body

# The developer role reads as system; what SDKs send by default is accepted.
defaults = {"response_format": {"type": "text"}, "tools": [], "tool_choice": "auto", "parallel_tool_calls": True,
            "logit_bias": {}, "logprobs": False, "top_logprobs": 0, "user": "u", "n": 1, "model": "qwen-test"}
status, _, developer = post("/v1/chat/completions", dict(chat, **defaults))
assert status == "HTTP/1.1 200 OK", (status, developer)
system = dict(chat, messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
status, _, body = post("/v1/chat/completions", system)
assert json.loads(developer)["choices"] == json.loads(body)["choices"], (developer, body)
status, _, body = post("/v1/chat/completions", dict(chat, response_format={"type": "xml"}))
assert status == "HTTP/1.1 400 Bad Request", status
assert json.loads(body) == error("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"xml\"", "response_format", None), body
# Tools reach the chat template (built-in ChatML here: the Qwen1 test model ships none); a malformed one is a 400.
status, _, body = post("/v1/chat/completions", dict(chat, tools=[{"type": "function", "function": {"name": "f"}}]))
assert status == "HTTP/1.1 200 OK" and json.loads(body)["choices"][0]["message"]["role"] == "assistant", (status, body)
status, _, body = post("/v1/chat/completions", dict(chat, tools=[{"type": "function"}]))
assert status == "HTTP/1.1 400 Bad Request" and json.loads(body)["error"]["param"] == "tools[0]", (status, body)

# Unknown paths: 404 in the same shape.
status, _, body = raw("GET /v2/nothing HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
assert status == "HTTP/1.1 404 Not Found" and json.loads(body) == error("no such endpoint: GET /v2/nothing", None, "not_found"), body

# The same greedy request with a stop string: the same text and usage every time, whole or streamed.
text = expected["choices"][0]["text"]
stop = next(c for c in text[1:] if c.isascii() and c.isprintable() and c != " ")
stopped = dict(hello, max_tokens=8, stop=[stop])
answers = [json.loads(post("/v1/completions", stopped)[2]) for _ in range(3)]
assert len({json.dumps([a["choices"], a["usage"]]) for a in answers}) == 1, answers
assert answers[0]["choices"][0]["text"] == text[:text.index(stop)] and answers[0]["choices"][0]["finish_reason"] == "stop", answers[0]
for _ in range(3):
    _, _, body = post("/v1/completions", dict(stopped, stream=True, stream_options={"include_usage": True}))
    usage = [json.loads(e[6:]) for e in body.split("\n\n") if e.startswith("data: {")][-1]["usage"]
    assert usage == answers[0]["usage"], (usage, answers[0]["usage"])
print("client checks passed")
PY
stop_server "IPv6 server"  # a request's line follows its answer: read them once every handler is done
# One access-log line per request (method, path, status, tokens, time), never a body.
grep -Eq "xftctl: serve: POST /v1/completions 200 prompt=1 completion=[0-9]+ [0-9]+ms$" "$tmp/server5.log" \
  || fail "no access-log line: $(cat "$tmp/server5.log")"
grep -Eq "xftctl: serve: OPTIONS /v1/chat/completions 405 prompt=0 completion=0 [0-9]+ms$" "$tmp/server5.log" \
  || fail "no access-log line for the 405: $(cat "$tmp/server5.log")"
[ "$(grep -c "xftctl: serve: " "$tmp/server5.log")" = 18 ] || fail "not one access-log line per request: $(cat "$tmp/server5.log")"
if grep -q "Be brief" "$tmp/server5.log"; then fail "a request body was logged"; fi

LISTEN="--host localhost --port 0" start_server "$tmp/server6.log" --model "$tmp/m" --threads 2 --max-new-tokens 2
grep -q "^xftctl: serving m on http://localhost:$PORT " "$tmp/server6.log" || fail "--host/--port: $(cat "$tmp/server6.log")"
[ "$(curl -s "http://127.0.0.1:$PORT/health")" = '{"status":"ok"}' ] || fail "--host localhost: no answer on 127.0.0.1"
stop_server "--host/--port server"

# Bad flags fail before loading anything, with one line naming the flag.
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve nonsense 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && [ "$(cat "$tmp/err")" = "xftctl: run qwen: --serve nonsense: expected [HOST:]PORT, e.g. 8000, localhost:8000, 0.0.0.0:8000 or [::1]:8000" ] \
  || fail "bad --serve: rc $rc, $(cat "$tmp/err")"
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve ::1:8000 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && [ "$(cat "$tmp/err")" = "xftctl: run qwen: --serve ::1:8000: expected [HOST:]PORT, e.g. 8000, localhost:8000, 0.0.0.0:8000 or [::1]:8000 (an IPv6 address goes in brackets)" ] \
  || fail "unbracketed IPv6: rc $rc, $(cat "$tmp/err")"
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve no-such-host.invalid:8000 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && \
  grep -q "^xftctl: run qwen: --serve no-such-host.invalid:8000: cannot listen on 'no-such-host.invalid': .* (give an address such as 127.0.0.1, 0.0.0.0 or \[::1\], or a name this machine resolves)$" "$tmp/err" \
  || fail "unresolvable --serve: rc $rc, $(cat "$tmp/err")"
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --serve 8000 --port 8001 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && grep -q "^xftctl: run qwen: --serve excludes --port" "$tmp/err" || fail "--serve with --port: rc $rc, $(cat "$tmp/err")"
rc=0; "$XFTCTL" run qwen --model "$tmp/m" --host localhost 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] && grep -q "^xftctl: run qwen: --host requires --port" "$tmp/err" || fail "--host alone: rc $rc, $(cat "$tmp/err")"
echo "PASS serve"
