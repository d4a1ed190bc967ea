#!/usr/bin/env bash
# xftctl check fabric on a 6-host namespace test cluster.
#  1. h01-h04 as they are: every host check PASSes and the real libfabric
#     tcp;ofi_rxm ping-pong of every ordered pair fills both matrices; exit 0
#     (--all: every row, as the default report prints only problems).
#     h02 has EFA's libfabric (a copy of this machine's in its own
#     /opt/amazon/efa/lib64): its pair workers load that one, the others the
#     system's, and the report names each file as the workers' dladdr saw it.
#  2. New TCP connections from h02 to h03 dropped (iptables in h03's network
#     namespace): h02 -> h03 FAILs (tcp, ssh, libfabric) with the firewall fix,
#     h03 -> h02 still PASSes, within the pair timeouts; exit 1. The default
#     report: those rows with their fix lines, the summary, the matrices.
#  3. Recorded sysfs trees (tests/data/fabric) mounted over /sys/class of each
#     host, the stub eadm and fi_info over /usr/local/bin, memlock set on the
#     host's sshd: eRDMA ok, eRDMA with cc unset, EFA, irdma/psm3, memlock
#     64 KiB, port DOWN. Each host's verdicts and fix lines are exact; the cc
#     fix line, run on the host, makes its check PASS. The default report is
#     exactly the problems, hosts with the same one folded (h[01-04,06]), each
#     with its fix line, then the summary; --all the full table.
#  4. A host that is down is one FAIL row naming it.
# Before all: xftctl itself does not link libfabric (fabric/libfabric.h).
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
DATA=$XFT_SOURCE_DIR/tests/data/fabric

# libfabric is opened by the pair workers alone: linked, its PSM providers'
# libraries would sleep in their constructors at every xftctl start.
assert_eq "" "$(ldd "$XFTCTL" | grep -oE 'lib(fabric|psm2|psm_infinipath|infinipath)\.so[.0-9]*' || true)" \
  "libfabric and its providers' libraries are not linked"

# Test hosts have a private /tmp: the pair workers run a copy from /run.
bin_dir=$(mktemp -d /run/xft-check-fabric-XXXXXX)
remove_on_exit "$bin_dir"
cp "$XFTCTL" "$bin_dir/xftctl"
export XDG_CACHE_HOME=$TEST_TMP/cache

start_cluster 6 --auth key
xft ping --accept-new-host-keys
assert_eq 0 "$RC" "ping (trust the test hosts' keys)"

common=(--remote-xftctl "$bin_dir/xftctl" --sizes 8,256K --iterations 50 --pair-timeout 2)
# "host-or-pair|check|verdict|observed|fix" per check, from --json.
rows() { jq -r '.checks[] | [(.host // .pair), .check, .verdict, .observed, .fix] | join("|")' <<<"$1"; }
# TEXT wrapped at spaces into lines of 100 columns behind a lead of LEAD columns.
wrap() {  # LEAD TEXT
  awk -v lead="$1" -v text="$2" 'BEGIN {
    n = split(text, words, " "); line = ""
    for (i = 1; i <= n; i++) {
      if (line != "" && lead + length(line) + 1 + length(words[i]) > 100) { print line; line = words[i] }
      else line = (line == "" ? words[i] : line " " words[i])
    }
    print line }' | sed "2,\$s/^/$(printf '%*s' "$1" '')/"
}
# One problem row and its fix line, in a WHO column of $width and a CHECK column of $check_width.
problem() {  # WHO CHECK VERDICT OBSERVED FIX
  printf '%-*s  %-*s  %-7s  %s\n' "$width" "$1" "$check_width" "$2" "$3" "$(wrap $((width + check_width + 13)) "$4")"
  printf '%*s  fix: %s\n' "$width" "" "$(wrap $((width + 7)) "$5")"
}
verdicts() { jq -r '.checks[] | [(.host // .pair), .check, .verdict] | join("|")' <<<"$1"; }

