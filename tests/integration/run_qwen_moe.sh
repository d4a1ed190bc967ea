#!/usr/bin/env bash
# Mixture-of-experts Qwen through the real binary: `model make-test` takes
# each MoE golden's generator line and writes its exact model.safetensors
# (sha256), and `run qwen --dump-logits` on it gives the reference logits of
# every case within the fp32 tolerance on 1 rank and on 2 ranks (--local 2);
# `run qwen --bench --profile` on a cut MoE model reports total and active
# parameters, bytes per token and router/expert time.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

source "$XFT_SOURCE_DIR/tests/integration/golden_lib.sh"

# mpirun's ranks must reach the models: /run is shared with them as the dense TP test does.
shared=$(mktemp -d /run/xft-moe-test-XXXXXX)
remove_on_exit "$shared"
X=$XFTCTL

for name in qwen3moe-tiny-s33 qwen2moe-tiny-s37; do
  step "$name: make-test from the golden's generator line"
  # shellcheck disable=SC2046
  "$X" model make-test "$shared/$name" $(golden_field "$name" 'g["generator"]') >/dev/null \
    || fail "$name: make-test failed"
  assert_eq "$(golden_field "$name" 'g["model_safetensors_sha256"]')" \
    "$(sha256sum "$shared/$name/model.safetensors" | cut -d' ' -f1)" "$name: model.safetensors sha256"
  checked=$("$X" model check "$shared/$name") || fail "$name: model check refused it"
  assert_contains "$checked" "intermediate 128, 8 experts (top 2, width 32" "$name: model check shows the experts"

  cases=$(golden_field "$name" 'len(g["cases"])')
  for ranks in 1 2; do
    for ((c = 0; c < cases; ++c)); do
      ids=$(golden_field "$name" "','.join(map(str, g['cases'][$c]['prompt']))")
      n=$(golden_field "$name" "len(g['cases'][$c]['prompt'])")
      rank_args=()
      ((ranks > 1)) && rank_args=(--local "$ranks" --cores-per-rank 1)
      out=$("$X" run qwen "${rank_args[@]}" --model "$shared/$name" --dtype fp32 --kv-dtype fp32 \
              --prompt-ids "$ids" --dump-logits "$shared/logits.bin" 2>"$TEST_TMP/err") \
        || fail "$name, $ranks rank(s), case $c: dump-logits failed: $(cat "$TEST_TMP/err")"
      assert_contains "$out" "wrote $shared/logits.bin: $n positions x 151936 logits (float32)" "$name: dump-logits said"
      result=$(check_logits "$name" "$c" "$shared/logits.bin") \
        || fail "$name, $ranks rank(s), case $c: logits differ from the reference: $result"
      echo "ok: $name, $ranks rank(s), case $c: $result"
    done
  done
done

step "--bench on a MoE model cut to 1 layer: total and active parameters, bytes per token, router/expert profile"
"$X" run qwen --fake-model "$shared/qwen3moe-tiny-s33" --layers 1 --bench --input-tokens 4 --output-tokens 2 --iters 1 \
  --warmup 0 --threads 2 --max-context 64 --profile >"$TEST_TMP/bench" 2>&1 || fail "MoE bench: $(cat "$TEST_TMP/bench")"
bench=$(cat "$TEST_TMP/bench")
assert_contains "$bench" "model        $shared/qwen3moe-tiny-s33, 1 layers (fake weights, seed 0)" "bench names the cut model"
grep -qE '^parameters   [0-9]+\.[0-9]+ B total, [0-9]+\.[0-9]+ B active per token$' <<<"$bench" \
  || fail "bench: no parameter line: $bench"
grep -qE '^weights      [0-9.]+ MiB on rank 0, [0-9.]+ MiB read per token$' <<<"$bench" \
  || fail "bench: no bytes-per-token line: $bench"
assert_contains "$bench" "experts: milliseconds over the run, per rank: router / experts" "profile: MoE section"
grep -qE '^0 +[0-9.]+ / +[0-9.]+$' <<<"$(sed -n '/^experts:/,$p' <<<"$bench")" || fail "profile: no router/expert row: $bench"
echo "ok: bench reports parameters, bytes per token and router/expert time"
