#!/usr/bin/env python3
"""Load generator for `xftctl run qwen --serve` (or any OpenAI-compatible server).

N concurrent clients each send R streaming /v1/completions requests with a
fixed prompt length and max_tokens (ignore_eos, so every answer has exactly
max_tokens tokens). Prints, per concurrency: aggregate tokens/s (all tokens /
wall time), decode tokens/s (tokens after each request's first / wall time
from the first request's first token to the last request's end), and the
p50 / p99 time to first token.

With --idle N --pid PID first: what N idle connections cost the server (its
resident memory and threads, read from /proc/PID) and whether a request still
gets through while they stay open. They come from N/50 loopback addresses
(127.0.0.2, ...), under the server's per-address connection cap.

With --schema-ab N: N rounds at the largest --clients level of streaming
chat requests, each round once without and once with a response_format
json_schema (the order alternating, as the machine may be loaded), all
greedy: aggregate tokens/s of each, their ratio per round and the median
ratio; every schema answer must parse as JSON (the count is printed).

With --chat-turns N: N two-turn chats, one after another, after the load
levels. Turn 1 sends a history of --chat-history-words words (about 500
tokens); turn 2 sends that history, turn 1's answer and --chat-new-words
more words. Prints each turn's time to first token, their ratio, and the
prompt tokens the server's prefix cache reused (from /metrics).

  python3 bench/serve_load.py --port 8000 --clients 1,4,16 --requests 2 --max-tokens 64
"""
import argparse, http.client, json, socket, statistics, threading, time


def start_completion(host, port, prompt, max_tokens):
    """A greedy streamed completion of exactly max_tokens: (start time, connection, its 200 response)."""
    start = time.monotonic()
    c = http.client.HTTPConnection(host, port, timeout=600)
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    return start, c, r


def one_request(host, port, prompt, max_tokens):
    start, c, r = start_completion(host, port, prompt, max_tokens)
    first, tokens, buffer = None, 0, b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if not event.startswith(b"data: {"):
                continue
            data = json.loads(event[6:])
            if first is None and data["choices"] and data["choices"][0].get("text"):
                first = time.monotonic()
            if data.get("usage"):
                tokens = data["usage"]["completion_tokens"]
    end = time.monotonic()
    c.close()
    return start, first or end, end, tokens


BENCH_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["name", "age", "email", "tags"],
    "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"},
        "member": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    "required": ["city", "zip"]},
    },
}


def one_chat_request(host, port, prompt, max_tokens, schema):
    """A greedy streamed chat answer: (start, first token, end, completion tokens, content)."""
    start = time.monotonic()
    c = http.client.HTTPConnection(host, port, timeout=600)
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}
    else:
        body["ignore_eos"] = True  # the free answer runs to max_tokens like the schema's noise does
    c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    first, tokens, buffer, content = None, 0, b"", ""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if not event.startswith(b"data: {"):
                continue
            data = json.loads(event[6:])
            if data["choices"] and data["choices"][0]["delta"].get("content"):
                first = first or time.monotonic()
                content += data["choices"][0]["delta"]["content"]
            if data.get("usage"):
                tokens = data["usage"]["completion_tokens"]
    end = time.monotonic()
    c.close()
    return start, first or end, end, tokens, content


def chat_level(host, port, clients, requests, prompt_words, max_tokens, schema):
    results, errors = [], []
    def client(i):
        for k in range(requests):
            prompt = " ".join(f"word{(i * 31 + k * 7 + j) % 97}" for j in range(prompt_words))
            try:
                results.append(one_chat_request(host, port, prompt, max_tokens, schema))
            except Exception as e:
                errors.append(str(e))
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.monotonic() - t0
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, e.g. {errors[0]}")
    parsed = 0
    for r in results:
        try:
            json.loads(r[4])
            parsed += 1
        except ValueError:
            pass
    tokens = sum(r[3] for r in results)
    return {"tokens": tokens, "wall_s": wall, "aggregate_tps": tokens / wall, "parsed": parsed, "requests": len(results)}


