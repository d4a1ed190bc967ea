#!/usr/bin/env bash
# xftctl tokenize: ids as a JSON array, --decode back to the exact text, via
# tokenizer.json and via a qwen.tiktoken-only directory, stdin input,
# special tokens, and one-line errors with a non-zero exit.
set -euo pipefail
: "${XFTCTL:?path of the built xftctl}"
: "${XFT_SOURCE_DIR:?path of the source tree}"
vocab="$XFT_SOURCE_DIR/third_party/tokenizer-qwen3"
[[ -f "$vocab/tokenizer.json" ]] || { echo "FAIL: $vocab/tokenizer.json missing; run scripts/fetch-tokenizer.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [[ "$1" == "$2" ]] || fail "$3: got '$1', expected '$2'"; }

tok() { "$XFTCTL" tokenize --model "$vocab" "$@"; }

expect_eq "$(tok --text 'Hello world')" "[9707,1879]" "encode --text"
expect_eq "$(printf 'Hello world' | tok)" "[9707,1879]" "encode stdin"
# stdin is taken verbatim: the newline echo adds is a token (198).
expect_eq "$(echo 'Hello world' | tok)" "[9707,1879,198]" "encode stdin with newline"
expect_eq "$(tok --text '<|im_start|>user
What is RDMA?<|im_end|>')" "[151644,872,198,3838,374,37992,4835,30,151645]" "special tokens"
expect_eq "$(tok --no-special --text '<|im_end|>')" "[27,91,318,6213,91,29]" "--no-special"
expect_eq "$(tok --text '')" "[]" "empty text"

# --decode: JSON array or comma-separated; output is the text, byte for byte.
same_bytes() {  # file, expected text (printf format), what
  printf "$2" >"$work/expected"
  cmp -s "$1" "$work/expected" || fail "$3: got '$(cat "$1")'"
}
tok --decode --text '[9707,1879]' >"$work/out1"
same_bytes "$work/out1" 'Hello world' "decode JSON array (no newline added)"
expect_eq "$(tok --decode --text ' 9707, 1879 ')" "Hello world" "decode comma list"
expect_eq "$(echo '[108386,3837,99489,6313]' | tok --decode)" "你好，世界！" "decode stdin CJK"
tok --decode --text '[151644,77091,198]' >"$work/out2"
same_bytes "$work/out2" '<|im_start|>assistant\n' "decode keeps the final newline"

# Round trip of a mixed text through encode and decode.
text=$'def f(x):\n    return x * 2  # 🚀 分布式推理\tnaïve'
ids=$(tok --text "$text")
tok --decode --text "$ids" >"$work/round"
printf '%s' "$text" >"$work/orig"
cmp -s "$work/round" "$work/orig" || fail "round trip differs: $(cat "$work/round")"

# Qwen1 layout: only qwen.tiktoken in the model directory, written by a
# conversion the unit tests check; same ids for ordinary text.
mkdir "$work/qwen1"
python3 - "$vocab/tokenizer.json" "$work/qwen1/qwen.tiktoken" <<'PY'
import base64, json, sys
vocab = json.load(open(sys.argv[1], encoding="utf-8"))["model"]["vocab"]
# GPT-2 byte-level alphabet back to bytes.
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
to_byte = {chr(c): b for b, c in zip(bs, cs)}
with open(sys.argv[2], "w") as f:
    for token, rank in sorted(vocab.items(), key=lambda kv: kv[1]):
        f.write(base64.b64encode(bytes(to_byte[ch] for ch in token)).decode() + " " + str(rank) + "\n")
PY
expect_eq "$("$XFTCTL" tokenize --model "$work/qwen1" --text 'Hello world<|im_end|>')" "[9707,1879,151645]" "qwen.tiktoken"
expect_eq "$("$XFTCTL" tokenize --model "$work/qwen1" --decode --text '[151646]')" "<|extra_0|>" "Qwen1 extra token"

# Errors: one line, non-zero exit.
check_error() {  # expected-message-pattern, command...
  local pattern=$1; shift
  if "$@" >"$work/out" 2>"$work/err"; then fail "'$*' succeeded"; fi
  [[ $(wc -l <"$work/err") -eq 1 ]] || fail "'$*' error is not one line: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "'$*' error '$(cat "$work/err")' lacks '$pattern'"
}
mkdir "$work/empty"
check_error "$work/empty: no tokenizer found (looked for tokenizer.json and qwen.tiktoken)" \
  "$XFTCTL" tokenize --model "$work/empty" --text hi
check_error "--text: item 1 (200000) is outside the vocabulary (ids 0..151668)" tok --decode --text '[1,200000]'
check_error '--text: item 1 ("x") is not an integer token id' tok --decode --text '1,x'
check_error "not a JSON array of ids" tok --decode --text '[1,'
printf 'IQ== 0\nbad-line\n' >"$work/qwen1/qwen.tiktoken"
check_error "qwen.tiktoken:2: expected \"base64 rank\"" "$XFTCTL" tokenize --model "$work/qwen1" --text hi
echo "tokenize_command: all checks passed"
