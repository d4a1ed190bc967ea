# shellcheck shell=bash
# Sourced by the run qwen tests: the golden files (an independent
# implementation's logits) and the one check of a --dump-logits file against them.

golden_file() {  # NAME -> the golden json (tests/data, else ../shared)
  local f="$XFT_SOURCE_DIR/tests/data/golden/$1.json"
  [[ -f $f ]] || f="$XFT_SOURCE_DIR/../shared/fixtures/golden/$1.json"
  echo "$f"
}

golden_field() {  # NAME PYTHON-EXPRESSION-OF-g
  python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print($2)" "$(golden_file "$1")"
}

# check_logits NAME CASE FILE: FILE (--dump-logits: two int32, positions and
# vocabulary, then float32 logits) has the case's shape and the reference's top
# logits at every position within the fp32 tolerance; prints the worst
# difference, exits 1 past the tolerance.
check_logits() {
  python3 - "$(golden_file "$1")" "$2" "$3" <<'PY'
import json, struct, sys
golden = json.load(open(sys.argv[1]))
case = golden["cases"][int(sys.argv[2])]
data = open(sys.argv[3], "rb").read()
n, vocab = struct.unpack_from("<ii", data, 0)
if (n, vocab) != (len(case["prompt"]), 151936) or len(data) != 8 + 4 * n * vocab:
    sys.exit(f"logits file: {n} positions x {vocab} in {len(data)} bytes, expected {len(case['prompt'])} x 151936")
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
