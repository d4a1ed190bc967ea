#!/usr/bin/env bash
# `xftctl model make-test` writes the golden test models bit-exactly with
# their tokenizer files; `xftctl model check` validates and rejects (also as --json).
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

golden="$XFT_SOURCE_DIR/tests/data/golden"
tokenizer="$XFT_SOURCE_DIR/third_party/tokenizer-qwen3"
[[ -f $tokenizer/tokenizer.json ]] || fail "$tokenizer missing: run scripts/fetch-tokenizer.sh"

golden_field() {  # FILE KEY -> value of a top-level string field
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

for name in qwen1-tiny-s5 qwen2-tiny-s7 qwen3-tiny-s11; do
  step "make-test $name"
  args=$(golden_field "$golden/$name.json" generator)
  args=${args%%--defaults:*}
  out="$TEST_TMP/$name"
  # shellcheck disable=SC2086  # the generator line is a list of flags
  xft model make-test "$out" $args --tokenizer-dir "$tokenizer"
  assert_eq 0 "$RC" "make-test $name exit code ($ERR)"
  digest=$(sha256sum "$out/model.safetensors" | cut -d' ' -f1)
  assert_eq "$(golden_field "$golden/$name.json" model_safetensors_sha256)" "$digest" "$name model.safetensors sha256"
  python3 - "$golden/$name.json" "$out/config.json" <<'PY' || fail "$name config.json differs from the golden config"
import json, sys
assert json.load(open(sys.argv[1]))["config"] == json.load(open(sys.argv[2]))
PY
  assert_contains "$OUT" "wrote $out/config.json (" "$name output"
  assert_contains "$OUT" "wrote $out/model.safetensors ($(stat -c %s "$out/model.safetensors") bytes)" "$name output"
  if [[ $name == qwen1-* ]]; then
    [[ -f $out/qwen.tiktoken && ! -e $out/tokenizer.json ]] || fail "qwen: expected qwen.tiktoken only"
    # Rank 0 is the byte "!" (base64 IQ==); Qwen's 151643 ordinary tokens, one per line.
    assert_eq "IQ== 0" "$(head -n 1 "$out/qwen.tiktoken")" "first qwen.tiktoken line"
    assert_eq 151643 "$(wc -l <"$out/qwen.tiktoken")" "qwen.tiktoken lines"
  else
    cmp -s "$tokenizer/tokenizer.json" "$out/tokenizer.json" || fail "$name tokenizer.json differs from the source"
    cmp -s "$tokenizer/tokenizer_config.json" "$out/tokenizer_config.json" || fail "$name tokenizer_config.json differs"
  fi
  xft model check "$out"
  assert_eq 0 "$RC" "model check $name exit code ($ERR)"
done
assert_eq "$TEST_TMP/qwen3-tiny-s11: Qwen3ForCausalLM, 2 layers, hidden 64, heads 4 (kv 2, head_dim 32), intermediate 128, vocab 151936, tied embeddings, 24 tensors, 18.74 MiB: OK" \
  "$OUT" "model check output"
xft model check "$TEST_TMP/qwen3-tiny-s11" --json
assert_eq 0 "$RC" "model check --json exit code ($ERR)"
assert_eq '{"dir":"'"$TEST_TMP"'/qwen3-tiny-s11","architecture":"Qwen3ForCausalLM","layers":2,"hidden":64,"heads":4,"kv_heads":2,"head_dim":32,"intermediate":128,"vocab":151936,"tie_embeddings":true,"quant":null,"tensors":24,"bytes":19645312,"ok":true}' \
  "$(jq -c . <<<"$OUT")" "model check --json"
ls "$TEST_TMP" | grep -q xftctl-tmp && fail "a temp folder was left behind"

step "a non-empty output directory is kept unless --force"
xft model make-test "$TEST_TMP/qwen2-tiny-s7" --arch qwen2 --seed 1 --no-tokenizer
assert_eq 1 "$RC" "exit code"
assert_eq "xftctl: $TEST_TMP/qwen2-tiny-s7 exists and is not empty; remove it or pass --force to replace it" "$ERR" "error"
xft model make-test "$TEST_TMP/qwen2-tiny-s7" --arch qwen2 --seed 1 --no-tokenizer --force
assert_eq 0 "$RC" "--force exit code ($ERR)"
[[ ! -e $TEST_TMP/qwen2-tiny-s7/tokenizer.json ]] || fail "--force kept the old tokenizer.json"

step "bad options"
xft model make-test "$TEST_TMP/x" --arch llama
assert_eq "1|xftctl: --arch: unknown architecture \"llama\" (expected qwen, qwen2, qwen3, qwen2_moe, qwen3_moe, qwen3_5 or qwen3_5_moe)" "$RC|$ERR" "bad --arch"
xft model make-test "$TEST_TMP/x" --arch qwen2 --kv-heads 3 --no-tokenizer
assert_eq "1|xftctl: --kv-heads: must divide --heads 4" "$RC|$ERR" "bad --kv-heads"
xft model make-test "$TEST_TMP/x" --arch qwen2 --tokenizer-dir "$TEST_TMP/none"
assert_eq "1|xftctl: no tokenizer.json + tokenizer_config.json in $TEST_TMP/none (run scripts/fetch-tokenizer.sh, set XFTCTL_TOKENIZER_DIR, or pass --no-tokenizer)" \
  "$RC|$ERR" "missing tokenizer"
[[ ! -e $TEST_TMP/x ]] || fail "a failed make-test left $TEST_TMP/x"

step "model check rejects broken checkpoints"
model="$TEST_TMP/qwen3-tiny-s11"
truncate -s -2 "$model/model.safetensors"
xft model check "$model"
assert_eq 1 "$RC" "truncated: exit code"
assert_contains "$ERR" "xftctl: $model/model.safetensors: tensor model.norm.weight: data_offsets [" "truncated"
assert_contains "$ERR" "reach beyond the data section" "truncated"
rm "$model/model.safetensors"
xft model check "$model"
assert_eq "1|xftctl: $model/model.safetensors: missing (and no model.safetensors.index.json for a sharded checkpoint)" \
  "$RC|$ERR" "missing weights"
xft model check "$model" --json
assert_eq "1|{\"dir\":\"$model\",\"ok\":false,\"error\":\"$model/model.safetensors: missing (and no model.safetensors.index.json for a sharded checkpoint)\"}" \
  "$RC|$(jq -c . <<<"$OUT")" "model check --json of a broken checkpoint"
echo PASS
