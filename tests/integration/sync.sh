#!/usr/bin/env bash
# `xftctl sync DIR` against 4 real OpenSSH test hosts, each with its own
# /opt/xft-sync-test: a tree of 1,000 small files, one 200 MB file, modes and
# a symlink arrives bit-exact everywhere; a second run sends nothing; one
# changed file (same size: only its hash differs) is the only one sent; a
# mode change alone is a chmod, not a resend; --check writes nothing;
# --delete removes extras; a host that is down is reported unreachable (exit 4)
# while the others complete.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 4 --auth key --private /opt/xft-sync-test
H=(h01 h02 h03 h04)
SRC="$TEST_TMP/src"
DEST=/opt/xft-sync-test/model

step "making the tree: 1,000 small files in 10 dirs, one 200 MB file, a symlink"
mkdir -p "$SRC"
for d in $(seq -f %02g 0 9); do
  mkdir "$SRC/part-$d"
  for f in $(seq -f %02g 0 99); do
    printf 'file %s/%s\n' "$d" "$f" >"$SRC/part-$d/small $f.txt"
  done
done
head -c 200M /dev/urandom >"$SRC/weights.bin"
chmod 0600 "$SRC/part-03/small 07.txt"
chmod 0755 "$SRC/part-05/small 00.txt"
chmod 0750 "$SRC/part-09"
ln -s weights.bin "$SRC/latest"
TOTAL_BYTES=$(find "$SRC" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

# Everything a host must hold: type, mode, size, link target and content hash of every entry.
tree_state() {  # DIR
  (cd "$1" && find . -mindepth 1 -printf '%y %m %s %P -> %l\n' | sort &&
    find . -type f -print0 | sort -z | xargs -0 sha256sum)
}
host_state() {  # HOST
  host_run "$1" bash -c "$(declare -f tree_state); tree_state $DEST"
}
# The hosts hash their copies in parallel: 200 MB each.
expect_hosts_match_source() {  # WHAT
  local expected h
  for h in "${H[@]}"; do host_state "$h" >"$TEST_TMP/state.$h" & done
  expected=$(tree_state "$SRC")
  wait
  for h in "${H[@]}"; do assert_eq "$expected" "$(cat "$TEST_TMP/state.$h")" "$1: tree on $h"; done
}
sync_lines() { grep -v '^/' <<<"$OUT"; }
# As tests/integration/scale_64.sh holds every report to: 100 columns, 60
# lines (the totals line is left out of the width: it holds DIR and --dest
# whole, as long as the paths the user gave).
assert_report_fits() {  # TEXT WHAT
  local widest
  widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' <<<"$1")
  [ "$widest" -le 100 ] || fail "$2: a line of $widest columns"
  [ "$(wc -l <<<"$1")" -le 60 ] || fail "$2: more than 60 lines"
}

step "first run sends everything"
started=$SECONDS
xft sync "$SRC" --dest "$DEST" --accept-new-host-keys
assert_eq 0 "$RC" "first sync exit code; stderr: $ERR"
assert_eq "h[01-04]: sent 1001 files, $TOTAL_BYTES bytes; 0 unchanged; 10 dirs created; 1 symlink made" \
  "$(sync_lines)" "first sync summary: hosts with the same result on one line"
assert_report_fits "$(sync_lines)" "first sync"
assert_contains "$OUT" "$SRC -> $DEST on 4 hosts: 4 ok, 0 failed; sent 4004 files, $((4 * TOTAL_BYTES)) bytes" "totals"
expect_hosts_match_source "after the first sync"
echo "first sync took $((SECONDS - started)) s"

step "second run sends nothing"
xft sync "$SRC" --dest "$DEST"
assert_eq 0 "$RC" "second sync exit code; stderr: $ERR"
assert_eq "h[01-04]: sent 0 files, 0 bytes; 1001 unchanged" "$(sync_lines)" "second sync summary"
assert_contains "$OUT" "on 4 hosts: 4 ok, 0 failed; sent 0 files, 0 bytes" "second sync totals"

step "--json: one document, per host counts and changes"
xft sync "$SRC" --dest "$DEST" --json
assert_eq 0 "$RC" "sync --json exit code; stderr: $ERR"
assert_eq "$DEST 4 0 0 0" "$(jq -r '"\(.dest) \(.ok) \(.failed) \(.files_sent) \(.bytes_sent)"' <<<"$OUT")" "sync --json totals"
assert_eq "h01 ok 0 1001 0|h02 ok 0 1001 0|h03 ok 0 1001 0|h04 ok 0 1001 0" \
  "$(jq -r '[.hosts[] | "\(.host) \(.status) \(.files_sent) \(.files_unchanged) \(.changes | length)"] | join("|")' <<<"$OUT")" "sync --json hosts"

step "a file changed in place (same size) is the only one sent"
printf 'FILE 04/42\n' >"$SRC/part-04/small 42.txt"
xft sync "$SRC" --dest "$DEST"
assert_eq 0 "$RC" "third sync exit code; stderr: $ERR"
assert_eq "h[01-04]: sent 1 file, 11 bytes; 1000 unchanged" "$(sync_lines)" "one changed file"
expect_hosts_match_source "after changing one file"

step "a mode change alone is a chmod, not a resend"
chmod 0640 "$SRC/part-01/small 01.txt"
xft sync "$SRC" --dest "$DEST" -v
assert_eq 0 "$RC" "mode sync exit code; stderr: $ERR"
assert_eq "h[01-04]: sent 0 files, 0 bytes; 1001 unchanged; 1 mode set
  chmod part-01/small 01.txt 0640" "$(sync_lines)" "mode-only change, the same change listed once"
expect_hosts_match_source "after a mode change"

step "--check lists what would change and writes nothing"
printf 'new\n' >"$SRC/part-00/added.txt"
host_run h03 bash -c "echo extra >$DEST/part-02/extra.txt"
before=$(host_state h03)
xft sync "$SRC" --dest "$DEST" --check --delete
assert_eq 0 "$RC" "check exit code; stderr: $ERR"
assert_eq "h[01-02,04]: would send 1 file, 4 bytes; 1001 unchanged
  send part-00/added.txt (4 bytes, 0644)
h03: would send 1 file, 4 bytes; 1001 unchanged; 1 removed
  remove part-02/extra.txt
  send part-00/added.txt (4 bytes, 0644)" "$(sync_lines)" "check listing: h03's own, the others' folded"
assert_eq "$before" "$(host_state h03)" "h03 after --check"
xft sync "$SRC" --dest "$DEST" --check --delete --json
assert_eq 0 "$RC" "check --json exit code; stderr: $ERR"
assert_eq 'true|[{"change":"remove","path":"part-02/extra.txt"},{"change":"send","path":"part-00/added.txt","bytes":4,"mode":"0644"}]' \
  "$(jq -c -r '"\(.check)|\(.hosts[2].changes)"' <<<"$OUT")" "check --json changes of h03"
assert_eq "$before" "$(host_state h03)" "h03 after --check --json"

step "--delete removes what DIR does not have"
xft sync "$SRC" --dest "$DEST" --delete
assert_eq 0 "$RC" "delete sync exit code; stderr: $ERR"
assert_eq "h[01-02,04]: sent 1 file, 4 bytes; 1001 unchanged
h03: sent 1 file, 4 bytes; 1001 unchanged; 1 removed" "$(sync_lines)" "h03 with --delete"
expect_hosts_match_source "after --delete"

step "a host that is down is unreachable (exit 4); the others complete"
cluster stop-host h04
printf 'again\n' >"$SRC/part-00/added.txt"
xft sync "$SRC" --dest "$DEST" --connect-timeout 3
assert_eq 4 "$RC" "exit code with h04 down"
assert_eq "h[01-03]: sent 1 file, 6 bytes; 1001 unchanged
h04: unreachable" "$(sync_lines)" "h04 row"
assert_contains "$ERR" "xftctl: h04 ($(host_var h04 ADDR)): unreachable" "h04 error"
cluster stop-host h03
xft sync "$SRC" --dest "$DEST" --connect-timeout 3
assert_eq 4 "$RC" "exit code with h03 and h04 down"
assert_eq "h[01-02]: sent 0 files, 0 bytes; 1002 unchanged
h[03-04]: unreachable" "$(sync_lines)" "h03 and h04 rows folded"
assert_eq "xftctl: h[03-04]: unreachable: Connection refused" "$ERR" "h03 and h04 errors folded, without their addresses"

step "errors are one line naming the problem"
xft sync "$SRC" --dest relative/path --hosts h01
assert_eq 1 "$RC" "relative --dest exit code"
assert_eq "xftctl: --dest relative/path: give an absolute path on the hosts" "$ERR" "relative --dest message"
host_run h01 bash -c "rm -rf $DEST && echo file >$DEST"
xft sync "$SRC" --dest "$DEST" --hosts h01
assert_eq 2 "$RC" "destination that is a file: exit code"
assert_eq "xftctl: h01: sync to $DEST: cannot list the destination: $DEST exists and is not a directory" "$ERR" \
  "destination that is a file: message"
step "on a terminal: the 200 MB file's progress redrawn in place, cleared before the report"
head -c 200M /dev/urandom >"$SRC/weights.bin"
line="$(printf '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" sync "$SRC" --dest "$DEST" --hosts h02)"
RC=0
script -qec "$line" /dev/null >"$TEST_TMP/tty" || RC=$?
assert_eq 0 "$RC" "sync on a terminal: $(cat -v "$TEST_TMP/tty" | tail -c 600)"
tty=$(cat "$TEST_TMP/tty")
[[ $tty == *$'\rsync: '*" MiB of 200.0 MiB, "*" of 1 files, 1 of 1 hosts compared"$'\e[K'* ]] ||
  fail "no progress line for the 200 MB file: $(cat -v "$TEST_TMP/tty" | head -c 600)"
# each redraw is \r "sync: ..." ESC[K; the last \r ESC[K clears it before the report
report=$(sed -E $'s/\rsync: [^\r]*\e\\[K//g; s/\r\e\\[K//g; s/\r$//' "$TEST_TMP/tty")
assert_not_contains "$report" "sync: " "the progress line left in the report"
assert_contains "$report" "h02: sent 1 file, 209715200 bytes; 1001 unchanged" "the report after the progress"
echo "PASS"
