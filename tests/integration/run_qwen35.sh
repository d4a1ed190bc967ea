#!/usr/bin/env bash
# Qwen3.5 (hybrid Gated DeltaNet + gated attention, dense and MoE) through the
# real binary: `model make-test` takes each Qwen3.5 golden's generator line and
# writes its exact model.safetensors (sha256), `model check` accepts it (the
# dense one then gains a vision-tower shard, skipped with one notice line), and
# `run qwen --dump-logits` gives the reference logits of every case within the
# fp32 tolerance on 1 rank and 2 ranks (--local 2, the linear-attention
# heads split), every case, and on 4 ranks (one value head and one attention
# head a rank) the longest and the shortest case only, as each 4-rank launch
# costs seconds on a 2-core CI host; the longest case once more token by token
# (--token-by-token: the decode path) on 2 ranks; `run qwen --bench` on the
# qwen3.5-0.8b preset cut to 4 layers reports the per-sequence state and KV bytes.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

golden_file() {  # NAME -> the golden json (tests/data, else ../shared)
  local f="$XFT_SOURCE_DIR/tests/data/golden/$1.json"
  [[ -f $f ]] || f="$XFT_SOURCE_DIR/../shared/fixtures/golden/$1.json"
  echo "$f"
}
golden_field() {  # NAME PYTHON-EXPRESSION-OF-g
  python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print($2)" "$(golden_file "$1")"
}

# mpirun's ranks must reach the models: /run is shared with them as the dense TP test does.
shared=$(mktemp -d /run/xft-qwen35-test-XXXXXX)
remove_on_exit "$shared"
X=$XFTCTL

# check_logits NAME CASE FILE: the reference's top logits at every position of the case, within the fp32 tolerance.
check_logits() {
  python3 - "$(golden_file "$1")" "$2" "$3" <<'PY'
import json, struct, sys
golden = json.load(open(sys.argv[1]))
case = golden["cases"][int(sys.argv[2])]
data = open(sys.argv[3], "rb").read()
n, vocab = struct.unpack_from("<ii", data, 0)
assert (n, vocab) == (len(case["prompt"]), 248320), (n, vocab)
tol = golden["tolerance"]["fp32_max_abs_rel_to_std"] * case["logit_std"]
worst = 0.0
for p, pos in enumerate(case["positions"]):
    for token, expected in pos["top"]:
        got = struct.unpack_from("<f", data, 8 + 4 * (p * vocab + token))[0]
        worst = max(worst, abs(got - expected))
print(f"worst {worst:.2e} of tolerance {tol:.2e}")
if worst > tol:
    sys.exit(f"logits off by {worst} > {tol}")
PY
}

# add_vision_tower DIR: a second shard with two model.visual.* tensors and the
# index naming both shards, as a published Qwen3.5 checkpoint stores its vision
# tower; the text model's logits must not change and one line must say so.
add_vision_tower() {
  python3 - "$1" <<'PY'
import json, struct, sys
d = sys.argv[1]
def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))
tensors = {"model.visual.patch_embed.proj.weight": [4, 3], "model.visual.merger.norm.weight": [4]}
meta, data = {}, b""
for name, shape in tensors.items():
    count = 1
    for s in shape: count *= s
    meta[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * count]}
    data += struct.pack("<%df" % count, *([0.25] * count))
text = json.dumps(meta).encode()
text += b" " * (-len(text) % 8)
open(d + "/model-vision.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
weight_map = {name: "model.safetensors" for name in header(d + "/model.safetensors") if name != "__metadata__"}
weight_map.update({name: "model-vision.safetensors" for name in tensors})
json.dump({"metadata": {}, "weight_map": weight_map}, open(d + "/model.safetensors.index.json", "w"))
PY
}