# h02 gets EFA's libfabric: a copy of this machine's libfabric.so.1 under a
# tmpfs over its /opt, seen by its mount namespace (its SSH sessions) alone.
system_libfabric=$(ldconfig -p | awk '$1 == "libfabric.so.1" && !found { print $NF; found = 1 }')
[[ -f $system_libfabric ]] || fail "no libfabric.so.1 in the loader's cache: $(ldconfig -p | grep fabric)"
version=$(fi_info --version | sed -n 's/^libfabric: //p')
efa_libfabric=/opt/amazon/efa/lib64/libfabric.so.1
host_run h02 sh -c "mount -t tmpfs xft-efa /opt && mkdir -p ${efa_libfabric%/*} && cp '$system_libfabric' $efa_libfabric"
[[ ! -e $efa_libfabric ]] || fail "$efa_libfabric exists outside h02"

step "1. four clean hosts: every check PASSes, both matrices filled; h02 measures with EFA's libfabric"
xft check fabric --hosts 'h[01-02]' --no-pairs --json
assert_eq "h01|libfabric|PASS|$version|
h02|libfabric|PASS|$version, EFA's in ${efa_libfabric%/*}|" "$(rows "$OUT" | grep '|libfabric|')" \
  "the probe finds EFA's libfabric on h02 only"
xft check fabric --hosts 'h[01-04]' "${common[@]}" --all
assert_eq 0 "$RC" "exit code of a clean check (stderr: $ERR)
$OUT"
# Latency outliers may WARN on this shared machine; nothing may FAIL.
grep -qE '^4 hosts, 12 pairs: [0-9]+ PASS, [0-9]+ WARN, 0 FAIL$' <<<"$OUT" || fail "summary line in:
$OUT"
for h in h01 h02 h03 h04; do
  addr=$(host_var "$h" ADDR)
  grep -qE "^$h +address +PASS +$addr/24 on eth0$" <<<"$OUT" || fail "$h address row in:
$OUT"
  for peer in h01 h02 h03 h04; do
    [[ $h == "$peer" ]] && continue
    grep -qE "^$h -> $peer +libfabric tcp;ofi_rxm +PASS +[0-9.]+ us at 8 B, [0-9.]+ GB/s at 262144 B$" <<<"$OUT" ||
      fail "$h -> $peer libfabric row in:
$OUT"
  done
done
# What each host's pair worker loaded (its dladdr), in the host rows and under the summary.
for h in h01 h03 h04; do
  grep -qE "^$h +libfabric +PASS +$version \($system_libfabric\)$" <<<"$OUT" || fail "$h libfabric row in:
$OUT"
done
grep -qE "^h02 +libfabric +PASS +$version \($efa_libfabric\)$" <<<"$OUT" || fail "h02 libfabric row in:
$OUT"
assert_eq "libfabric measured: $version ($system_libfabric) on h[01,03-04]
libfabric measured: $version ($efa_libfabric) on h02" "$(grep -A2 '^4 hosts, 12 pairs' <<<"$OUT" | sed 1d)" \
  "the libfabrics measured, under the summary"
latency=$(sed -n '/^latency, 8 B/,/^$/p' <<<"$OUT")
bandwidth=$(sed -n '/^bandwidth, 256 KiB/,/^$/p' <<<"$OUT")
# Every off-diagonal cell a number (maybe flagged "!"), the diagonal "-".
cells() { awk 'NR > 2 && NF {gsub(/ !/, ""); for (i = 2; i <= NF; i++) print NR - 2, ++c[NR], $i}' <<<"$1"; }
assert_eq 16 "$(cells "$latency" | wc -l)" "latency matrix has 4x4 cells:
$latency"
assert_eq 4 "$(cells "$latency" | awk '$1 == $2 && $3 == "-"' | wc -l)" "latency diagonal:
$latency"
assert_eq 12 "$(cells "$latency" | awk '$1 != $2 && $3 ~ /^[0-9]+\.[0-9]$/' | wc -l)" "12 measured latencies:
$latency"
assert_eq 12 "$(cells "$bandwidth" | awk '$1 != $2 && $3 ~ /^[0-9]+\.[0-9][0-9]$/' | wc -l)" "12 measured bandwidths:
$bandwidth"

