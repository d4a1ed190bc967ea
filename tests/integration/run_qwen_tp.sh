#!/usr/bin/env bash
# `xftctl run qwen` across ranks (tensor parallelism): the golden test models of
# all three architectures give the reference logits (fp32 tolerance) and the
# reference greedy continuation with 1, 2, 3 and 4 ranks — 3 ranks split 4 query
# heads 2/1/1 and replicate the 2 KV heads — first on this machine (--local N,
# shared-memory allreduce, and MPI), then on 4 namespace test hosts through the
# inventory (real sshd, mpirun over TCP), hierarchical with 2 hosts x 2 ranks,
# and a rank killed mid-generation ends the run on every host with its name.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

golden_file() {  # NAME -> the golden json (tests/data, else ../shared)
  local f="$XFT_SOURCE_DIR/tests/data/golden/$1.json"
  [[ -f $f ]] || f="$XFT_SOURCE_DIR/../shared/fixtures/golden/$1.json"
  echo "$f"
}

# Every host sees /run (the test hosts have a private /tmp and /root), so the
# binary the ranks run and the models live there.
shared=$(mktemp -d /run/xft-tp-test-XXXXXX)
remove_on_exit "$shared"
INV=()  # -i INVENTORY once the cluster runs
cp "$XFTCTL" "$shared/xftctl"
X=$shared/xftctl

declare -A make_args=(
  [qwen1-tiny-s5]="--arch qwen --seed 5 --inter 256 --tie 0 --rope-theta 10000"
  [qwen2-tiny-s7]="--arch qwen2 --seed 7"
  [qwen3-tiny-s11]="--arch qwen3 --seed 11 --head-dim 32 --inter 128"
)
models=(qwen1-tiny-s5 qwen2-tiny-s7 qwen3-tiny-s11)
for name in "${models[@]}"; do
  # shellcheck disable=SC2086
  "$X" model make-test "$shared/$name" ${make_args[$name]} >/dev/null
done

prompt_ids() { python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['cases'][0]['prompt'])))" "$(golden_file "$1")"; }

# check_logits NAME FILE: the reference's top logits at every position, within the fp32 tolerance.
check_logits() {
  python3 - "$(golden_file "$1")" "$2" <<'PY'
import json, struct, sys
golden = json.load(open(sys.argv[1]))
case = golden["cases"][0]
data = open(sys.argv[2], "rb").read()
n, vocab = struct.unpack_from("<ii", data, 0)
assert (n, vocab) == (len(case["prompt"]), 151936), (n, vocab)
tol = golden["tolerance"]["fp32_max_abs_rel_to_std"] * case["logit_std"]
worst = 0.0
for p, pos in enumerate(case["positions"]):
    for token, expected in pos["top"]:
        got = struct.unpack_from("<f", data, 8 + 4 * (p * vocab + token))[0]
        worst = max(worst, abs(got - expected))
if worst > tol:
    sys.exit(f"logits off by {worst} > {tol}")
PY
}

# The reference's first 8 greedy tokens after case 0's prompt, as text.
expected_text() {
  local ids
  ids=$(python3 -c "import json,sys; print(','.join(str(g['id']) for g in json.load(open(sys.argv[1]))['cases'][0]['greedy'][:8]))" "$(golden_file "$1")")
  "$X" tokenize --model "$shared/$1" --decode <<<"[$ids]"
}
prompt_text() {  # with a trailing x, so $(...) keeps the prompt's final newline
  "$X" tokenize --model "$shared/$1" --decode <<<"[$(prompt_ids "$1")]"
  echo x
}