def schema_ab(host, port, clients, requests, prompt_words, max_tokens, rounds):
    print(f"json_schema vs free chat, {clients} concurrent streams, {requests} requests each, max_tokens {max_tokens}")
    print(f"{'round':>5} {'free tok/s':>11} {'schema tok/s':>13} {'ratio':>6} {'schema tokens':>14} {'valid JSON':>11}")
    ratios = []
    for k in range(rounds):
        order = [None, BENCH_SCHEMA] if k % 2 == 0 else [BENCH_SCHEMA, None]
        got = {}
        for schema in order:
            got[schema is not None] = chat_level(host, port, clients, requests, prompt_words, max_tokens, schema)
        free, constrained = got[False], got[True]
        ratio = constrained["aggregate_tps"] / free["aggregate_tps"]
        ratios.append(ratio)
        print(f"{k + 1:>5} {free['aggregate_tps']:>11.1f} {constrained['aggregate_tps']:>13.1f} {ratio:>6.2f} "
              f"{constrained['tokens']:>14} {constrained['parsed']:>5}/{constrained['requests']:<5}")
    print(f"median ratio (schema / free): {statistics.median(ratios):.2f}")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run_level(host, port, clients, requests, prompt_words, max_tokens):
    results, errors = [], []
    def client(i):
        for k in range(requests):
            prompt = " ".join(f"word{(i * 31 + k * 7 + j) % 97}" for j in range(prompt_words))
            try:
                results.append(one_request(host, port, prompt, max_tokens))
            except Exception as e:  # reported, and the level fails
                errors.append(str(e))
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.monotonic() - t0
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, e.g. {errors[0]}")
    tokens = sum(r[3] for r in results)
    decode_span = max(r[2] for r in results) - min(r[1] for r in results)
    ttft = [r[1] - r[0] for r in results]
    return {"clients": clients, "requests": len(results), "tokens": tokens, "wall_s": wall,
            "aggregate_tps": tokens / wall, "decode_tps": (tokens - len(results)) / decode_span,
            "ttft_p50_ms": 1000 * percentile(ttft, 50), "ttft_p99_ms": 1000 * percentile(ttft, 99)}


def rss_and_threads(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) / 1024.0, int(fields["Threads"])


def idle_cost(host, port, pid, count, prompt_words):
    run_level(host, port, 1, 1, prompt_words, 8)  # warm: buffers and threads of a served request exist
    time.sleep(0.5)
    rss0, threads0 = rss_and_threads(pid)
    ttft0 = one_request(host, port, "hello", 8)
    idle = []
    for i in range(count):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i // 50}", 0))
        s.connect((host, port))
        idle.append(s)
    time.sleep(1.0)
    rss1, threads1 = rss_and_threads(pid)
    start, first, end, _ = one_request(host, port, "hello", 8)
    for s in idle:
        s.close()
    print(f"{count} idle connections: server RSS {rss0:.1f} -> {rss1:.1f} MiB ({rss1 - rss0:+.1f}), "
          f"threads {threads0} -> {threads1}; a streamed request meanwhile: first token after "
          f"{1000 * (first - start):.0f} ms (alone: {1000 * (ttft0[1] - ttft0[0]):.0f} ms)")


def completion_turn(host, port, prompt, max_tokens):
    """One streamed completion: (time to first token in s, answer text, prompt tokens)."""
    start, c, r = start_completion(host, port, prompt, max_tokens)
    first, text, prompt_tokens = None, "", 0
    for line in r.read().split(b"\n\n"):
        if not line.startswith(b"data: {"):
            continue
        data = json.loads(line[6:])
        if data["choices"] and data["choices"][0].get("text"):
            text += data["choices"][0]["text"]
        if data.get("usage"):
            prompt_tokens = data["usage"]["prompt_tokens"]
    c.close()
    return text, prompt_tokens, start


def streamed_ttft(host, port, prompt, max_tokens):
    start, first, _, _ = one_request(host, port, prompt, max_tokens)
    return first - start


