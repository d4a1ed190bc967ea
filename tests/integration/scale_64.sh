#!/usr/bin/env bash
# Output at cluster scale: on 64 namespace hosts, `setup hosts`, `exec --
# hostname`, `topology` and `check fabric --no-pairs` each print at most 100 columns and 60 lines by
# default (folded host sets, one-line outputs packed in columns, ranks per
# host and a transport summary instead of a rank x rank matrix), and the same
# runs with --json give one document that parses; on a terminal setup hosts
# shows its progress over the 64 hosts and clears it.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 64 --share-all --private /etc/xftctl

# fits NAME: stdout ($OUT) within 100 columns and 60 lines.
fits() {
  local widest lines
  widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' <<<"$OUT")
  lines=$(wc -l <<<"$OUT")
  ((widest <= 100)) || fail "$1: a line of $widest columns: $(awk 'length($0) > 100' <<<"$OUT" | head -n 3)"
  ((lines <= 60)) || fail "$1: $lines lines: $(head -n 70 <<<"$OUT")"
}
parses() {  # NAME: stdout is one JSON document
  python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$OUT" || fail "$1: --json does not parse: ${OUT:0:400}"
}

step "setup hosts: one line per task for all 64 hosts"
xft setup hosts --accept-new-host-keys
assert_eq 0 "$RC" "setup hosts on 64 hosts; stderr: ${ERR:0:400}"
fits "setup hosts"
assert_eq "xftctl: h[01-64]: new host keys trusted (as asked), added to ~/.config/xftctl/known_hosts" \
  "$(grep -F 'trust' <<<"$ERR")" "the 64 trusted keys told on one line"
[[ $(wc -L <<<"$ERR") -le 100 ]] || fail "setup hosts: a stderr line over 100 columns: $ERR"
assert_contains "$OUT" $'TASK [MPI hostfile]\n  changed: h[01-64]: /etc/xftctl/hostfile: created' "a folded task"
xft setup hosts --json
assert_eq 0 "$RC" "setup hosts --json"
parses "setup hosts --json"

step "setup hosts on a terminal (script): a progress line over the 64 hosts, cleared before the end"
printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" setup hosts --json
RC=0
script -qec "$line >$(printf %q "$TEST_TMP/setup.json")" /dev/null >"$TEST_TMP/tty" || RC=$?
assert_eq 0 "$RC" "setup hosts --json on a terminal; terminal: $(cat -v "$TEST_TMP/tty" | head -c 400)"
tty=$(cat "$TEST_TMP/tty")
assert_contains "$tty" $'\rsetup hosts [' "the progress line drawn on the terminal"
assert_contains "$tty" "/64 hosts" "the progress line counts the 64 hosts"
[[ $tty == *$'\r\e[K' ]] || fail "the progress line is not cleared at the end: $(tail -c 200 "$TEST_TMP/tty" | cat -v)"
OUT=$(cat "$TEST_TMP/setup.json")
parses "setup hosts --json under a terminal"

step "exec -- hostname: 64 one-line outputs packed in columns"
xft exec -- hostname
assert_eq 0 "$RC" "exec hostname on 64 hosts"
assert_eq "" "$ERR" "exec stderr once keys are known"
fits "exec hostname"
expected=""
for i in $(seq 1 64); do
  h=h$(printf %02d "$i")
  ((i % 10 == 0 || i == 64)) && expected+="$h: $h"$'\n' || expected+="$h: $h  "
done
assert_eq "${expected%$'\n'}" "$OUT" "exec hostname packed, 10 to a row"

step "exec -- echo hi: 64 hosts folded into one block"
xft exec -- echo hi
assert_eq $'---- h[01-64] (exit 0) ----\nhi' "$OUT" "exec echo folded"
fits "exec echo"

step "exec --json: one document with every host"
xft exec --json -- hostname
assert_eq 0 "$RC" "exec --json exit code"
parses "exec --json"
assert_eq "64 ok 64" "$(jq -r '[(.hosts | length), (.hosts[63].status), (.hosts | map(select(.stdout == .host + "\n")) | length)] | join(" ")' <<<"$OUT")" "exec --json hosts"

step "topology: ranks per host and one transport summary"
xft topology --ranks-per-host 1
assert_eq 0 "$RC" "topology exit code; stderr: ${ERR:0:400}"
fits "topology"
per_host=""
for i in $(seq 1 64); do per_host+="h$(printf %02d "$i") $((i - 1)), "; done
assert_eq "${per_host%, }" "$(sed -n '/^Ranks per host:/,/^$/p' <<<"$OUT" | sed '1d;$d;s/^  //' | tr '\n' ' ' | sed 's/ $//')" "ranks per host"
assert_contains "$OUT" $'Transports:\n  tcp;ofi_rxm across hosts (4032 rank pairs)' "transport summary"
assert_contains "$OUT" "h[01-64]: 64 hosts, 1 rank each" "one binding block for identical hosts"

xft topology --ranks-per-host 1 --json
parses "topology --json"
assert_eq "64 64" "$(jq -r '[(.hosts | length), (.ranks | length)] | join(" ")' <<<"$OUT")" "topology --json sizes"

step "check fabric --no-pairs: a clean cluster in one line, a problem every host has in one row"
xft check fabric --no-pairs --json
assert_eq 0 "$RC" "check fabric --no-pairs --json; stderr: ${ERR:0:400}"
parses "check fabric --no-pairs --json"
passed=$(jq '[.checks[] | select(.verdict == "PASS")] | length' <<<"$OUT")
assert_eq 64 "$(jq '[.checks[] | .host] | unique | length' <<<"$OUT")" "every host's rows in --json"
xft check fabric --no-pairs
assert_eq 0 "$RC" "check fabric --no-pairs"
fits "check fabric --no-pairs"
assert_eq "64 hosts, no pairs: $passed PASS, 0 WARN, 0 FAIL" "$OUT" "the clean report"
xft check fabric --no-pairs --provider 'verbs;ofi_rxm'
assert_eq 1 "$RC" "a provider no host has FAILs"
fits "check fabric --no-pairs --provider 'verbs;ofi_rxm'"
assert_contains "$OUT" "h[01-64]  " "a problem folded over all 64 hosts"

echo "PASS: scale_64"
