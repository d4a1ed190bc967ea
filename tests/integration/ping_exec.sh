#!/usr/bin/env bash
# `xftctl ping` and `xftctl exec` against 4 real OpenSSH test hosts
# (tests/cluster/cluster.sh): host key trust on first use only when asked,
# the ping table, clush-style folding by output and exit status, --stream,
# --json, --timeout, the progress line on a terminal, per-host exit codes, an unreachable
# host (exit 4), a changed host key (refused, whatever the flags), key and
# password logins, and the password never showing in output or in `ps`.
#
# Exit codes checked: 0 all ok; 2 some host failed (auth, command, host key
# unknown or changed: the host answered, the run must not go on); 4 some host
# unreachable (wins over 2).
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

watch_process_list "$TEST_TMP/ps.log"
start_cluster 4
KNOWN_HOSTS="$HOME/.config/xftctl/known_hosts"
H=(h01 h02 h03 h04)
addr() { host_var "$1" ADDR; }
fingerprint() { ssh-keygen -lf "$CLUSTER_DIR/hosts/$1/ssh_host_ed25519_key.pub" | awk '{print $2}'; }
squeeze() { sed 's/  */ /g'; }

step "unknown host keys are refused without --accept-new-host-keys (exit 2)"
xft ping
assert_eq 2 "$RC" "ping exit code with unknown host keys"
for h in "${H[@]}"; do
  assert_contains "$ERR" "xftctl: $h ($(addr "$h")): host key unknown: ssh-ed25519 $(fingerprint "$h") is not in $KNOWN_HOSTS; check the fingerprint, then rerun with --accept-new-host-keys to trust it" "refusal of $h"
  assert_contains "$(squeeze <<<"$OUT")" "$h $(addr "$h") host key unknown - - - -" "row of $h"
done
assert_contains "$OUT" "4 hosts: 4 host key unknown" "summary"
[[ ! -e $KNOWN_HOSTS ]] || fail "known_hosts written although no key was accepted"

step "--accept-new-host-keys trusts and records them"
xft ping --accept-new-host-keys
assert_eq 0 "$RC" "ping exit code, keys accepted; stderr: $ERR"
assert_eq "xftctl: h[01-04]: new host keys trusted (as asked), added to ~/.config/xftctl/known_hosts" "$ERR" \
  "one folded notice for the 4 hosts"
expected_known=""
for h in "${H[@]}"; do
  expected_known+="$(addr "$h") $(cut -d' ' -f1,2 "$CLUSTER_DIR/hosts/$h/ssh_host_ed25519_key.pub")"$'\n'
done
sort <<<"$expected_known" | sed '/^$/d' >"$TEST_TMP/known.expected"
sort "$KNOWN_HOSTS" >"$TEST_TMP/known.actual"
cmp -s "$TEST_TMP/known.expected" "$TEST_TMP/known.actual" || fail "known_hosts content: $(cat "$KNOWN_HOSTS")"

step "-v: each host's fingerprint on a line of its own, then the folded notice"
xft -v ping --accept-new-host-keys --known-hosts "$TEST_TMP/known_hosts_v"
assert_eq 0 "$RC" "ping -v with new keys; stderr: $ERR"
for h in "${H[@]}"; do
  assert_contains "$ERR" "xftctl: debug: $h ($(addr "$h")): trusting new host key ssh-ed25519 $(fingerprint "$h") on first use (as asked); recorded in $TEST_TMP/known_hosts_v" "-v notice for $h"
done
assert_eq "xftctl: h[01-04]: new host keys trusted (as asked), added to $TEST_TMP/known_hosts_v" \
  "$(grep -v 'debug:' <<<"$ERR")" "the folded notice under -v"

step "--log-format json: a record per trusted key with its fingerprint"
xft --log-format json ping --accept-new-host-keys --known-hosts "$TEST_TMP/known_hosts_json"
assert_eq 0 "$RC" "ping --log-format json with new keys; stderr: $ERR"
expected_records=""
for h in "${H[@]}"; do expected_records+="$h ssh-ed25519 $(fingerprint "$h") $TEST_TMP/known_hosts_json"$'\n'; done
assert_eq "$(sort <<<"${expected_records%$'\n'}")" \
  "$(jq -r 'select(.fingerprint) | "\(.host) \(.key_type) \(.fingerprint) \(.known_hosts)"' <<<"$ERR" | sort)" \
  "one JSON record per trusted key"

