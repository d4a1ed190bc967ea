#!/usr/bin/env bash
# Logging: -q keeps errors only, -v adds debug lines, --log-format json writes
# one object a line (ts, level, msg, host), timestamps come when stderr is
# neither a terminal nor the journal, ranks get the level; and every --help
# fits 80 columns. No test cluster: a closed port on 127.0.0.1 is the host.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
cd "$TEST_TMP"

run() {  # run ARGS...: xftctl with stdout/stderr into OUT/ERR, exit code in RC
  RC=0
  "$XFTCTL" "$@" >out 2>err || RC=$?
  OUT=$(cat out)
  ERR=$(cat err)
}
# The time varies; everything after it is exact.
without_ts() { sed -E 's/^\{"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z",/{/' <<<"$1"; }

printf 'hosts:\n  - name: a\n    bogus: 1\n' >bad.yaml
unknown='bad.yaml:3:5: hosts[0].bogus: unknown key (allowed here: user, port, key, password_env, password_prompt, ranks, fabric, shared, become, become_password_env, jump, name, address, groups)'
# Port 1 on loopback: nothing listens there, so the connection is refused at once.
printf 'hosts:\n  - name: local\n    address: 127.0.0.1\n    port: 1\n' >closed.yaml
refused='local (127.0.0.1:1): unreachable: Connection refused'

step "inventory validate on a bad file: the located error as is, in text and under -q"
run -i bad.yaml inventory validate
assert_eq 1 "$RC" "validate exit code"
assert_eq "$unknown" "$ERR" "validate error"
run -q -i bad.yaml inventory validate
assert_eq "$unknown" "$ERR" "-q keeps errors"

step "--log-format json: one object, the message escaped"
run --log-format json -i bad.yaml inventory validate
assert_eq "{\"level\":\"error\",\"msg\":\"$unknown\"}" "$(without_ts "$ERR")" "json validate error"
run --log-format json -i 'no"such
file' inventory validate
assert_eq '{"level":"error","msg":"inventory no\"such\nfile (from -i) does not exist or is not a file"}' \
  "$(without_ts "$ERR")" "quote and newline escaped"
XFTCTL_LOG_FORMAT=json run -i bad.yaml inventory validate
assert_eq "{\"level\":\"error\",\"msg\":\"$unknown\"}" "$(without_ts "$ERR")" "XFTCTL_LOG_FORMAT=json"

step "ping a closed port: the table on stdout, the error on stderr; -v adds debug, -q nothing else"
run -i closed.yaml ping
assert_eq 4 "$RC" "ping exit code"
assert_eq "xftctl: $refused" "$ERR" "ping error"
assert_contains "$OUT" "local  127.0.0.1  unreachable" "ping table"
run -i closed.yaml ping -v
assert_eq "xftctl: debug: local (127.0.0.1:1): connecting as root
xftctl: $refused" "$ERR" "-v (after the subcommand) shows debug lines"
run -i closed.yaml -q ping
assert_eq "xftctl: $refused" "$ERR" "-q"
run -i closed.yaml --log-level warning ping --log-format json
assert_eq "{\"level\":\"error\",\"msg\":\"$refused\",\"host\":\"local\"}" "$(without_ts "$ERR")" "json carries the host"
run -i closed.yaml -vv --log-format json ping
assert_eq "{\"level\":\"debug\",\"msg\":\"local (127.0.0.1:1): connecting as root\"}
{\"level\":\"error\",\"msg\":\"$refused\",\"host\":\"local\"}" "$(without_ts "$ERR")" "json debug"
[[ $OUT == *"1 host: 1 unreachable"* ]] || fail "stdout keeps the report under --log-format json: $OUT"

step "a notice (info) shows by default and goes under -q"
printf '[all]\n10.0.0.1\n' >hosts.ini
run inventory import hosts.ini -o imported.yaml
assert_eq "xftctl: wrote imported.yaml: 1 host" "$ERR" "notice"
run -q inventory import hosts.ini -o imported.yaml
assert_eq "" "$ERR" "-q hides notices"

step "timestamps: on a file or pipe by default, not on a terminal, not to the journal, off when asked"
unset XFTCTL_LOG_TIMESTAMPS
run -i closed.yaml ping
[[ $ERR =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\ xftctl:\ local\ \(127\.0\.0\.1:1\):\ unreachable:\ Connection\ refused$ ]] ||
  fail "expected an ISO-8601 UTC timestamp with milliseconds, got: $ERR"
run --log-timestamps off -i closed.yaml ping
assert_eq "xftctl: $refused" "$ERR" "--log-timestamps off"
# systemd sets JOURNAL_STREAM to the device:inode of the journal's socket.
: >journal
JOURNAL_STREAM=$(stat -c %d:%i journal) "$XFTCTL" -i closed.yaml ping >out 2>>journal || true
assert_eq "xftctl: $refused" "$(cat journal)" "journald stamps its own lines"
JOURNAL_STREAM=1:2 "$XFTCTL" -i closed.yaml ping >out 2>journal || true
[[ $(cat journal) == 20*Z" xftctl: $refused" ]] || fail "another stream than stderr's is no journal: $(cat journal)"
script -qec "$XFTCTL -i closed.yaml ping" /dev/null >tty.txt || true
assert_contains "$(tr -d '\r' <tty.txt)" $'\n'"xftctl: $refused" "no timestamp on a terminal"
export XFTCTL_LOG_TIMESTAMPS=off

step "ranks started by mpirun get the level (and format) in their environment"
run -q launch --local 1 -- sh -c 'echo "$XFTCTL_LOG_LEVEL $XFTCTL_LOG_FORMAT"'
assert_eq 0 "$RC" "launch exit code ($ERR)"
assert_contains "$OUT" "error " "-q reaches the rank"
run --log-format json launch --local 1 --dry-run -- true
assert_contains "$OUT" " -x XFTCTL_LOG_FORMAT " "--log-format json is forwarded to other hosts by name"
run launch --local 1 --dry-run -- true
assert_not_contains "$OUT" "XFTCTL_LOG" "defaults are not forwarded"

step "bad values are usage errors (exit 5)"
run --log-format xml ping
assert_eq 5 "$RC" "--log-format xml exit code"

step "every --help fits 80 columns"
# Walks the visible command tree through the help's own Subcommands: lists.
check_help() {
  local help width sub
  help=$("$XFTCTL" "$@" --help)
  width=$(awk '{ if (length > w) w = length } END { print w + 0 }' <<<"$help")
  ((width <= 80)) || fail "xftctl $* --help is $width columns wide"
  VISITED+="[$*]"
  for sub in $(sed -n '/^Subcommands:/,/^$/p' <<<"$help" | sed -nE 's/^  ([a-z][a-z0-9-]*)( .*)?$/\1/p'); do
    check_help "$@" "$sub"
  done
}
VISITED=""
check_help
# The walk reached the nested commands (the Subcommands: lists are still parsed).
for page in "[]" "[check fabric]" "[run qwen]" "[inventory import]" "[completion]"; do
  assert_contains "$VISITED" "$page" "help pages walked"
done
echo "help pages within 80 columns: $VISITED"
echo PASS