# check_ranks WHERE NAME RANK-ARGS...: logits and greedy text of NAME with these ranks.
check_ranks() {
  local where=$1 name=$2
  shift 2
  local out
  out=$("$X" "${INV[@]}" run qwen "$@" --model "$shared/$name" --dtype fp32 --kv-dtype fp32 \
          --prompt-ids "$(prompt_ids "$name")" --dump-logits "$shared/logits.bin" 2>"$TEST_TMP/err") \
    || fail "$where $name: dump-logits failed: $(cat "$TEST_TMP/err")"
  [[ $out == *"wrote $shared/logits.bin: 13 positions x 151936 logits (float32)"* ]] || fail "$where $name: said $out"
  check_logits "$name" "$shared/logits.bin" || fail "$where $name: logits differ from the reference"
  local answer prompt
  prompt=$(prompt_text "$name")
  prompt=${prompt%x}
  answer=$("$X" "${INV[@]}" run qwen "$@" --model "$shared/$name" --dtype fp32 --kv-dtype fp32 --raw --greedy \
             --max-new-tokens 8 --prompt "$prompt" 2>"$TEST_TMP/err") \
    || fail "$where $name: generation failed: $(cat "$TEST_TMP/err")"
  assert_eq "$(expected_text "$name")" "$answer" "$where $name: greedy continuation"
  echo "ok: $where $name"
}

step "this machine: 1-4 ranks, shared-memory allreduce (3 and 4 ranks oversubscribe the 2 cores)"
for name in "${models[@]}"; do
  for n in 1 2 3 4; do check_ranks "local $n ranks (shm)" "$name" --local "$n" --comm auto --cores-per-rank 1; done
done
check_ranks "local 2 ranks (mpi)" qwen2-tiny-s7 --local 2 --comm mpi --cores-per-rank 1
check_ranks "local 2 ranks (shm)" qwen2-tiny-s7 --local 2 --comm shm --cores-per-rank 1

step "--chat across 2 ranks: the same conversation as one rank (stdin reaches rank 0)"
chat_in=$'hello\n/reset\nwhat is rdma\n/exit\n'
one=$("$X" run qwen --model "$shared/qwen2-tiny-s7" --chat --greedy --max-new-tokens 6 <<<"$chat_in" 2>/dev/null)
two=$("$X" run qwen --model "$shared/qwen2-tiny-s7" --chat --greedy --max-new-tokens 6 --local 2 --cores-per-rank 1 \
        <<<"$chat_in" 2>"$TEST_TMP/chat.err") || fail "chat on 2 ranks: $(cat "$TEST_TMP/chat.err")"
assert_contains "$one" "(conversation reset)" "one-rank chat ran"
assert_eq "$one" "$two" "chat transcript, 1 rank vs 2 ranks"

step "the seed's CCL_ALLREDUCE chooses the ranks' allreduce when --comm is not given"
seed="recursive_doubling:0-16384;2d:16385-524288;nreduce:524289-max"
ccl=$(CCL_ALLREDUCE=$seed "$X" run qwen --model "$shared/qwen2-tiny-s7" --chat --greedy --max-new-tokens 6 --local 2 \
        --cores-per-rank 1 <<<"$chat_in" 2>"$TEST_TMP/ccl.err") || fail "CCL_ALLREDUCE run: $(cat "$TEST_TMP/ccl.err")"
assert_eq "$one" "$ccl" "chat transcript under CCL_ALLREDUCE"
assert_eq "xftctl: run qwen: --comm from CCL_ALLREDUCE=$seed
xftctl: run qwen: oneCCL's \`2d\` runs as \`hier\` (reduce inside each host, then across hosts)
xftctl: run qwen: oneCCL's \`nreduce\` runs as \`rabenseifner\` (reduce-scatter then allgather)" \
  "$(grep 'CCL_ALLREDUCE\|oneCCL' "$TEST_TMP/ccl.err")" "the mapping, said once"
CCL_ALLREDUCE=nonsense "$X" run qwen --model "$shared/qwen2-tiny-s7" --raw --greedy --max-new-tokens 2 --prompt hi --local 2 \
  --cores-per-rank 1 --comm shm >/dev/null 2>"$TEST_TMP/ccl2.err" || fail "--comm with CCL_ALLREDUCE set: $(cat "$TEST_TMP/ccl2.err")"
