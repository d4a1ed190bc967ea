#!/usr/bin/env bash
# xftctl check fabric at scale, on 24 namespace test hosts.
#  1. --no-pairs: the default report fits 100 columns and 60 lines; a problem
#     every host has is one row for h[01-24] with one fix line; --json keeps
#     every row and parses.
#  2. Pairs on 7 hosts, h07 without xftctl at the workers' path: its pair
#     problems fold into one row per direction (h[01-06] -> h07, h07 ->
#     h[01-06]) with one fix line each, within 100 columns; the matrices say
#     FAIL for its cells; not on a terminal the progress through the 14
#     rounds is a line on stderr per tenth (10 of them), none on stdout.
#     (Per-host matrix rows past 16 hosts: fabric_report_test.)
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

step "2. pairs on 7 hosts, h07 without xftctl: its pair problems folded; progress a line per tenth on stderr"
# h07's mount namespace alone sees an empty directory where the others have xftctl.
host_run h07 mount -t tmpfs xft-no-xftctl "$bin_dir"
pairs=(--remote-xftctl "$bin_dir/xftctl" --sizes 8,4K --iterations 5 --pair-timeout 2 --no-plan)
xft check fabric --hosts 'h[01-07]' "${pairs[@]}"
assert_eq 1 "$RC" "exit code with h07's pairs failing (text): $ERR"
fits "$OUT" "the 7-host report"
# Its two directions, each one row with its fix (long texts wrap onto
# indented lines: joined here); latency and bandwidth outliers may add rows.
joined=$(awk '/^ / { sub(/^ +/, " "); row = row $0; next } NR > 1 { print row } { row = $0 } END { print row }' <<<"$OUT")
fix='fix: put xftctl at the same path on every host (`xftctl sync`), or name it with --remote-xftctl'
grep -qxE "h\[01-06\] -> h07 +pair-worker +FAIL +h07: the pair worker \(server\) failed: .*$bin_dir/xftctl[^;(]* $(sed 's/[][().]/\\&/g' <<<"$fix")" <<<"$joined" ||
  fail "the servers' failures on h07 as one row:
$OUT"
grep -qxE "h07 -> h\[01-06\] +pair-worker +FAIL +h07: the pair worker exited with 127: .*$bin_dir/xftctl[^;(]* $(sed 's/[][().]/\\&/g' <<<"$fix")" <<<"$joined" ||
  fail "h07's clients' failures as one row (and not the servers they stopped):
$OUT"
# The CHECK of every problem row: h07's pairs, and outliers where this busy machine makes them.
checks=$(sed '/^7 hosts, /q' <<<"$OUT" | grep -oE '  [^ ]+( [^ ]+)?  +(WARN|FAIL)  ' | awk '{ print $1 }' | sort -u)
assert_eq "" "$(grep -vxE 'pair-worker|latency|bandwidth' <<<"$checks" || true)" "no other problem:
$OUT"
# A FAIL per pair of h07 (12), all in the two rows above.
grep -qxE '7 hosts, 42 pairs: [0-9]+ PASS, [0-9]+ WARN, 12 FAIL' <<<"$OUT" || fail "the summary line in:
$OUT"
system_libfabric=$(ldconfig -p | awk '$1 == "libfabric.so.1" && !found { print $NF; found = 1 }')
[[ -f $system_libfabric ]] || fail "no libfabric.so.1 in the loader's cache: $(ldconfig -p | grep fabric)"
assert_eq "libfabric measured: $(fi_info --version | sed -n 's/^libfabric: //p') ($system_libfabric) on h[01-06]" \
  "$(grep '^libfabric measured: ' <<<"$OUT")" "h07's workers never ran: the others' libfabric"
latency=$(sed -n '/^latency, 8 B, one way (us; row: from, column: to)$/,/^$/p' <<<"$OUT")
bandwidth=$(sed -n '/^bandwidth, 4 KiB ping-pong (GB\/s; row: from, column: to)$/,/^$/p' <<<"$OUT")
for matrix in "$latency" "$bandwidth"; do
  assert_eq "6|1" "$(grep -cE '^h0[1-6]( +(-|[0-9]+\.[0-9]+( !)?)){6} +FAIL$' <<<"$matrix")|$(grep -cE '^h07( +FAIL){6} +-$' <<<"$matrix")" \
    "six rows of figures with FAIL to h07, h07's row all FAIL:
$matrix"
done
expected=""
for round in 2 3 5 6 7 9 10 12 13 14; do
  expected+="xftctl: check fabric: round $round/14 done ($((round * 100 / 14))%), 7 hosts"$'\n'
done
assert_eq "${expected%$'\n'}" "$ERR" "progress lines on stderr, one per tenth of the rounds"
assert_not_contains "$OUT" "round " "progress on stdout"

step "3. on a terminal: a bar redrawn in place on stderr, cleared; stdout one JSON document"
printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" check fabric --hosts 'h[01-02]' "${pairs[@]}" --json
RC=0
script -qec "$line >$(printf %q "$TEST_TMP/report.json")" /dev/null >"$TEST_TMP/tty" || RC=$?
tty=$(cat "$TEST_TMP/tty")
assert_eq 0 "$RC" "check fabric on a terminal: $(cat -v <<<"$tty")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TEST_TMP/report.json" || fail "--json on a terminal does not parse"
assert_eq 2 "$(jq '.summary.pairs' "$TEST_TMP/report.json")" "pairs in the JSON summary"
assert_not_contains "$tty" $'\n' "a line feed on the terminal (the bar is one line)"
for round in 1 2; do
  grep -qE $'\r'"check fabric \[[#.]{20}\]  round $round/2, [0-9]/1 pairs" <<<"$tty" ||
    fail "no bar for round $round: $(cat -v <<<"$tty")"
done
assert_eq $'\r\e[K' "${tty: -4}" "the terminal's last bytes clear the bar"

xft -q check fabric --hosts 'h[01-02]' "${pairs[@]}"
assert_eq 0 "$RC" "-q run"
assert_eq "" "$ERR" "-q: no progress"
echo "check_fabric_scale: all checks passed"