for name in qwen35-tiny-s19 qwen35moe-tiny-s33; do
  step "$name: make-test from the golden's generator line"
  # shellcheck disable=SC2046
  "$X" model make-test "$shared/$name" $(golden_field "$name" 'g["generator"]') >/dev/null \
    || fail "$name: make-test failed"
  assert_eq "$(golden_field "$name" 'g["model_safetensors_sha256"]')" \
    "$(sha256sum "$shared/$name/model.safetensors" | cut -d' ' -f1)" "$name: model.safetensors sha256"
  "$X" model check "$shared/$name" >/dev/null || fail "$name: model check refused it"
  vision_tensors=0
  [[ $name == qwen35-tiny-s19 ]] && add_vision_tower "$shared/$name" && vision_tensors=2

  all_cases=$(golden_field "$name" '" ".join(map(str, range(len(g["cases"]))))')
  longest_and_shortest=$(golden_field "$name" \
    '" ".join(str(f(range(len(g["cases"])), key=lambda c: len(g["cases"][c]["prompt"]))) for f in (max, min))')
  for ranks in 1 2 4; do
    cases=$all_cases
    ((ranks == 4)) && cases=$longest_and_shortest
    for c in $cases; do
      ids=$(golden_field "$name" "','.join(map(str, g['cases'][$c]['prompt']))")
      n=$(golden_field "$name" "len(g['cases'][$c]['prompt'])")
      rank_args=()
      ((ranks > 1)) && rank_args=(--local "$ranks" --cores-per-rank 1)
      out=$("$X" run qwen "${rank_args[@]}" --model "$shared/$name" --dtype fp32 --kv-dtype fp32 \
              --prompt-ids "$ids" --dump-logits "$shared/logits.bin" 2>"$TEST_TMP/err") \
        || fail "$name, $ranks rank(s), case $c: dump-logits failed: $(cat "$TEST_TMP/err")"
      assert_contains "$out" "wrote $shared/logits.bin: $n positions x 248320 logits (float32)" "$name: dump-logits said"
      notices=$(grep -c "vision tower" "$TEST_TMP/err" || true)
      if ((vision_tensors > 0)); then
        assert_eq 1 "$notices" "$name, $ranks rank(s): one vision-tower notice line"
        assert_contains "$(cat "$TEST_TMP/err")" \
          "run qwen: $shared/$name: the vision tower's 2 tensors (model.visual.*) are skipped: only the text model runs, and a request that carries an image gets a 400" \
          "$name: the notice"
      else
        assert_eq 0 "$notices" "$name, $ranks rank(s): no vision-tower notice"
      fi
      result=$(check_logits "$name" "$c" "$shared/logits.bin") \
        || fail "$name, $ranks rank(s), case $c: logits differ from the reference: $result"
      echo "ok: $name, $ranks rank(s), case $c: $result"
    done
  done

  # The decode path (one forward step per token: the delta rule's one-step
  # recurrence) on 2 ranks, the longest case.
  c=${longest_and_shortest%% *}
  ids=$(golden_field "$name" "','.join(map(str, g['cases'][$c]['prompt']))")
  "$X" run qwen --local 2 --cores-per-rank 1 --model "$shared/$name" --dtype fp32 --kv-dtype fp32 \
    --prompt-ids "$ids" --token-by-token --dump-logits "$shared/logits.bin" >/dev/null 2>"$TEST_TMP/err" \
    || fail "$name, token by token: dump-logits failed: $(cat "$TEST_TMP/err")"
  result=$(check_logits "$name" "$c" "$shared/logits.bin") \
    || fail "$name, 2 ranks, token by token, case $c: logits differ from the reference: $result"
  echo "ok: $name, 2 ranks, token by token, case $c: $result"
done

step "--bench on qwen3.5-0.8b cut to 4 layers: the per-sequence state and KV bytes"
"$X" run qwen --fake-model qwen3.5-0.8b --layers 4 --bench --input-tokens 8 --output-tokens 2 --iters 1 \
  --warmup 0 --threads 2 --max-context 64 >"$TEST_TMP/bench" 2>&1 || fail "bench: $(cat "$TEST_TMP/bench")"
bench=$(cat "$TEST_TMP/bench")
# 3 linear layers: (3 x 6144 conv inputs + 16 heads x 128 x 128) floats each = 3.21 MiB; one attention
# layer: 2 KV heads x 256 x 2 (k, v) x 2 bytes (bf16) = 2 KiB per position.
assert_contains "$bench" "sequence     3.21 MiB state + 2.0 KiB KV per position on rank 0: 3.2 MiB at 10 positions, 67.2 MiB at 32768" \
  "bench reports the sequence's state and KV"