step "ping rows hold each host's own facts, read inside its namespace"
expected_table="HOST ADDRESS STATUS OS KERNEL CPUS MEMORY"
for h in "${H[@]}"; do
  os=$(host_run "$h" sh -c '. /etc/os-release; echo "$PRETTY_NAME"')
  kernel=$(host_run "$h" uname -r)
  cpus=$(host_run "$h" nproc)
  memory=$(host_run "$h" awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  expected_table+=$'\n'"$h $(addr "$h") ok $os $kernel $cpus $memory"
done
expected_table+=$'\n'"4 hosts: 4 ok"
xft ping
assert_eq 0 "$RC" "ping exit code, all known"
assert_eq "$expected_table" "$(squeeze <<<"$OUT")" "ping table"
assert_eq "" "$ERR" "ping stderr once keys are known"

xft ping --json
assert_eq 0 "$RC" "ping --json exit code"
assert_eq "h01 h02 h03 h04" "$(jq -r '[.[].host] | join(" ")' <<<"$OUT")" "json hosts"
assert_eq "ok ok ok ok" "$(jq -r '[.[].status] | join(" ")' <<<"$OUT")" "json statuses"
assert_eq "$(host_run h02 nproc)" "$(jq -r '.[1].cpus' <<<"$OUT")" "json cpus of h02"
assert_eq "$(host_run h03 awk '/^MemTotal:/ {print $2}' /proc/meminfo)" "$(jq -r '.[2].memory_kib' <<<"$OUT")" "json memory of h03"

step "exec folds identical output and exit status like clush -b"
xft exec -- hostname
assert_eq 0 "$RC" "exec hostname exit code"
expected=""
for h in "${H[@]}"; do expected+="---- $h (exit 0) ----"$'\n'"$h"$'\n'; done
assert_eq "${expected%$'\n'}" "$OUT" "exec hostname output"

xft exec -- echo hi
assert_eq 0 "$RC" "exec echo exit code"
assert_eq $'---- h[01-04] (exit 0) ----\nhi' "$OUT" "exec echo hi folded"
assert_eq "" "$ERR" "exec echo stderr (a fast run shows no progress off a terminal)"

step "per-host exit codes"
xft exec -- 'case $(hostname) in h02) exit 3;; h04) echo other; exit 5;; esac; echo fine'
assert_eq 2 "$RC" "exec exit code when commands fail"
assert_eq $'---- h[01,03] (exit 0) ----\nfine\n---- h02 (exit 3) ----\n---- h04 (exit 5) ----\nother' "$OUT" "exec mixed output"
assert_eq $'xftctl: h02: exited with 3\nxftctl: h04: exited with 5' "$ERR" "exec exit lines"

xft exec --hosts 'h[02-03]' -- hostname
assert_eq $'---- h02 (exit 0) ----\nh02\n---- h03 (exit 0) ----\nh03' "$OUT" "exec --hosts"

xft exec -- 'case $(hostname) in h0[12]) echo same; exit 1;; esac; echo same'
assert_eq 2 "$RC" "exec with the same output, different exit statuses"
assert_eq $'---- h[01-02] (exit 1) ----\nsame\n---- h[03-04] (exit 0) ----\nsame' "$OUT" "exit status splits a fold"
assert_eq "xftctl: h[01-02]: exited with 1" "$ERR" "hosts with the same exit status share a line"

step "exec --stream: host: line, each stream to its own"
xft exec --stream -- 'echo one; echo warn >&2; printf two'
assert_eq 0 "$RC" "exec --stream exit code"
expected=""
for h in "${H[@]}"; do expected+="$h: one"$'\n'"$h: two"$'\n'; done
assert_eq "${expected%$'\n'}" "$(sort -s -t: -k1,1 <<<"$OUT")" "stream stdout, a host's lines in order"
assert_eq $'h01: warn\nh02: warn\nh03: warn\nh04: warn' "$(sort <<<"$ERR")" "stream stderr"
xft exec --stream --json -- true
assert_eq 5 "$RC" "--stream with --json is a usage error"

step "exec --json: one document with every host"
xft exec --json -- 'echo out; echo err >&2; test $(hostname) != h02'
assert_eq 2 "$RC" "exec --json exit code with a failing host"
assert_eq "exec --json: echo out; echo err >&2; test \$(hostname) != h02" "exec --json: $(jq -r .command <<<"$OUT")" "json command"
assert_eq "h01 ok 0|h02 failed 1|h03 ok 0|h04 ok 0" "$(jq -r '[.hosts[] | "\(.host) \(.status) \(.exit_status)"] | join("|")' <<<"$OUT")" "json statuses"
assert_eq $'out\n|err\n|null' "$(jq -r '.hosts[2] | "\(.stdout)|\(.stderr)|\(.error)"' <<<"$OUT")" "json streams of h03"
assert_eq "xftctl: h02: exited with 1" "$ERR" "json run's stderr"
xft exec --hosts h09 -- true
assert_eq 1 "$RC" "exec --hosts with an unknown host"
assert_eq "xftctl: --hosts: h09 is not an inventory host or group (see xftctl inventory show)" "$ERR" "unknown --hosts message"

xft exec --timeout 1 --hosts h01 -- sleep 8
assert_eq 2 "$RC" "exec past --timeout"
assert_eq "xftctl: h01 ($(addr h01)): command timed out after 1s: sleep 8" "$ERR" "timeout message"
xft exec --json --timeout 1 --hosts h01 -- sleep 8
assert_eq 2 "$RC" "exec --json past --timeout"
assert_eq "timeout null" "$(jq -r '.hosts[0] | "\(.status) \(.exit_status)"' <<<"$OUT")" "json timeout"
xft exec --timeout 1 --hosts 'h[01-02]' -- sleep 8
assert_eq 2 "$RC" "exec past --timeout on two hosts"
assert_eq "xftctl: h[01-02]: command timed out after 1s: sleep 8" "$ERR" "hosts timed out alike: one line"
assert_contains "$("$XFTCTL" exec --help)" "--timeout INT:INT in [0 - 604800]=600" "exec's default timeout"

step "exec on a terminal: the hosts still running, redrawn in place and cleared"
if command -v script >/dev/null; then
  printf -v line '%q ' "$XFTCTL" -i "$CLUSTER_INVENTORY" exec --hosts h02 -- 'sleep 2; echo done'
  script -qec "$line" /dev/null >"$TEST_TMP/tty"
  tty=$(sed 's/\r$//' "$TEST_TMP/tty")
  assert_contains "$tty" $'\r1 of 1 hosts still running: h02\e[K' "progress line"
  assert_eq $'---- h02 (exit 0) ----\ndone' "$(sed 's/\r1 of 1 hosts still running: h02\x1b\[K//g; s/\r\x1b\[K//g' <<<"$tty")" "report once the line is cleared"
  printf -v line '%q ' "$XFTCTL" -q -i "$CLUSTER_INVENTORY" exec --hosts h02 -- 'sleep 1; echo done'
  script -qec "$line" /dev/null >"$TEST_TMP/tty"
  assert_eq $'---- h02 (exit 0) ----\ndone' "$(sed 's/\r$//' "$TEST_TMP/tty")" "-q: no progress line"
else
  echo "no script(1): terminal progress not checked"
fi

step "each host has its own /tmp; --share-free hosts have their own shared dir"
xft exec -- 'echo $(hostname) > /tmp/me; echo $(hostname) > /mnt/me'
xft exec -- 'cat /tmp/me /mnt/me'
expected=""
for h in "${H[@]}"; do expected+="---- $h (exit 0) ----"$'\n'"$h"$'\n'"$h"$'\n'; done
assert_eq "${expected%$'\n'}" "$OUT" "per-host files"

step "the transport against a real sshd (unit_remote SshTransportLive.*)"
unit_remote="${XFT_BUILD_DIR:?}/tests/unit_remote"
XFT_SSH_TEST_ADDRESS=$(addr h01) XFT_SSH_TEST_PASSWORD_ENV=XFT_TEST_PASSWORD \
  XFT_SSH_TEST_KNOWN_HOSTS="$KNOWN_HOSTS" \
  "$unit_remote" --gtest_filter='SshTransportLive.*' --gtest_brief=1 >"$TEST_TMP/live.log" 2>&1 \
  || fail "SshTransportLive: $(cat "$TEST_TMP/live.log")"
grep -q "SKIPPED" "$TEST_TMP/live.log" && fail "SshTransportLive tests were skipped: $(cat "$TEST_TMP/live.log")"
grep -q "PASSED.* 6 tests" "$TEST_TMP/live.log" || fail "SshTransportLive did not run 6 tests: $(cat "$TEST_TMP/live.log")"

step "key login: an inventory with key and no password"
ssh-keygen -q -t ed25519 -N '' -C xft-test -f "$TEST_TMP/id_ed25519"
for h in "${H[@]}"; do host_run "$h" sh -c "cat >> /root/.ssh/authorized_keys" <"$TEST_TMP/id_ed25519.pub"; done
sed -e "s|password_env: XFT_TEST_PASSWORD|key: $TEST_TMP/id_ed25519|" "$CLUSTER_INVENTORY" >"$TEST_TMP/key-inventory.yaml"
grep -q "key: $TEST_TMP/id_ed25519" "$TEST_TMP/key-inventory.yaml" || fail "key inventory not written"
RC=0
env -u XFT_TEST_PASSWORD "$XFTCTL" -i "$TEST_TMP/key-inventory.yaml" exec -- echo key-ok >"$TEST_TMP/out" 2>"$TEST_TMP/err" || RC=$?
assert_eq 0 "$RC" "exec with key auth; stderr: $(cat "$TEST_TMP/err")"
assert_eq $'---- h[01-04] (exit 0) ----\nkey-ok' "$(cat "$TEST_TMP/out")" "key auth output"

step "a wrong password is an auth failure (exit 2) and never printed"
RC=0
XFT_TEST_PASSWORD=Wrong-Pass-9731 "$XFTCTL" -i "$CLUSTER_INVENTORY" ping --hosts h01 >"$TEST_TMP/out" 2>"$TEST_TMP/err" || RC=$?
assert_eq 2 "$RC" "ping with a wrong password"
assert_contains "$(squeeze <"$TEST_TMP/out")" "h01 $(addr h01) auth failed - - - -" "auth failed row"
assert_eq "xftctl: h01 ($(addr h01)): authentication failed for user root: tried password from \$XFT_TEST_PASSWORD (rejected); the server accepts publickey,password" "$(cat "$TEST_TMP/err")" "auth failure message"
assert_not_contains "$(cat "$TEST_TMP/out" "$TEST_TMP/err")" "Wrong-Pass-9731" "wrong password in output"

step "a host whose sshd is down is unreachable (exit 4); the others still answer"
cluster stop-host h03
xft ping
assert_eq 4 "$RC" "ping with h03 down"
table=$(squeeze <<<"$OUT")
assert_contains "$table" "h03 $(addr h03) unreachable - - - -" "unreachable row"
assert_contains "$table" "h04 $(addr h04) ok " "h04 still answers"
assert_contains "$table" "4 hosts: 3 ok, 1 unreachable" "summary with h03 down"
assert_contains "$ERR" "xftctl: h03 ($(addr h03)): unreachable: " "unreachable message"
xft exec -- echo hi
assert_eq 4 "$RC" "exec with h03 down"
assert_eq $'---- h[01-02,04] (exit 0) ----\nhi' "$OUT" "exec folding without h03"
assert_eq "xftctl: h03 ($(addr h03)): unreachable: Connection refused" "$ERR" "one unreachable host: its whole message"
xft exec -- 'test $(hostname) != h01'
assert_eq 4 "$RC" "unreachable wins over a failed command"
cluster stop-host h04
xft exec -- echo hi
assert_eq 4 "$RC" "exec with h03 and h04 down"
assert_eq $'---- h[01-02] (exit 0) ----\nhi' "$OUT" "exec folding without h03 and h04"
assert_eq "xftctl: h[03-04]: unreachable: Connection refused" "$ERR" "hosts unreachable alike: one line"
cluster start-host h04
cluster start-host h03
xft ping --hosts h03
assert_eq 0 "$RC" "h03 back after start-host"

step "a changed host key is refused, even with --accept-new-host-keys"
old_fp=$(grep -n "^$(addr h02) " "$KNOWN_HOSTS" | cut -d: -f1)
old_print=$(fingerprint h02)
cp "$KNOWN_HOSTS" "$TEST_TMP/known.before"
cluster rekey h02
new_print=$(fingerprint h02)
[[ $old_print != "$new_print" ]] || fail "rekey kept the same key"
xft ping --accept-new-host-keys
assert_eq 2 "$RC" "ping with a changed key"
assert_contains "$(squeeze <<<"$OUT")" "h02 $(addr h02) host key changed - - - -" "changed row"
assert_eq "xftctl: h02 ($(addr h02)): HOST KEY CHANGED: the server offers ssh-ed25519 $new_print but $KNOWN_HOSTS:$old_fp holds ssh-ed25519 $old_print; this can be a man-in-the-middle attack and no flag overrides it; if the host was reinstalled, delete line $old_fp of $KNOWN_HOSTS and rerun with --accept-new-host-keys" "$ERR" "changed key message"
cmp -s "$KNOWN_HOSTS" "$TEST_TMP/known.before" || fail "known_hosts modified on a changed key"
xft exec --accept-new-host-keys -- true
assert_eq 2 "$RC" "exec with a changed key"
sed -i "${old_fp}d" "$KNOWN_HOSTS"
xft ping --accept-new-host-keys
assert_eq 0 "$RC" "after deleting the line as told"

step "--known-hosts and XFTCTL_KNOWN_HOSTS pick another file"
xft ping --known-hosts "$TEST_TMP/other_known_hosts" --hosts h01
assert_eq 2 "$RC" "empty --known-hosts file refuses"
xft ping --known-hosts "$TEST_TMP/other_known_hosts" --hosts h01 --accept-new-host-keys
assert_eq 0 "$RC" "--known-hosts accept"
assert_eq "$(addr h01) $(cut -d' ' -f1,2 "$CLUSTER_DIR/hosts/h01/ssh_host_ed25519_key.pub")" "$(cat "$TEST_TMP/other_known_hosts")" "--known-hosts file"
RC=0
XFTCTL_KNOWN_HOSTS="$TEST_TMP/other_known_hosts" "$XFTCTL" -i "$CLUSTER_INVENTORY" ping --hosts h02 >/dev/null 2>&1 || RC=$?
assert_eq 2 "$RC" "XFTCTL_KNOWN_HOSTS is used (h02 not in it)"

step "the password never appeared in a process list or in any output"
stop_background  # before grepping for the password: grep's own arguments hold it
[[ -s $TEST_TMP/ps.log ]] || fail "process list watcher recorded nothing"
grep -qF -- "$XFT_TEST_PASSWORD" "$TEST_TMP/ps.log" && fail "the password showed up in ps"
grep -qF -- "$XFTCTL" "$TEST_TMP/ps.log" || fail "the watcher never saw xftctl running"
grep -rqF -- "$XFT_TEST_PASSWORD" "$CLUSTER_DIR"/hosts/*/sshd.log && fail "the password is in an sshd log"

step "stop leaves nothing behind"
run_id=$CLUSTER_ID
bash "$CLUSTER_SH" stop "$CLUSTER_DIR" >/dev/null
CLUSTER_DIR=
leftover_ns=$(ip netns list | grep "^xft$run_id" || true)
leftover_links=$(ip -o link show | grep "xft$run_id" || true)
assert_eq "" "$leftover_ns$leftover_links" "namespaces or links left by stop"
[[ ! -e /run/xftctl-test-cluster/$run_id ]] || fail "registry entry left by stop"

step "leftovers of a crashed run are cleaned up by the next start"
sleep 600 &
crashed_owner=$!
bash "$CLUSTER_SH" start "$TEST_TMP/crashed" -n 2 --owner "$crashed_owner" >/dev/null 2>&1
crashed_id=$(cat "$TEST_TMP/crashed/run.id")
[[ -n $(ip netns list | grep "^xft$crashed_id" || true) ]] || fail "crashed run has no namespaces to clean"
bash "$CLUSTER_SH" cleanup 2>/dev/null
[[ -n $(ip netns list | grep "^xft$crashed_id" || true) ]] || fail "cleanup removed a run whose owner lives"
kill "$crashed_owner"
wait "$crashed_owner" 2>/dev/null || true
bash "$CLUSTER_SH" cleanup 2>/dev/null
[[ -z $(ip netns list | grep "^xft$crashed_id" || true) ]] || fail "cleanup left the crashed run's namespaces"
[[ -z $(ip -o link show | grep "xft$crashed_id" || true) ]] || fail "cleanup left the crashed run's links"
echo "PASS: ping_exec"
