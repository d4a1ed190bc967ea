#!/usr/bin/env bash
# `xftctl run qwen --serve` on a rank plan across 2 namespace test hosts (real
# sshd, mpirun over TCP): rank 0 serves HTTP on h01, both ranks compute, and
# the answers — whole, streamed and 4 at once — equal those of one rank on
# this machine. The API key is set only in the control node's environment:
# rank 0 on h01 gets it through mpirun (never on a command line) and answers
# 401 without it. SIGTERM stops every rank on every host.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

# Every host sees /run, so the binary and the model live there.
shared=$(mktemp -d /run/xft-serve-test-XXXXXX)
remove_on_exit "$shared"
cp "$XFTCTL" "$shared/xftctl"
X=$shared/xftctl
# The Qwen1 test model: its greedy answers are long and varied (the qwen2 one answers newlines).
"$X" model make-test "$shared/m" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000 >/dev/null

# ask PORT HOST OUT: the answers the checks compare, as JSON lines; with KEY set, /v1 must
# answer 401 without it (and gets it on every request).
ask() {
  python3 - "$1" "$2" >"$3" <<'PY'
import http.client, json, os, sys, threading, time
port, host = int(sys.argv[1]), sys.argv[2]
key = os.environ.get("KEY", "")
auth = {"Authorization": "Bearer " + key} if key else {}
for _ in range(600):
    try:
        c = http.client.HTTPConnection(host, port, timeout=2); c.request("GET", "/health")
        if c.getresponse().status == 200: break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("no /health in 60 s")
if key:
    c = http.client.HTTPConnection(host, port, timeout=120)
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "hi", "max_tokens": 1}), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 401 and json.loads(r.read())["error"]["code"] == "invalid_api_key", r.status
def call(path, body):
    c = http.client.HTTPConnection(host, port, timeout=120)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **auth})
    r = c.getresponse()
    text = r.read().decode()
    assert r.status == 200, (r.status, text)
    if not body.get("stream"): return json.loads(text)["choices"][0]
    out = ""
    for event in text.split("\n\n"):
        if event.startswith("data: {"):
            for ch in json.loads(event[6:])["choices"]:
                out += ch["delta"].get("content", "") if "delta" in ch else ch["text"]
    return out
chat = lambda p: {"messages": [{"role": "user", "content": p}], "temperature": 0, "max_tokens": 12}
print(json.dumps(call("/v1/chat/completions", chat("Hello"))["message"]["content"]))
print(json.dumps(call("/v1/completions", {"prompt": "The capital of France is", "temperature": 0, "max_tokens": 12})["text"]))
print(json.dumps(call("/v1/chat/completions", dict(chat("Hello"), stream=True))))
results = [None] * 4
def client(i): results[i] = call("/v1/chat/completions", dict(chat(f"Tell me about {i}"), stream=True))
threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
for r in results: print(json.dumps(r))
PY
}

step "one rank on this machine"
port=$((20000 + $$ % 20000))
"$X" run qwen --model "$shared/m" --threads 1 --serve "127.0.0.1:$port" 2>"$TEST_TMP/one.log" &
one_pid=$!
ask "$port" 127.0.0.1 "$TEST_TMP/one.json" || fail "one rank: $(cat "$TEST_TMP/one.log")"
kill -TERM "$one_pid"
wait "$one_pid" || fail "one rank: exit code $? after SIGTERM"
assert_eq 7 "$(grep -c . "$TEST_TMP/one.json")" "answers from one rank"

step "2 ranks on 2 test hosts"
start_cluster 2 --auth key
kh=$TEST_TMP/known_hosts
"$X" -i "$CLUSTER_INVENTORY" ping --accept-new-host-keys --known-hosts "$kh" >/dev/null
key=cluster-key-$RANDOM$RANDOM
XFTCTL_API_KEY=$key "$X" -i "$CLUSTER_INVENTORY" run qwen --model "$shared/m" --known-hosts "$kh" --cores-per-rank 1 \
  --ranks-per-host 1 --comm mpi --serve "0.0.0.0:$port" >"$TEST_TMP/two.out" 2>"$TEST_TMP/two.log" &
two_pid=$!
KEY=$key ask "$port" "$HOST_H01_ADDR" "$TEST_TMP/two.json" || fail "2 ranks: $(cat "$TEST_TMP/two.log")"
assert_eq "$(cat "$TEST_TMP/one.json")" "$(cat "$TEST_TMP/two.json")" "answers of 2 ranks vs 1 rank"
grep -q "xftctl: 2 ranks, .*, API key required$" "$TEST_TMP/two.log" || fail "rank 0 did not report 2 ranks and the key: $(cat "$TEST_TMP/two.log")"
echo "ok: 401 without the key, answers with it"
KEY=$key python3 - <<'PY' || fail "the key is on a command line"
import os
key = os.environ["KEY"]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        continue
    assert key not in argv, f"pid {pid}: {argv}"
PY
assert_not_contains "$(cat "$TEST_TMP/two.log" "$TEST_TMP/two.out")" "$key" "the key in the output"

step "SIGTERM stops every rank"
kill -TERM "$two_pid"
rc=0
for _ in $(seq 1 150); do kill -0 "$two_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$two_pid" 2>/dev/null && fail "still running 15 s after SIGTERM"
wait "$two_pid" || rc=$?
sleep 1
assert_eq "" "$(pgrep -f "$shared/xftctl" || true)" "no rank left on any host"
assert_eq 0 "$rc" "exit code after SIGTERM"
assert_contains "$(cat "$TEST_TMP/two.log")" "xftctl: run qwen: stopped; every rank exited cleanly" "clean stop reported"
echo "ok: stopped, every rank exited 0, nothing left"
echo "PASS serve_cluster"