xft check fabric --hosts 'h[01-02]' --remote-xftctl /nonexistent/xftctl --pair-timeout 2 --json
assert_eq 1 "$RC" "exit code when the pair worker is not on the hosts"
assert_eq "h01 -> h02|pair-worker|FAIL
h02 -> h01|pair-worker|FAIL" "$(verdicts "$OUT" | grep ' -> ')" "one pair-worker FAIL per pair"
row=$(rows "$OUT" | grep '^h01 -> h02|')
assert_contains "$row" "h01 -> h02|pair-worker|FAIL|h02: the pair worker (server) failed: " "the server's host is named"
assert_contains "$row" "/nonexistent/xftctl" "the missing path is named"
assert_contains "$row" "|put xftctl at the same path on every host (\`xftctl sync\`), or name it with --remote-xftctl" "its fix"

step "2. new connections h02 -> h03 dropped: that direction FAILs, the other PASSes"
h02=$(host_var h02 ADDR)
ip netns exec "$(host_var h03 NS)" iptables -A INPUT -s "$h02" -m conntrack --ctstate NEW -j DROP
start=$SECONDS
xft check fabric --hosts 'h[02-04]' "${common[@]}" --json
took=$((SECONDS - start))
assert_eq 1 "$RC" "exit code with a blocked pair"
all=$(rows "$OUT")
h03_port=$(grep '^h02 -> h03|tcp|' <<<"$all" | sed 's/.*|port \([0-9]*\):.*/\1/')
assert_eq "h02 -> h03|tcp|FAIL|port $h03_port: timed out after 2 s|allow all traffic inside the security group (here: new TCP connections from h02 to h03; see \`iptables -S\` / \`nft list ruleset\` on h03)
h02 -> h03|ssh|FAIL|port 22: timed out after 2 s|allow TCP port 22 from h02 to h03 (security group, firewall)" \
  "$(grep '^h02 -> h03|\(tcp\|ssh\)|' <<<"$all")" "the blocked direction's tcp and ssh rows"
assert_contains "$(grep '^h02 -> h03|libfabric' <<<"$all")" \
  "h02 -> h03|libfabric tcp;ofi_rxm|FAIL|no answer to the first message within 2 s" "the blocked direction's libfabric row"
assert_eq "h03 -> h02|tcp|PASS
h03 -> h02|ssh|PASS
h03 -> h02|libfabric tcp;ofi_rxm|PASS" "$(verdicts "$OUT" | grep '^h03 -> h02|\(tcp\|ssh\|libfabric\)')" "the other direction still works (latency outliers may WARN here)"
assert_eq 3 "$(verdicts "$OUT" | grep -c 'FAIL$')" "only the blocked direction FAILs"
assert_eq "h02,h03,h04|null|true|null" \
  "$(jq -r '[(.latency_us.hosts | join(",")), .latency_us.values[0][1], (.latency_us.values[1][0] > 0), .bandwidth_gbps.values[0][1]] | map(tostring) | join("|")' <<<"$OUT")" \
  "matrices in JSON: no figure for h02 -> h03, one for h03 -> h02"
assert_eq "h02 $efa_libfabric
h03 $system_libfabric
h04 $system_libfabric" "$(jq -r '.libfabric | to_entries[] | "\(.key) \(.value.path)"' <<<"$OUT")" \
  "the libfabric each host's worker loaded in JSON (h02's client ran though h03 is blocked)"
((took < 90)) || fail "a blocked pair must cost its timeouts, not more: the run took ${took}s"

