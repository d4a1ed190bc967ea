#!/usr/bin/env bash
# `xftctl completion bash|zsh` completes commands and options from the same
# command tree that parses them, stops at `--`; the build writes a man page.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

"$XFTCTL" completion bash >"$TEST_TMP/xftctl.bash"
complete_words() {  # WORDS...: what <TAB> offers after them
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _xftctl; echo "${COMPREPLY[*]}"' \
    _ "$TEST_TMP/xftctl.bash" "$@"
}
assert_eq "inventory" "$(complete_words xftctl inv)" "a command"
assert_eq "show" "$(complete_words xftctl inventory sh)" "a subcommand"
assert_eq "qwen" "$(complete_words xftctl -i inv.yaml run q)" "after a global option"
assert_eq "--json" "$(complete_words xftctl inventory show --js)" "an option"
assert_eq "--fake-model" "$(complete_words xftctl run qwen --fake)" "an option of run qwen"
assert_eq "" "$(complete_words xftctl exec -- inv)" "nothing after --"

"$XFTCTL" completion zsh >"$TEST_TMP/_xftctl"
assert_eq "#compdef xftctl" "$(head -1 "$TEST_TMP/_xftctl")" "zsh completion header"
xft completion fish
assert_eq 5 "$RC" "an unknown shell is a usage error"

man_page="$XFT_BUILD_DIR/xftctl.1"
[[ -s $man_page ]] || fail "the build wrote no man page at $man_page"
assert_eq ".TH XFTCTL 1" "$(head -1 "$man_page" | cut -d' ' -f1-3)" "man page header"
assert_contains "$(cat "$man_page")" ".SH xftctl check fabric" "check fabric has a section"
echo "completion: ok"
