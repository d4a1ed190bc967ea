#!/usr/bin/env bash
# 4-bit checkpoints through `xftctl run qwen --dump-logits`: GPTQ (Qwen2 names,
# groups of 32; Qwen1 names with desc_act; Qwen3.5-MoE with each expert packed
# apart) and AWQ test checkpoints from
# `model make-test --quant`, loaded as written, against the same models
# dequantized by the Python below (from the published layouts, independently
# of xftctl) into plain fp32 checkpoints and run in fp32: on the reference's
# top-8 tokens at every position |diff| <= 0.05 of the logit standard
# deviation, top-1 equal where it leads clearly; on one rank and on two
# (--local 2).
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

X=$XFTCTL
models=$TEST_TMP/models
mkdir -p "$models"
PROMPT=17,400,3001,9,77,1234,2048,5,4000,12

declare -A make_args=(
  [gptq-g32]="--arch qwen2 --seed 3 --quant gptq --group-size 32"
  [awq-g64]="--arch qwen2 --seed 4 --quant awq --group-size 64"
  [qwen1-gptq-desc-act]="--arch qwen --seed 5 --inter 256 --quant gptq --group-size 32 --desc-act"
  [qwen35moe-gptq-g32]="--arch qwen3_5_moe --seed 6 --quant gptq --group-size 32 --experts 4 --moe-inter 64 --linear-v-heads 16"
)
names=(gptq-g32 awq-g64 qwen1-gptq-desc-act qwen35moe-gptq-g32)