def metric(host, port, name):
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def chat_turns(host, port, chats, history_words, new_words, max_tokens):
    """Turn 2 repeats turn 1's prompt and answer: its first token should wait only for the new words."""
    print(f"two-turn chats (turn 1: {history_words} words of history; turn 2: + the answer and {new_words} words):")
    ratios = []
    for n in range(chats):
        history = " ".join(f"chat{n}topic{(j * 37) % 1009}" for j in range(history_words))
        ttft1 = streamed_ttft(host, port, history, max_tokens)
        # The answer text, as a client would send it back: the same greedy tokens again.
        answer, tokens1, _ = completion_turn(host, port, history, max_tokens)
        turn2 = history + answer + " " + " ".join(f"next{n}q{j}" for j in range(new_words))
        reused0 = metric(host, port, "xftctl_prefix_cache_hit_tokens_total")
        ttft2 = streamed_ttft(host, port, turn2, max_tokens)
        reused = metric(host, port, "xftctl_prefix_cache_hit_tokens_total") - reused0
        _, tokens2, _ = completion_turn(host, port, turn2, 1)
        ratios.append(ttft2 / ttft1)
        print(f"  chat {n + 1}: turn 1 {tokens1} prompt tokens, first token {1000 * ttft1:.0f} ms; "
              f"turn 2 {tokens2} prompt tokens (+{tokens2 - tokens1}), {reused:.0f} reused, "
              f"first token {1000 * ttft2:.0f} ms; turn 2 / turn 1 = {ttft2 / ttft1:.3f}")
    print(f"  median turn 2 / turn 1 first-token time: {statistics.median(ratios):.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=2, help="per client")
    ap.add_argument("--prompt-words", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--idle", type=int, default=0, help="first: the cost of this many idle connections")
    ap.add_argument("--pid", type=int, help="the server's pid (for --idle)")
    ap.add_argument("--chat-turns", type=int, default=0, help="last: this many two-turn chats (prefix reuse)")
    ap.add_argument("--chat-history-words", type=int, default=85)
    ap.add_argument("--chat-new-words", type=int, default=5)
    ap.add_argument("--schema-ab", type=int, default=0, help="only: this many rounds of free vs json_schema chat")
    a = ap.parse_args()
    if a.schema_ab:
        run_level(a.host, a.port, 1, 1, a.prompt_words, 8)  # warm-up
        clients = max(int(n) for n in a.clients.split(",") if n)
        schema_ab(a.host, a.port, clients, a.requests, a.prompt_words, a.max_tokens, a.schema_ab)
        return
    if a.idle:
        idle_cost(a.host, a.port, a.pid, a.idle, a.prompt_words)
    run_level(a.host, a.port, 1, 1, a.prompt_words, 8)  # warm-up
    rows = [run_level(a.host, a.port, int(n), a.requests, a.prompt_words, a.max_tokens)
            for n in a.clients.split(",") if n]
    if not rows:  # --clients "": only the chats
        chat_turns(a.host, a.port, a.chat_turns, a.chat_history_words, a.chat_new_words, 8)
        return
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    base = rows[0]
    print(f"{'clients':>7} {'requests':>8} {'tokens':>7} {'agg tok/s':>10} {'x1':>6} {'decode tok/s':>13} {'x1':>6} "
          f"{'TTFT p50 ms':>12} {'TTFT p99 ms':>12}")
    for r in rows:
        print(f"{r['clients']:>7} {r['requests']:>8} {r['tokens']:>7} {r['aggregate_tps']:>10.1f} "
              f"{r['aggregate_tps'] / base['aggregate_tps']:>6.2f} {r['decode_tps']:>13.1f} "
              f"{r['decode_tps'] / base['decode_tps']:>6.2f} {r['ttft_p50_ms']:>12.0f} {r['ttft_p99_ms']:>12.0f}")
    if a.chat_turns:
        chat_turns(a.host, a.port, a.chat_turns, a.chat_history_words, a.chat_new_words, 8)


if __name__ == "__main__":
    main()