assert_not_contains "$(cat "$TEST_TMP/ccl2.err")" "CCL_ALLREDUCE" "--comm wins over the variable"

step "--profile: per-layer compute and allreduce time of every rank"
"$X" run qwen --model "$shared/qwen2-tiny-s7" --local 2 --cores-per-rank 1 --raw --greedy --max-new-tokens 4 \
  --prompt "hi" --profile >/dev/null 2>"$TEST_TMP/profile" || fail "--profile run: $(cat "$TEST_TMP/profile")"
profile=$(sed 's/^\[0 [^]]*\] //' "$TEST_TMP/profile")
assert_contains "$profile" "profile: milliseconds over the run, per rank: compute / allreduce" "profile header"
assert_eq 4 "$(grep -cE '^(0|1|head|total) +[0-9.]+ / +[0-9.]+ +[0-9.]+ / +[0-9.]+$' <<<"$profile")" "profile rows: 2 layers, head, total, 2 ranks each"
grep -qE '^comm +[0-9.]+% +[0-9.]+%$' <<<"$profile" || fail "profile: no communication share per rank: $profile"

step "4 test hosts through the inventory"
start_cluster 4 --auth key
kh=$TEST_TMP/known_hosts
"$X" -i "$CLUSTER_INVENTORY" ping --accept-new-host-keys --known-hosts "$kh" >/dev/null
INV=(-i "$CLUSTER_INVENTORY")
net=(--known-hosts "$kh" --cores-per-rank 1 --ranks-per-host 1)
check_ranks "1 host" qwen2-tiny-s7 "${net[@]}" --hosts h01
for name in "${models[@]}"; do
  check_ranks "2 hosts" "$name" "${net[@]}" --hosts h01,h02 --comm mpi
  check_ranks "3 hosts (uneven heads)" "$name" "${net[@]}" --hosts "h0[1-3]" --comm mpi
  check_ranks "4 hosts" "$name" "${net[@]}" --comm mpi
done

step "hierarchical: 2 hosts x 2 ranks"
hier=(--known-hosts "$kh" --cores-per-rank 1 --ranks-per-host 2 --hosts h01,h02 --comm hier)
"$X" "${INV[@]}" run qwen "${hier[@]}" --fake-model qwen2.5-0.5b --bench --input-tokens 4 --output-tokens 2 --iters 1 --warmup 0 \
  >"$TEST_TMP/hier" 2>&1 || fail "hier bench: $(cat "$TEST_TMP/hier")"
assert_contains "$(cat "$TEST_TMP/hier")" "ranks        4, allreduce hier" "hier backend in use"
check_ranks "2 hosts x 2 ranks (hier)" qwen3-tiny-s11 "${hier[@]}"

step "a rank killed mid-generation ends the run everywhere, named"
start=$(date +%s)
rc=0
"$X" "${INV[@]}" run qwen "${net[@]}" --model "$shared/qwen2-tiny-s7" --raw --greedy --max-new-tokens 100000 \
  --max-context 4096 --prompt "hello" --fail-rank 2 --fail-at-token 20 >/dev/null 2>"$TEST_TMP/kill" || rc=$?
elapsed=$(($(date +%s) - start))
assert_eq 2 "$rc" "exit code after a rank died"
assert_contains "$(cat "$TEST_TMP/kill")" "xftctl: rank 2 (h03, $HOST_H03_ADDR) was killed by signal 9" "the dead rank is named"
((elapsed <= 10)) || fail "the run took ${elapsed}s to end after a rank died (limit 10 s)"
sleep 1
left=$(pgrep -f "$shared/xftctl" || true)
assert_eq "" "$left" "no rank process left on any host"
echo "ok: killed rank named, run ended in ${elapsed}s, nothing left"
