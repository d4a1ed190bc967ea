#!/usr/bin/env bash
# `xftctl run qwen` across ranks on this machine (tensor parallelism): the golden
# test models of all three architectures give the reference logits (fp32
# tolerance) and the reference greedy continuation with 1, 2, 3 and 4 ranks
# (--local N) — 3 ranks split 4 query heads 2/1/1 and replicate the 2 KV heads —
# over the shared-memory allreduce and MPI; chat, CCL_ALLREDUCE and --profile
# across 2 ranks. The test hosts' part is run_qwen_tp_cluster.sh.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
source "$XFT_SOURCE_DIR/tests/integration/run_qwen_tp_lib.sh"

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

