#!/usr/bin/env bash
# The progress line of `xftctl setup hosts` / `playbook run` on 4 test hosts.
# On a terminal (script(1) gives one) stderr holds one line redrawn with \r
# through every task and cleared at the end: with --json nothing else reaches
# the terminal and stdout is one JSON document; without it, taking the
# progress out of what the terminal got leaves exactly the report a run
# without a terminal prints. Not on a terminal: nothing, and with -v a line
# every 5 seconds.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 4 --share-all --private /etc/xftctl
command -v script >/dev/null || fail "this test needs script(1) (util-linux)"

# Runs xftctl with stdin, stdout and stderr on a new terminal; the terminal's
# output goes to TTY (\r\n made \n, as the terminal turned them).
on_terminal() {
  local line
  printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" "$@"
  RC=0
  script -qec "$line" /dev/null >"$TEST_TMP/tty" || RC=$?
  TTY=$(sed 's/\r$//' "$TEST_TMP/tty")
}
CLEAR=$'\r\e[K'

step "not on a terminal: no progress, in the first run either"
xft setup hosts --accept-new-host-keys
assert_eq 0 "$RC" "first setup; out: $OUT; err: $ERR"
assert_not_contains "$ERR" "setup hosts [" "progress on a pipe without -v"
assert_not_contains "$ERR" $'\r' "carriage return on a pipe"
xft setup hosts
assert_eq 0 "$RC" "second setup; err: $ERR"
assert_eq "" "$ERR" "stderr of a quiet run on a pipe"
report=$OUT

step "--json on a terminal: stdout one document, the terminal only the progress line, cleared"
# the redirection inside script's command: stdout to the file, stderr to the terminal
printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" setup hosts --json
RC=0
script -qec "$line >$(printf %q "$TEST_TMP/report.json")" /dev/null >"$TEST_TMP/tty" || RC=$?
assert_eq 0 "$RC" "setup --json on a terminal; terminal: $(cat -v "$TEST_TMP/tty")"
assert_eq '[0,0,0,0]' "$(jq -c '[.recap[] | .changed + .failed + .unreachable]' "$TEST_TMP/report.json")" "json recap"
assert_eq 1 "$(jq -s length "$TEST_TMP/report.json")" "documents on stdout"
tty=$(cat "$TEST_TMP/tty")
assert_not_contains "$tty" $'\n' "a line feed on the terminal (the progress is one line)"
for task in $(seq 1 22); do
  grep -qE $'\r'"setup hosts \[ *[0-9]+%\] task $task/22, 0/[14] hosts: " <<<"$tty" ||
    fail "no progress line for task $task: $(cat -v <<<"$tty")"
done
assert_eq "$CLEAR" "${tty: -4}" "the terminal's last bytes clear the line"

step "the report on a terminal: the same lines, the progress cleared before each"
on_terminal setup hosts
assert_eq 0 "$RC" "setup on a terminal; terminal: $(cat -v <<<"$TTY")"
without_progress=$(sed -E $'s/\r[^\r]*\e\\[K//g' <<<"$TTY")
assert_eq "$report" "$without_progress" "the terminal's text without the progress line"
[[ $TTY == *$'\r'"setup hosts ["* ]] || fail "no progress line on the terminal: $(cat -v <<<"$TTY")"

step "-v not on a terminal: a progress line every 5 seconds"
cat >"$TEST_TMP/slow.yaml" <<'YAML'
name: slow
tasks:
  - name: wait a while
    command: [sleep, "8"]
YAML
xft -v playbook run "$TEST_TMP/slow.yaml"
assert_eq 0 "$RC" "slow playbook; err: $ERR"
grep -qE '^xftctl: slow \[ *[0-9]+%\] (connecting|task 1/1), ' <<<"$ERR" || fail "no progress line with -v: $ERR"
assert_not_contains "$ERR" $'\r' "carriage return on a pipe"
echo "setup_progress: ok"