# dequantize SRC DST: DST is SRC with every projection's qweight/qzeros/scales(/g_idx)
# replaced by "<base>.weight" F32 [out, in] = (q - zero) * scale, and no quantization_config;
# Qwen3.5-MoE's experts stacked back as its bf16 checkpoints store them.
dequantize() {
  python3 - "$1" "$2" <<'PY'
import json, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
config = json.load(open(f"{src}/config.json"))
q = config.pop("quantization_config")
json.dump(config, open(f"{dst}/config.json", "w"), indent=2)
for extra in ("generation_config.json",):
    if os.path.exists(f"{src}/{extra}"):
        open(f"{dst}/{extra}", "w").write(open(f"{src}/{extra}").read())
raw = open(f"{src}/model.safetensors", "rb").read()
n = struct.unpack_from("<Q", raw, 0)[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
def tensor(name):
    e = header[name]
    b, e2 = e["data_offsets"]
    return e["dtype"], e["shape"], data[b:e2]
def ints(name):
    _, shape, b = tensor(name)
    return shape, struct.unpack(f"<{len(b) // 4}i", b)
def halves(name):
    _, shape, b = tensor(name)
    return shape, struct.unpack(f"<{len(b) // 2}e", b)
gptq = q["quant_method"] == "gptq"
zero_plus = 1 if gptq and q.get("checkpoint_format", "gptq") == "gptq" else 0
group = q["group_size"]
awq_order = [0, 2, 4, 6, 1, 3, 5, 7]
nib = lambda word, i: (word >> (4 * i)) & 15
out_tensors = []
for name in header:
    if name == "__metadata__" or name.endswith((".qzeros", ".scales", ".g_idx")):
        continue
    if not name.endswith(".qweight"):
        dtype, shape, b = tensor(name)
        out_tensors.append((name, dtype, shape, b))
        continue
    base = name[: -len(".qweight")]
    (groups, out), scales = halves(base + ".scales")
    qshape, qweight = ints(base + ".qweight")
    _, qzeros = ints(base + ".qzeros")
    in_ = qshape[0] * 8 if gptq else qshape[0]
    g_idx = ints(base + ".g_idx")[1] if gptq else [c // group if group > 0 else 0 for c in range(in_)]
    w = []
    for o in range(out):
        for c in range(in_):
            g = g_idx[c]
            if gptq:
                qv = nib(qweight[(c // 8) * out + o] & 0xffffffff, c % 8)
                z = nib(qzeros[g * (out // 8) + o // 8] & 0xffffffff, o % 8) + zero_plus
            else:
                i = awq_order.index(o % 8)
                qv = nib(qweight[c * (out // 8) + o // 8] & 0xffffffff, i)
                z = nib(qzeros[g * (out // 8) + o // 8] & 0xffffffff, i)
            w.append((qv - z) * scales[g * out + o])
    out_tensors.append((base + ".weight", "F32", [out, in_], struct.pack(f"<{len(w)}f", *w)))
if config.get("model_type") == "qwen3_5_moe":
    # Its bf16 checkpoints stack the experts: gate_up_proj [E, 2I, H] (each
    # expert's gate rows, then its up rows) and down_proj [E, H, I].
    import re
    experts, kept = {}, []
    for t in out_tensors:
        m = re.fullmatch(r"(.*\.mlp\.experts\.)(\d+)\.(gate|up|down)_proj\.weight", t[0])
        if m:
            experts.setdefault(m.group(1), {})[(int(m.group(2)), m.group(3))] = t
        else:
            kept.append(t)
    for prefix, parts in experts.items():
        count = 1 + max(e for e, _ in parts)
        gate_up = b"".join(parts[(e, "gate")][3] + parts[(e, "up")][3] for e in range(count))
        down = b"".join(parts[(e, "down")][3] for e in range(count))
        inter, hidden = parts[(0, "gate")][2]
        kept.append((prefix + "gate_up_proj", "F32", [count, 2 * inter, hidden], gate_up))
        kept.append((prefix + "down_proj", "F32", [count, hidden, inter], down))
    out_tensors = kept
head, offset = {}, 0
for name, dtype, shape, b in out_tensors:
    head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(b)]}
    offset += len(b)
text = json.dumps(head, separators=(",", ":"))
text += " " * ((8 - len(text) % 8) % 8)
with open(f"{dst}/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text.encode())
    for _, _, _, b in out_tensors:
        f.write(b)
PY
}

# compare REFERENCE GOT WHAT
compare() {
  python3 - "$1" "$2" "$3" <<'PY'
import math, struct, sys
def load(path):
    raw = open(path, "rb").read()
    n, vocab = struct.unpack_from("<ii", raw, 0)
    return n, vocab, struct.unpack_from(f"<{n * vocab}f", raw, 8)
n, vocab, ref = load(sys.argv[1])
n2, vocab2, got = load(sys.argv[2])
assert (n, vocab) == (n2, vocab2), ((n, vocab), (n2, vocab2))
clear = 0
for p in range(n):
    r = ref[p * vocab:(p + 1) * vocab]
    g = got[p * vocab:(p + 1) * vocab]
    mean = sum(r) / vocab
    std = math.sqrt(sum((v - mean) ** 2 for v in r) / vocab)
    top = sorted(range(vocab), key=lambda i: -r[i])[:8]
    worst = max(abs(g[i] - r[i]) for i in top)
    if worst > 0.05 * std:
        sys.exit(f"{sys.argv[3]}: position {p}: top-8 logits off by {worst:.4f} > 0.05 * std {std:.4f}")
    if r[top[0]] - r[top[1]] > 0.1 * std:
        clear += 1
        best = max(range(vocab), key=lambda i: g[i])
        if best != top[0]:
            sys.exit(f"{sys.argv[3]}: position {p}: top-1 {best}, reference {top[0]}")
if clear < 3:
    sys.exit(f"{sys.argv[3]}: only {clear} positions with a clear top-1")
PY
}

dump() {  # MODEL OUT [run flags...]
  local model=$1 out=$2
  shift 2
  "$X" run qwen "$@" --model "$model" --dtype fp32 --kv-dtype fp32 --prompt-ids "$PROMPT" \
    --dump-logits "$out" >"$TEST_TMP/out" 2>"$TEST_TMP/err" \
    || fail "run qwen --model $model $*: $(cat "$TEST_TMP/err")"
  grep -q "wrote $out: 10 positions" "$TEST_TMP/out" || fail "run qwen --model $model: said $(cat "$TEST_TMP/out")"
}

for name in "${names[@]}"; do
  # shellcheck disable=SC2086
  "$X" model make-test "$models/$name" ${make_args[$name]} --no-tokenizer >/dev/null || fail "make-test $name"
  "$X" model check "$models/$name" | grep -q "int4, " || fail "model check $name: no 4-bit format named"
  dequantize "$models/$name" "$models/$name-fp32" || fail "dequantize $name"
  dump "$models/$name-fp32" "$TEST_TMP/$name-ref.bin"
  dump "$models/$name" "$TEST_TMP/$name.bin"
  compare "$TEST_TMP/$name-ref.bin" "$TEST_TMP/$name.bin" "$name, 1 rank" || fail "$name: 1 rank differs from the dequantized fp32 model"
  dump "$models/$name" "$TEST_TMP/$name-tp2.bin" --local 2
  compare "$TEST_TMP/$name-ref.bin" "$TEST_TMP/$name-tp2.bin" "$name, 2 ranks" || fail "$name: 2 ranks differ from the dequantized fp32 model"
  step "$name: 1 and 2 ranks match the dequantized fp32 model"
done

# The bench reports the checkpoint's format.
json=$("$X" run qwen --model "$models/awq-g64" --bench --json --input-tokens 8 --output-tokens 4 --iters 1 --warmup 0 2>/dev/null) \
  || fail "bench on the AWQ checkpoint failed"
[[ $json == *'"format": "awq-int4"'* ]] || fail "bench JSON lacks the format: $json"
[[ $json == *'"decode_weight_bytes_per_token"'* ]] || fail "bench JSON lacks the weight bytes per token"
step "bench JSON names awq-int4 and the weight bytes per token"

# Formats xftctl does not read are refused with the field and the value.
"$X" model make-test "$models/eight" --arch qwen2 --quant gptq --no-tokenizer >/dev/null
sed -i 's/"bits": 4/"bits": 8/' "$models/eight/config.json"
if "$X" run qwen --model "$models/eight" --prompt-ids 1,2 --dump-logits "$TEST_TMP/x.bin" >/dev/null 2>"$TEST_TMP/err"; then
  fail "an 8-bit GPTQ checkpoint was accepted"
fi
grep -q "quantization_config: bits: 8 is not supported" "$TEST_TMP/err" || fail "8-bit refusal said: $(cat "$TEST_TMP/err")"
step "8-bit GPTQ refused naming bits: 8"
echo "run_qwen_int4: all checks passed"
