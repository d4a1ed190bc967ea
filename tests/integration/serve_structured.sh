#!/usr/bin/env bash
# Structured output through the real server on the random-weight test model
# (whose free output is noise) with the Qwen vocabulary: response_format
# json_schema and json_object answers parse and follow the schema, whole and
# streamed alike (same seed, same answer); tool_choice "required" and a named
# function give a well-formed call to one of the tools, finish_reason
# tool_calls, streamed too; hostile schemas (an unsupported keyword, a
# pathological pattern, deep nesting, a huge enum, recursion through $ref, a
# $ref expansion bomb) and bad tool_choice values get one clear 400 each and
# the server keeps serving.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
tmp=$TEST_TMP
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/server.log" ] && sed 's/^/  server: /' "$tmp/server.log" >&2; exit 1; }

"$XFTCTL" model make-test "$tmp/m" --arch qwen2 --seed 5 >/dev/null || fail "model make-test"
start_server "$tmp/server.log" --model "$tmp/m" --threads 2 --max-context 512 --max-batch 8

python3 - "$PORT" <<'PY' || fail "structured output checks"
import http.client, json, sys
port = int(sys.argv[1])

def post(body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.status, json.loads(r.read().decode())
    c.close()
    return out

def stream(body):
    """The streamed answer as (content, tool_calls by index, finish_reason)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.status
    events = r.read().decode().split("\n\n")
    c.close()
    assert events[-2] == "data: [DONE]", events[-3:]
    content, calls, finish = "", {}, None
    for e in events[:-2]:
        chunk = json.loads(e[len("data: "):])
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                if call.get("id"): slot["id"] = call["id"]
                fn = call.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice["finish_reason"]: finish = choice["finish_reason"]
    return content, calls, finish

chat = [{"role": "user", "content": "Describe a city as JSON."}]
schema = {"type": "object", "additionalProperties": False, "required": ["name", "population", "tags"],
          "properties": {"name": {"type": "string", "maxLength": 12},
                         "population": {"type": "integer"},
                         "kind": {"enum": ["capital", "town"]},
                         "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}}}
for seed in (1, 2, 3):
    body = {"messages": chat, "max_tokens": 60, "temperature": 1.0, "seed": seed,
            "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": True}}}
    status, r = post(body)
    assert status == 200, r
    text = r["choices"][0]["message"]["content"]
    city = json.loads(text)
    assert set(city) <= set(schema["properties"]) and {"name", "population", "tags"} <= set(city), text
    assert isinstance(city["name"], str) and len(city["name"]) <= 12, text
    assert isinstance(city["population"], int) and not isinstance(city["population"], bool), text
    assert city.get("kind", "town") in ("capital", "town"), text
    assert isinstance(city["tags"], list) and len(city["tags"]) <= 3, text
    assert all(isinstance(t, str) and len(t) <= 6 for t in city["tags"]), text
    assert r["choices"][0]["finish_reason"] in ("stop", "length"), r
    content, calls, finish = stream(body)
    assert (content, finish) == (text, r["choices"][0]["finish_reason"]), (content, text)

status, r = post({"messages": chat, "max_tokens": 40, "seed": 4, "response_format": {"type": "json_object"}})
assert status == 200, r
assert isinstance(json.loads(r["choices"][0]["message"]["content"]), dict), r

tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                          "unit": {"enum": ["C", "F"]}},
                         "required": ["city"]}}},
         {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]
names = set()
for seed in range(5):
    body = {"messages": chat, "tools": tools, "tool_choice": "required", "max_tokens": 60, "seed": seed}
    status, r = post(body)
    assert status == 200, r
    choice = r["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    calls = choice["message"]["tool_calls"]
    assert len(calls) == 1 and calls[0]["type"] == "function", calls
    fn = calls[0]["function"]
    assert fn["name"] in ("get_weather", "now"), fn
    args = json.loads(fn["arguments"])
    if fn["name"] == "get_weather":
        assert isinstance(args["city"], str) and len(args["city"]) <= 10 and args.get("unit", "C") in ("C", "F"), args
    names.add(fn["name"])
    content, streamed, finish = stream(body)
    assert finish == "tool_calls" and len(streamed) == 1, (finish, streamed)
    assert streamed[0]["name"] == fn["name"] and json.loads(streamed[0]["arguments"]) == args, (streamed, fn)

status, r = post({"messages": chat, "tools": tools, "max_tokens": 60, "seed": 9,
                  "tool_choice": {"type": "function", "function": {"name": "now"}}})
assert status == 200 and r["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "now", r

def refused(body, param, needle):
    status, r = post(dict({"messages": chat, "max_tokens": 8}, **body))
    assert status == 400, (status, r)
    assert r["error"]["param"] == param, r
    assert needle in r["error"]["message"], (needle, r["error"]["message"])

def schema_format(s):
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": s}}}

deep = {"type": "string"}
for _ in range(30): deep = {"type": "array", "items": deep}
defs = {"d%d" % i: {"type": "object", "properties": {"p%d" % p: {"$ref": "#/$defs/d%d" % (i + 1)} for p in range(10)}}
        for i in range(4)}
defs["d4"] = {"type": "integer"}
hostile = [
    (schema_format({"type": "string", "pattern": "^(a+)+$"}), "keyword 'pattern' at the schema's root is not supported"),
    (schema_format({"type": "object", "properties": {"a": {"type": "number", "minimum": 0}}}), "keyword 'minimum' at /properties/a"),
    (schema_format(deep), "schemas nested deeper than 16 levels"),
    (schema_format({"enum": list(range(100000))}), "'enum' at /enum must list 1 to 256 values"),
    (schema_format({"enum": ["x" * 5000]}), "longer than 1024 bytes"),
    (schema_format({"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}),
     "recursive schemas are not supported"),
    (schema_format({"$ref": "#"}), "recursive schemas are not supported"),
    (schema_format({"$defs": defs, "$ref": "#/$defs/d0"}), "the schema is too large"),
    (schema_format({"anyOf": [{"type": "object"}, {"type": "object"}]}), "can both start with '{'"),
    (schema_format({"type": "string", "maxLength": 10**12}), "'maxLength' at the schema's root must be an integer from 0 to 65536"),
    (schema_format("not a schema"), "must be an object"),
    ({"response_format": {"type": "json_schema"}}, "needs 'json_schema'"),
    ({"response_format": {"type": "yaml"}}, "'response_format.type' must be"),
]
for body, needle in hostile:
    refused(body, "response_format", needle)
refused({"tool_choice": "required"}, "tool_choice", "has no 'tools'")
refused({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "missing"}}}, "tool_choice",
        "not among 'tools'")
refused({"tools": tools, "tool_choice": "sometimes"}, "tool_choice", "must be \"none\", \"auto\"")
refused({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
          "properties": {"x": {"type": "string", "format": "date"}}}}}], "tool_choice": "required"}, "tools",
        "keyword 'format' at tools[0].function.parameters/properties/x")

status, r = post({"messages": chat, "max_tokens": 4})
assert status == 200, r  # still serving
PY
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || fail "the server's exit code after SIGTERM"
echo "serve_structured: ok"
