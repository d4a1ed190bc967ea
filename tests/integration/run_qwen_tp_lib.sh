# Sourced by run_qwen_tp.sh and run_qwen_tp_cluster.sh (two ctest tests, so they run side by
# side): the golden test models in a dir every test host sees, and the checks both use.

source "$XFT_SOURCE_DIR/tests/integration/golden_lib.sh"

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
  local result
  result=$(check_logits "$name" 0 "$shared/logits.bin") || fail "$where $name: logits differ from the reference: $result"
  local answer prompt
  prompt=$(prompt_text "$name")
  prompt=${prompt%x}
  answer=$("$X" "${INV[@]}" run qwen "$@" --model "$shared/$name" --dtype fp32 --kv-dtype fp32 --raw --greedy \
             --max-new-tokens 8 --prompt "$prompt" 2>"$TEST_TMP/err") \
    || fail "$where $name: generation failed: $(cat "$TEST_TMP/err")"
  assert_eq "$(expected_text "$name")" "$answer" "$where $name: greedy continuation"
  echo "ok: $where $name"
}