# The text report on the blocked pair and its reverse alone (two rounds).
xft check fabric --hosts 'h[02-03]' "${common[@]}"
assert_eq 1 "$RC" "exit code with a blocked pair (text)"
h03_port=$(sed -n 's/^h02 -> h03  *tcp  .*FAIL     port \([0-9]*\): .*/\1/p' <<<"$OUT")
blocked=$(sed -n '/^h02 -> h03  *tcp /,/^h02 -> h03  *libfabric /p' <<<"$OUT" | sed '$d')
# One figure per matrix: no outliers; libfabric is the widest check.
width=10
check_width=21
assert_eq "$(problem 'h02 -> h03' tcp FAIL "port $h03_port: timed out after 2 s" \
  "allow all traffic inside the security group (here: new TCP connections from h02 to h03; see \`iptables -S\` / \`nft list ruleset\` on h03)"
  problem 'h02 -> h03' ssh FAIL "port 22: timed out after 2 s" "allow TCP port 22 from h02 to h03 (security group, firewall)")" \
  "$blocked" "the blocked direction's rows, each with its fix:
$OUT"
grep -qE '^h02 -> h03 +libfabric tcp;ofi_rxm  FAIL     no answer to the first message within 2 s' <<<"$OUT" ||
  fail "the blocked direction's libfabric row in:
$OUT"
assert_eq "" "$(grep '^h03 -> h02 ' <<<"$OUT" || true)" "no problem the other way"
grep -qE '^2 hosts, 2 pairs: [0-9]+ PASS, 0 WARN, 3 FAIL$' <<<"$OUT" || fail "summary line in:
$OUT"
assert_eq "libfabric measured: $version ($efa_libfabric) on h02
libfabric measured: $version ($system_libfabric) on h03" "$(grep -A2 '^2 hosts, 2 pairs' <<<"$OUT" | sed 1d)" \
  "the libfabrics measured, under the summary"
assert_contains "$OUT" "
latency, 8 B, one way (us; row: from, column: to)
from \\ to  " "the latency matrix"
grep -qE '^h02 +- +FAIL$' <<<"$OUT" || fail "h02's latency row: FAIL to h03 in:
$OUT"
ip netns exec "$(host_var h03 NS)" iptables -D INPUT -s "$h02" -m conntrack --ctstate NEW -j DROP

step "3. recorded sysfs trees and stub tools: each host's verdicts and fix lines"
# install_tree HOST SCENARIO FI_INFO_FLAVOR MEMLOCK [EADM_CC]
install_tree() {
  local host=$1 scenario=$2 flavor=$3 memlock=$4 cc=${5:-1}
  local bin=$CLUSTER_DIR/hosts/$host/fabric-bin
  mkdir -p "$bin"
  cp "$DATA/stubs/fi_info" "$DATA/stubs/eadm" "$bin/"
  echo "$flavor" >"$bin/fi_info.flavor"
  printf 'erdma_0 cc %s\nerdma_0 dack 0\n' "$cc" >"$bin/eadm.conf"
  # A host sees the cluster dir but not this source tree (its /tmp is its own).
  [[ -d $CLUSTER_DIR/fabric-data ]] || cp -a "$DATA" "$CLUSTER_DIR/fabric-data"
  host_run "$host" sh -c "mount -t tmpfs xft-fabric /sys/class && cp -a '$CLUSTER_DIR/fabric-data/$scenario/sys/class/.' /sys/class/ &&
    mount --bind '$bin' /usr/local/bin"
  # Raising memlock to unlimited needs CAP_SYS_RESOURCE, which a container
  # may lack; then those hosts keep this machine's limit, and the check must
  # say so (see memlock_row).
  prlimit --pid "$(host_var "$host" PID)" --memlock="$memlock" 2>/dev/null ||
    [[ $memlock == unlimited ]] || fail "prlimit --memlock=$memlock on $host"
}
# The memlock row of a host that asked for unlimited.
memlock_row() {
  if [[ $(prlimit --pid "$(host_var "$1" PID)" --memlock --noheadings --output SOFT) == unlimited ]]; then
    echo "$1|memlock|PASS|unlimited|"
  else
    echo "$1|memlock|FAIL|$(($(prlimit --pid "$(host_var "$1" PID)" --memlock --noheadings --output SOFT --raw) / 1024)) KiB (RDMA registration needs unlimited)|add \`* - memlock unlimited\` to /etc/security/limits.conf and log in again"
  fi
}
install_tree h01 erdma-ok verbs unlimited
install_tree h02 erdma-cc-unset verbs unlimited 0
install_tree h03 efa efa unlimited
install_tree h04 irdma-psm3 psm3 unlimited
install_tree h05 erdma-ok verbs $((64 * 1024))
install_tree h06 erdma-port-down verbs unlimited
awk '{print} /^  - name: h0[1256]$/ {print "    fabric: {provider: \"verbs;ofi_rxm\"}"}
     /^  - name: h03$/ {print "    fabric: {provider: efa}"} /^  - name: h04$/ {print "    fabric: {provider: psm3}"}' \
  "$CLUSTER_INVENTORY" >"$TEST_TMP/fabric.yaml"
CLUSTER_INVENTORY=$TEST_TMP/fabric.yaml

xft check fabric --no-pairs --json
assert_eq 1 "$RC" "exit code with FAILing hosts"
all=$(rows "$OUT")
for h in h01 h02 h03 h04 h06; do
  assert_eq "$(memlock_row $h)" "$(grep "^$h|memlock|" <<<"$all")" "$h memlock"
done
bad=$(grep -v '|PASS|' <<<"$all" | grep -v '^h0[1-46]|memlock|' || true)
assert_eq "h02|cc erdma_0|WARN|0 (not CUBIC)|eadm conf -d erdma_0 -t cc -v 1
h04|nic-numa|WARN|irdma0 on node 1, ranks on 0|put a rank beside the NIC: \`ranks: per-numa\` for h04 in the inventory
h05|memlock|FAIL|64 KiB (RDMA registration needs unlimited)|add \`* - memlock unlimited\` to /etc/security/limits.conf and log in again
h06|device erdma_0|FAIL|erdma, port 1 DOWN Disabled, Ethernet, NUMA 0, eth0|bring the link up: \`ip link set eth0 up\`; if it stays DOWN, the ERI is not attached to the instance (ECS console: bind an eRDMA interface)" \
  "$bad" "every WARN and FAIL with its fix"
assert_eq "h01|libfabric|PASS|1.17.0|
h01|provider|PASS|verbs;ofi_rxm FI_EP_RDM on erdma_0|
h01|device erdma_0|PASS|erdma, port 1 ACTIVE LinkUp, Ethernet, NUMA 0, eth0|
h01|eadm|PASS|driver 0.2.38|
h01|cc erdma_0|PASS|1 (CUBIC)|
h01|delayed-ack erdma_0|PASS|0 (off)|
h01|interface|PASS|eth0 mtu 1500|
h01|address|PASS|$(host_var h01 ADDR)/24 on eth0|
h01|nic-numa|PASS|erdma_0 on node 0, ranks on 0|" "$(grep '^h01|' <<<"$all" | grep -v '^h01|\(memlock\|open-mpi\|numactl\|clock\)|')" \
  "the healthy eRDMA host, check by check"
assert_eq "h03|libfabric|PASS|1.18.2amzn1.0|
h03|provider|PASS|efa FI_EP_RDM on rdmap0s31-rdm|
h03|device rdmap0s31|PASS|efa, port 1 ACTIVE LinkUp, Unspecified, NUMA 0, no interface|
h03|interface|PASS|eth0 mtu 9001|" "$(grep '^h03|\(libfabric\|provider\|device [^|]*\|interface\)|' <<<"$all")" "the EFA host"
assert_eq "h04|provider|PASS|psm3 FI_EP_RDM on psm3|
h04|device irdma0|PASS|irdma, port 1 ACTIVE LinkUp, Ethernet, NUMA 1, eth0|" \
  "$(grep '^h04|\(provider\|device [^|]*\)|' <<<"$all")" "the irdma/psm3 host"
assert_eq "" "$(grep '^h0[34]|\(eadm\|cc\|delayed-ack\)' <<<"$all" || true)" "no eadm checks without an eRDMA device"

# The default report: problems only, the same one on several hosts once.
json=$OUT
check_width=14
IFS='|' read -r _ _ memlock_verdict memlock_seen memlock_fix <<<"$(memlock_row h01)"
h05_memlock=("64 KiB (RDMA registration needs unlimited)" "$memlock_fix")
[[ $memlock_verdict == PASS ]] && h05_memlock[1]="add \`* - memlock unlimited\` to /etc/security/limits.conf and log in again"
cc=(h02 "cc erdma_0" WARN "0 (not CUBIC)" "eadm conf -d erdma_0 -t cc -v 1")
numa=(h04 nic-numa WARN "irdma0 on node 1, ranks on 0" "put a rank beside the NIC: \`ranks: per-numa\` for h04 in the inventory")
down=(h06 "device erdma_0" FAIL "erdma, port 1 DOWN Disabled, Ethernet, NUMA 0, eth0"
  "bring the link up: \`ip link set eth0 up\`; if it stays DOWN, the ERI is not attached to the instance (ECS console: bind an eRDMA interface)")
if [[ $memlock_verdict == PASS ]]; then
  width=4
  expected=$(problem "${cc[@]}"; problem "${numa[@]}"; problem h05 memlock FAIL "${h05_memlock[@]}"; problem "${down[@]}")
elif [[ $memlock_seen == "${h05_memlock[0]}" ]]; then  # this machine's limit is 64 KiB too
  width=8
  expected=$(problem 'h[01-06]' memlock FAIL "$memlock_seen" "$memlock_fix"; problem "${cc[@]}"; problem "${numa[@]}"; problem "${down[@]}")
else  # the hosts keep this machine's limit, h05 its 64 KiB: one row, the first host's figure shown
  width=8
  expected=$(problem 'h[01-06]' memlock FAIL "h01: $memlock_seen (1 others differ: --all)" "$memlock_fix"
    problem "${cc[@]}"; problem "${numa[@]}"; problem "${down[@]}")
fi
count() { jq "[.checks[] | select(.verdict == \"$1\")] | length" <<<"$json"; }
xft check fabric --no-pairs
assert_eq 1 "$RC" "exit code of the text report"
assert_eq "$(printf '%-*s  %-14s  VERDICT  OBSERVED' "$width" WHO CHECK)
$expected

6 hosts, no pairs: $(count PASS) PASS, $(count WARN) WARN, $(count FAIL) FAIL" "$OUT" "the default report"
xft check fabric --no-pairs --all
assert_contains "$OUT" "h02   cc erdma_0           WARN     0 (not CUBIC)
      fix: eadm conf -d erdma_0 -t cc -v 1" "--all: the text table puts the fix under its row"
assert_eq "$(jq '.checks | length' <<<"$json")" "$(grep -c '^h0[1-6] ' <<<"$OUT")" "--all: a row per check"
assert_eq "6 hosts, no pairs: $(count PASS) PASS, $(count WARN) WARN, $(count FAIL) FAIL" "$(tail -n 1 <<<"$OUT")" "--all: the summary last"

xft exec --hosts h02 -- eadm conf -d erdma_0 -t cc -v 1
assert_eq 0 "$RC" "the fix line runs on h02 ($ERR)"
assert_contains "$OUT" "cc set to 1" "eadm's answer"
xft check fabric --no-pairs --hosts h02 --json
expected_rc=0
[[ $(memlock_row h02) == *"|FAIL|"* ]] && expected_rc=1
assert_eq "$expected_rc" "$RC" "h02 passes after its fix (but for memlock where it cannot be unlimited here)"
assert_eq "h02|cc erdma_0|PASS|1 (CUBIC)|" "$(rows "$OUT" | grep '^h02|cc ')" "cc after the fix"

step "4. a host that is down: one FAIL that names it, the others still checked"
cluster stop-host h06
CLUSTER_INVENTORY=$TEST_TMP/fabric.yaml  # cluster reloads cluster.env
xft check fabric --no-pairs --hosts 'h[05-06]' --json
assert_eq 1 "$RC" "exit code with a host down"
h06_rows=$(rows "$OUT" | grep '^h06|')
assert_eq 1 "$(wc -l <<<"$h06_rows")" "one row for the host that is down:
$h06_rows"
assert_contains "$h06_rows" "h06|ssh|FAIL|h06" "the row names the host"
assert_contains "$h06_rows" "|run \`xftctl ping --hosts h06\` and fix what it reports" "its fix"
assert_contains "$(rows "$OUT")" "h05|memlock|FAIL|64 KiB" "h05 still checked"
echo "check_fabric: all checks passed"
