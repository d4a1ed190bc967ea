#!/usr/bin/env bash
# `xftctl run qwen` end to end on the built binary with the deterministic
# Qwen1 test model (golden qwen1-tiny-s5): logits dumped for a prompt match the
# independent reference, a raw ChatML prompt streams exactly the reference's
# greedy continuation, chat keeps history, and the benchmark prints its figures.
set -euo pipefail
: "${XFTCTL:?path of the xftctl binary}"
: "${XFT_SOURCE_DIR:?source tree}"
source "$XFT_SOURCE_DIR/tests/integration/golden_lib.sh"
golden=$(golden_file qwen1-tiny-s5)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$XFTCTL" model make-test "$tmp/m" --arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000 >/dev/null
[ -f "$tmp/m/qwen.tiktoken" ] || fail "make-test wrote no qwen.tiktoken"

prompt_ids=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['cases'][0]['prompt'])))" "$golden")

# 1. --dump-logits: shape header and the reference's top logits at every position.
out=$("$XFTCTL" run qwen --model "$tmp/m" --dtype fp32 --kv-dtype fp16 --threads 2 \
        --prompt-ids "$prompt_ids" --dump-logits "$tmp/logits.bin")
[ "$out" = "wrote $tmp/logits.bin: 13 positions x 151936 logits (float32)" ] || fail "dump-logits said: $out"
result=$(check_logits qwen1-tiny-s5 0 "$tmp/logits.bin") || fail "logits differ from the reference: $result"
echo "logits ok: $result"

# 2. --prompt --raw --greedy streams the reference's greedy continuation.
# (the x keeps the prompt's final newline from $(...))
text=$("$XFTCTL" tokenize --model "$tmp/m" --decode <<<"[$prompt_ids]"; echo x)
text=${text%x}
expected=$(python3 -c "import json,sys; print(','.join(str(g['id']) for g in json.load(open(sys.argv[1]))['cases'][0]['greedy'][:8]))" "$golden")
expected_text=$("$XFTCTL" tokenize --model "$tmp/m" --decode <<<"[$expected]")
answer=$("$XFTCTL" run qwen --model "$tmp/m" --dtype fp32 --kv-dtype fp16 --raw --greedy \
           --max-new-tokens 8 --prompt "$text" 2>"$tmp/stats")
[ "$answer" = "$expected_text" ] || fail "greedy answer '$answer' != reference '$expected_text'"
grep -q '^\[8 tokens (length), first token .* ms, .* tokens/s after it\]$' "$tmp/stats" \
  || fail "stats line: $(cat "$tmp/stats")"

# 3. Sampling is deterministic for a seed (bf16 weights, ChatML template).
a=$("$XFTCTL" run qwen --model "$tmp/m" --prompt "Hello" --seed 3 --max-new-tokens 12 2>/dev/null)
b=$("$XFTCTL" run qwen --model "$tmp/m" --prompt "Hello" --seed 3 --max-new-tokens 12 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "seeded sampling differs: '$a' vs '$b'"

# 4. --chat: two turns and a reset on stdin.
chat=$(printf 'Hi\nMore\n/reset\n/exit\n' | \
       "$XFTCTL" run qwen --model "$tmp/m" --chat --greedy --max-new-tokens 4 2>/dev/null)
[ "$(grep -c 'conversation reset' <<<"$chat")" = 1 ] || fail "chat output: $chat"

# 5. --bench --json on a fake model with batch 2.
"$XFTCTL" run qwen --fake-model "$tmp/m/config.json" --bench --input-tokens 16 --output-tokens 4 \
  --batch-size 2 --iters 2 --warmup 1 --json >"$tmp/bench.json"
python3 - "$tmp/bench.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for key in ("first_token_ms", "next_token_ms", "next_token_p90_ms", "decode_tokens_per_s",
            "prefill_tokens_per_s", "weight_bytes"):
    assert key in j and j[key] > 0, (key, j.get(key))
assert j["batch_size"] == 2 and j["input_tokens"] == 16 and j["output_tokens"] == 4, j
assert j["next_token_p90_ms"] >= j["next_token_ms"] * 0.5
print("bench ok:", {k: j[k] for k in ("first_token_ms", "next_token_ms", "decode_tokens_per_s")})
PY

# 6. Errors are one line with exit 1.
set +e
err=$("$XFTCTL" run qwen --model "$tmp/m" --prompt-ids 1,x --dump-logits "$tmp/x.bin" 2>&1); rc=$?
set -e
[ "$rc" = 1 ] || fail "bad ids exit $rc"
[ "$err" = "xftctl: run qwen: --prompt-ids: 'x' is not a token id; write e.g. 9707,1879" ] || fail "bad ids: $err"
set +e
err=$("$XFTCTL" run qwen --model "$tmp/m" --prompt-ids 151936 --dump-logits "$tmp/x.bin" 2>&1); rc=$?
set -e
[ "$rc" = 1 ] || fail "out-of-vocabulary exit $rc"
[ "$err" = "xftctl: run qwen: token id 151936 is outside the vocabulary [0,151936)" ] || fail "oov: $err"
[ ! -e "$tmp/x.bin" ] || fail "a failed dump left a file"
echo "run_qwen: all checks passed"
