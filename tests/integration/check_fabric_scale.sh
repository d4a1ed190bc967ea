#!/usr/bin/env bash
# xftctl check fabric at scale, on 24 namespace test hosts.
#  1. --no-pairs: the default report fits 100 columns and 60 lines; a problem
#     every host has is one row for h[01-24] with one fix line; --json keeps
#     every row and parses.
#  2. Pairs on 17 hosts (past the 16 of a full matrix): each matrix is one row
#     per host within 100 columns; not on a terminal the progress through the
#     34 rounds is a line on stderr per tenth, none on stdout.
#  3. On a terminal (script(1)): a bar redrawn in place on stderr, cleared at
#     the end, stdout one JSON document; -q: no progress.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
command -v script >/dev/null || fail "this test needs script(1) (util-linux)"

# Test hosts have a private /tmp: the pair workers run a copy from /run.
bin_dir=$(mktemp -d /run/xft-check-fabric-scale-XXXXXX)
remove_on_exit "$bin_dir"
cp "$XFTCTL" "$bin_dir/xftctl"
export XDG_CACHE_HOME=$TEST_TMP/cache

start_cluster 24 --auth key
xft ping --accept-new-host-keys
assert_eq 0 "$RC" "ping (trust the test hosts' keys): $ERR"

fits() {  # TEXT WHAT [MAX_LINES]: at most 100 columns and 60 (MAX_LINES) lines
  local widest lines max_lines=${3:-60}
  widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' <<<"$1")
  lines=$(wc -l <<<"$1")
  ((widest <= 100)) || fail "$2: a line of $widest columns:
$1"
  ((lines <= max_lines)) || fail "$2: $lines lines:
$1"
}
count() { jq "[.checks[] | select(.verdict == \"$2\")] | length" <<<"$1"; }

step "1. --no-pairs on 24 hosts: the summary alone, within 100 columns and 60 lines"
xft check fabric --no-pairs --json
assert_eq 0 "$RC" "check fabric --no-pairs --json: $ERR"
python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$OUT" || fail "--json does not parse"
json=$OUT
assert_eq 24 "$(jq '[.checks[] | .host] | unique | length' <<<"$json")" "every host's rows in --json"
assert_eq "24|0" "$(jq -r '[.summary.hosts, .summary.pairs] | map(tostring) | join("|")' <<<"$json")" "JSON summary"
xft check fabric --no-pairs
assert_eq 0 "$RC" "check fabric --no-pairs: $ERR"
assert_eq "24 hosts, no pairs: $(count "$json" PASS) PASS, 0 WARN, 0 FAIL" "$OUT" "a clean cluster's report"
xft check fabric --no-pairs --all
assert_eq "$(jq '.checks | length' <<<"$json")" "$(grep -c '^h[0-9][0-9] ' <<<"$OUT")" "--all: a row per check"

step "   a provider no host has: each problem once, for h[01-24]"
xft check fabric --no-pairs --provider 'verbs;ofi_rxm' --json
assert_eq 1 "$RC" "exit code with FAILs"
bad_json=$OUT
xft check fabric --no-pairs --provider 'verbs;ofi_rxm'
assert_eq 1 "$RC" "exit code with FAILs (text)"
fits "$OUT" "the folded report"
problems=$(jq '[.checks[] | select(.verdict != "PASS") | .check] | unique | length' <<<"$bad_json")
((problems >= 2)) || fail "expected several problems: $bad_json"
# Per problem: its row (h[01-24] first) and its fix line; then a blank line and the summary.
assert_eq "$problems" "$(grep -c '^h\[01-24\]  ' <<<"$OUT")" "one row per problem, for every host:
$OUT"
assert_eq "$problems" "$(grep -c '^          fix: ' <<<"$OUT")" "one fix line per problem:
$OUT"
assert_eq "24 hosts, no pairs: $(count "$bad_json" PASS) PASS, $(count "$bad_json" WARN) WARN, $(count "$bad_json" FAIL) FAIL" \
  "$(tail -n 1 <<<"$OUT")" "the summary line"
# Long texts continue on indented lines: what starts a line is the header, the rows and the summary.
assert_eq $((problems + 2)) "$(grep -c '^[^ ]' <<<"$OUT")" "header, rows and summary:
$OUT"

step "2. pairs on 17 hosts: per-host matrix rows; progress a line per tenth on stderr"
pairs=(--remote-xftctl "$bin_dir/xftctl" --sizes 8,4K --iterations 5 --pair-timeout 2 --no-plan)
xft check fabric --hosts 'h[01-17]' "${pairs[@]}"
assert_eq 0 "$RC" "17-host pairs run: $ERR
$OUT"
# Two matrices of 17 rows each and the outliers folded into a row per check.
fits "$OUT" "the 17-host report" 70
grep -qE '^17 hosts, 272 pairs: [0-9]+ PASS, [0-9]+ WARN, 0 FAIL$' <<<"$OUT" || fail "summary line in:
$OUT"
latency=$(sed -n '/^latency, 8 B, one way (us; per host, to the other hosts)$/,/^$/p' <<<"$OUT")
bandwidth=$(sed -n '/^bandwidth, 4 KiB ping-pong (GB\/s; per host, to the other hosts)$/,/^!/p' <<<"$OUT")
grep -qE '^from +min +median +max  worst to$' <<<"$(sed -n 2p <<<"$latency")" || fail "latency header:
$latency"
assert_eq 17 "$(grep -cE '^h[0-9]{2} +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]  h[0-9]{2} [0-9]+\.[0-9]( !)?$' <<<"$latency")" \
  "17 latency rows (min, median, max, worst peer):
$latency"
assert_eq 17 "$(grep -cE '^h[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}  h[0-9]{2} [0-9]+\.[0-9]{2}( !)?$' <<<"$bandwidth")" \
  "17 bandwidth rows:
$bandwidth"
expected=""
for round in 4 7 11 14 17 21 24 28 31 34; do
  expected+="xftctl: check fabric: round $round/34 done ($((round * 100 / 34))%), 17 hosts"$'\n'
done
assert_eq "${expected%$'\n'}" "$ERR" "progress lines on stderr, one per tenth of the rounds"
assert_not_contains "$OUT" "round " "progress on stdout"

step "3. on a terminal: a bar redrawn in place on stderr, cleared; stdout one JSON document"
printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" check fabric --hosts 'h[01-03]' "${pairs[@]}" --json
RC=0
script -qec "$line >$(printf %q "$TEST_TMP/report.json")" /dev/null >"$TEST_TMP/tty" || RC=$?
tty=$(cat "$TEST_TMP/tty")
assert_eq 0 "$RC" "check fabric on a terminal: $(cat -v <<<"$tty")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TEST_TMP/report.json" || fail "--json on a terminal does not parse"
assert_eq 6 "$(jq '.summary.pairs' "$TEST_TMP/report.json")" "pairs in the JSON summary"
assert_not_contains "$tty" $'\n' "a line feed on the terminal (the bar is one line)"
for round in 1 2 3 4 5 6; do
  grep -qE $'\r'"check fabric \[[#.]{20}\]  round $round/6, [0-9]/1 pairs" <<<"$tty" ||
    fail "no bar for round $round: $(cat -v <<<"$tty")"
done
assert_eq $'\r\e[K' "${tty: -4}" "the terminal's last bytes clear the bar"

xft -q check fabric --hosts 'h[01-02]' "${pairs[@]}"
assert_eq 0 "$RC" "-q run"
assert_eq "" "$ERR" "-q: no progress"
echo "check_fabric_scale: all checks passed"
