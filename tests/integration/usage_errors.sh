#!/usr/bin/env bash
# Command-line mistakes: one line on stderr with the fix ("did you mean", the
# `--` before a remote command), nothing on stdout, exit 5; --help exits 0.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

expect_usage() {  # EXPECTED-LINE ARGS...
  local expected=$1
  shift
  xft "$@"
  assert_eq 5 "$RC" "exit code of xftctl $*"
  assert_eq "" "$OUT" "stdout of xftctl $*"
  assert_eq "$expected" "$ERR" "the error of xftctl $*"
}

expect_usage 'xftctl: unknown command `invetory` (did you mean `inventory`?)' invetory show
expect_usage 'xftctl: inventory: give a command (show, validate, import)' inventory
expect_usage 'xftctl: inventory: unknown command `shw` (did you mean `show`?)' inventory shw
expect_usage 'xftctl: ping: unknown option `--host` (did you mean `--hosts`?)' ping --host x
expect_usage 'xftctl: run qwen: unknown option `--modle` (did you mean `--model`?)' run qwen --modle x
expect_usage 'xftctl: check fabric: unknown option `--no-pair` (did you mean `--no-pairs`?)' check fabric --no-pair
expect_usage 'xftctl: exec: `-r` is not an option of exec (put the command to run after `--`, e.g. `xftctl exec -- uname -r`)' exec uname -r
expect_usage 'xftctl: run: give a command (qwen)' run

# llama.cpp's short forms reach run qwen's options: the model dir is what is wrong here, not the line.
xft run qwen -m "$TEST_TMP/no-model" -p hi -n 4 -c 128 -t 1
assert_eq 1 "$RC" "run qwen with short forms and a missing model"
assert_eq "xftctl: run qwen: $TEST_TMP/no-model: no such directory (the model is the folder that holds config.json and the *.safetensors files)" "$ERR" "the error names the model"
touch "$TEST_TMP/a-file"
xft run qwen -m "$TEST_TMP/a-file" -p hi
assert_eq "xftctl: run qwen: $TEST_TMP/a-file: not a directory (the model is the folder that holds config.json and the *.safetensors files)" "$ERR" "a file given as the model"
mkdir "$TEST_TMP/empty-model"
xft run qwen -m "$TEST_TMP/empty-model" -p hi
assert_eq "xftctl: run qwen: $TEST_TMP/empty-model/config.json: missing (is $TEST_TMP/empty-model a Hugging Face model directory?)" "$ERR" "a folder without config.json"

xft --help
assert_eq 0 "$RC" "--help exit code"
assert_contains "$OUT" "inventory" "--help lists the commands"
xft inventory show --help
assert_eq 0 "$RC" "inventory show --help exit code"
echo "usage_errors: ok"
