#!/usr/bin/env bash
# `xftctl setup hosts` on 4 test hosts that start with password-only root
# logins: afterwards the real OpenSSH client reaches every host from every
# host by name and by address (BatchMode, StrictHostKeyChecking=yes); a second
# run changes nothing; lines outside what setup owns are kept; --check writes
# nothing (hashes before and after); a stopped host is unreachable (exit 4)
# while the others complete; the password shows up nowhere. The MPI hostfile
# it writes is what `launch --hostfile` reads.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

watch_process_list "$TEST_TMP/ps.log"
start_cluster 4 --share-all --private /etc/xftctl
H=(h01 h02 h03 h04)
addr() { host_var "$1" ADDR; }
all_out=""

# The names of a folded set of one prefix, one a line: h[01-02,04] -> h01 h02 h04.
expand_set() {
  local prefix items suffix item first
  [[ $1 =~ ^([^][]*)\[([^]]*)\](.*)$ ]] || { echo "$1"; return; }
  prefix=${BASH_REMATCH[1]} items=${BASH_REMATCH[2]} suffix=${BASH_REMATCH[3]}
  for item in ${items//,/ }; do
    if [[ $item == *-* ]]; then
      first=${item%%-*}
      seq -f "$prefix%0${#first}g$suffix" "$((10#$first))" "$((10#${item##*-}))"
    else
      echo "$prefix$item$suffix"
    fi
  done
}
# The recap row that holds HOST (rows fold hosts with equal counters): "ok=N changed=N ...".
recap() {
  local names counters
  while read -r names counters; do
    expand_set "$names" | grep -qx "$1" && echo "$counters"
  done < <(sed -n '/^RECAP/,$p' <<<"$OUT" | grep -E '^  [^ ]+ +ok=')
}
field() { recap "$1" | grep -oE "$2=[0-9]+" | cut -d= -f2; }
# RECAP's rows ("  NAMES  ok=N ..."), the numbers of the fields that $1 does not match shown as N.
recap_shape() {
  local field masked=()
  for field in ok changed failed unreachable skipped; do [[ $field =~ ^($1)$ ]] || masked+=("$field"); done
  sed -n '/^RECAP/,$p' <<<"$OUT" | tail -n +2 | sed -E "s/ ($(IFS='|' && echo "${masked[*]}"))=[0-9]+/ \1=N/g"
}
# sha256 of every file setup may touch, per host
hash_host_files() {
  local h
  for h in "${H[@]}"; do
    host_run "$h" sh -c 'for f in /root/.ssh/* /etc/hosts /etc/xftctl/* /mnt/.xftctl-*; do [ -f "$f" ] && sha256sum "$f"; done; ls -la /root/.ssh /etc/xftctl 2>/dev/null' |
      sed "s|^|$h |"
  done
}

step "lines that setup does not own are there before it runs"
host_run h02 sh -c 'echo "ssh-rsa AAAAB3forEIGNkey operator@laptop" >> /root/.ssh/authorized_keys'
host_run h02 sh -c 'echo "10.250.0.9 printer # added by hand" >> /etc/hosts'
hosts_before=$(host_run h02 cat /etc/hosts)

step "first run: password logins, new host keys trusted as asked"
xft setup hosts --accept-new-host-keys
all_out+="$OUT$ERR"
assert_eq 0 "$RC" "setup exit code; out: $OUT; err: $ERR"
for h in "${H[@]}"; do
  assert_eq 0 "$(field "$h" failed)" "failed tasks on $h"
  assert_eq 0 "$(field "$h" unreachable)" "unreachable on $h"
  [[ $(field "$h" changed) -gt 0 ]] || fail "first run changed nothing on $h"
done
assert_contains "$ERR" "xftctl: h[01-04]: new host keys trusted (as asked), added to ~/.config/xftctl/known_hosts" \
  "one folded trust-on-first-use notice"
[[ $ERR != *"trusting new host key"* ]] || fail "a per-host trust notice without -v: $ERR"
assert_contains "$OUT" "TASK [packages a rank needs]" "package task ran"
# h01 alone runs the run_once steps of the shared-path check
assert_eq "  h01       ok=N changed=N failed=0 unreachable=0 skipped=N
  h[02-04]  ok=N changed=N failed=0 unreachable=0 skipped=N" "$(recap_shape 'failed|unreachable')" \
  "folded recap rows: $OUT"
[[ $(wc -L <<<"$OUT") -le 100 ]] || fail "a line over 100 columns: $OUT"

step "every host reaches every other by name and by address (real ssh, strict host keys, no password)"
for h in "${H[@]}"; do
  for o in "${H[@]}"; do
    [[ $h == "$o" ]] && continue
    for target in "$o" "$(addr "$o")"; do
      got=$(host_run "$h" ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 "$target" hostname 2>&1) ||
        fail "$h -> $target: $got"
      assert_eq "$o" "$got" "hostname seen by ssh from $h to $target"
    done
  done
done

step "lines outside the managed parts are untouched"
assert_contains "$(host_run h02 cat /root/.ssh/authorized_keys)" "ssh-rsa AAAAB3forEIGNkey operator@laptop" "foreign key kept"
hosts_after=$(host_run h02 cat /etc/hosts)
outside=$(sed '/^# BEGIN xftctl managed hosts$/,/^# END xftctl managed hosts$/d' <<<"$hosts_after")
assert_eq "$hosts_before" "$outside" "/etc/hosts outside the block"
block=$(sed -n '/^# BEGIN xftctl managed hosts$/,/^# END xftctl managed hosts$/p' <<<"$hosts_after")
expected_block="# BEGIN xftctl managed hosts"
for h in "${H[@]}"; do expected_block+=$'\n'"$(addr "$h") $h"; done
expected_block+=$'\n'"# END xftctl managed hosts"
assert_eq "$expected_block" "$block" "the managed /etc/hosts block"
assert_eq "700" "$(host_run h03 stat -c %a /root/.ssh)" "mode of ~/.ssh"
assert_eq "600" "$(host_run h03 stat -c %a /root/.ssh/authorized_keys)" "mode of authorized_keys"
assert_eq "600" "$(host_run h03 stat -c %a /root/.ssh/id_ed25519)" "mode of the private key"

step "the MPI hostfile setup writes selects launch's hosts and ranks; no env.sh (launch passes the settings)"
hostfile=$(host_run h03 cat /etc/xftctl/hostfile)
assert_eq "# MPI hostfile written by xftctl setup hosts (one line per inventory host).
h01 slots=1
h02 slots=1
h03 slots=1
h04 slots=1" "$hostfile" "/etc/xftctl/hostfile on h03"
host_run h03 test ! -e /etc/xftctl/env.sh || fail "setup hosts wrote /etc/xftctl/env.sh"
printf '%s\n' "$hostfile" >"$TEST_TMP/hostfile"
xft launch --hostfile "$TEST_TMP/hostfile" --cores-per-rank 1 --dry-run -- true
all_out+="$OUT$ERR"
assert_eq 0 "$RC" "launch --hostfile --dry-run; err: $ERR"
expected_ranks=""
for h in "${H[@]}"; do expected_ranks+="-np 1 -H $(addr "$h"):1"$'\n'; done
assert_eq "${expected_ranks%$'\n'}" "$(head -n 1 <<<"$OUT" | grep -oE -- '-np [0-9]+ -H [^ ]+')" \
  "one rank per hostfile line, in its order"

step "second run: 0 changed on every host, by key (no password needed)"
XFT_TEST_PASSWORD_SAVED=$XFT_TEST_PASSWORD
unset XFT_TEST_PASSWORD
xft setup hosts
export XFT_TEST_PASSWORD=$XFT_TEST_PASSWORD_SAVED
all_out+="$OUT$ERR"
assert_eq 0 "$RC" "second setup exit code; out: $OUT; err: $ERR"
for h in "${H[@]}"; do
  assert_eq 0 "$(field "$h" changed)" "changed on $h in the second run: $OUT"
  assert_eq 0 "$(field "$h" failed)" "failed on $h in the second run"
done
assert_eq "  h01       ok=N changed=0 failed=0 unreachable=0 skipped=N
  h[02-04]  ok=N changed=0 failed=0 unreachable=0 skipped=N" "$(recap_shape 'changed|failed|unreachable')" \
  "second run's recap"
assert_eq "" "$(sed -n '/^TASK/,/^RECAP/p' <<<"$OUT" | grep -vE '^TASK |^RECAP$|^  (ok|skipped): h\[01-04\]$|^  ok: h01$')" \
  "second run: every task line is ok or skipped for all hosts at once (h01 alone for run_once)"

step "--json: one document, the same recap"
xft setup hosts --json
assert_eq 0 "$RC" "json run exit code"
assert_eq '[0,0,0,0]' "$(jq -c '[.recap[] | .changed + .failed + .unreachable]' <<<"$OUT")" "json recap"
assert_eq "setup hosts" "$(jq -r .play <<<"$OUT")" "json play name"

step "--check changes nothing on disk and says what would change"
host_run h03 rm /root/.ssh/known_hosts
host_run h04 sh -c 'grep -v " h01\$" /etc/hosts > /tmp/hosts.new && cat /tmp/hosts.new > /etc/hosts'
before=$(hash_host_files)
xft setup hosts --check --diff
all_out+="$OUT$ERR"
after=$(hash_host_files)
assert_eq 0 "$RC" "check exit code; out: $OUT; err: $ERR"
assert_eq "$before" "$after" "host files before and after --check"
assert_contains "$OUT" "  changed: h03: /root/.ssh/known_hosts: would change created" "check names h03's missing known_hosts"
assert_contains "$OUT" "  changed: h04: /etc/hosts: would change content" "check names h04's /etc/hosts"
assert_contains "$OUT" "  changed: h04: /etc/hosts: would change content
    --- /etc/hosts (before)
    +++ /etc/hosts (after)
    @@ -" "h04's diff header"
assert_contains "$OUT" "    +$(addr h01) h01" "diff line for h04"
assert_contains "$OUT" "RECAP (check mode: nothing was changed)" "check recap"
assert_eq 0 "$(field h01 changed)" "h01 has nothing to change"

step "a stopped host is unreachable, the others complete (exit 4)"
cluster stop-host h04
xft setup hosts
all_out+="$OUT$ERR"
assert_eq 4 "$RC" "exit code with h04 down; out: $OUT"
assert_contains "$OUT" "  unreachable: h04: Connection refused" "h04 reported unreachable, its name said once"
assert_eq 1 "$(field h04 unreachable)" "h04's recap"
for h in h01 h02 h03; do
  assert_eq 0 "$(field "$h" failed)" "failed on $h with h04 down"
  assert_eq 0 "$(field "$h" unreachable)" "unreachable on $h with h04 down"
done
assert_contains "$(host_run h03 cat /root/.ssh/known_hosts)" "h01,$(addr h01) ssh-ed25519" "h03's known_hosts restored"

step "the password appears in no output, process list or written file"
stop_background
for h in h01 h02 h03; do
  if host_run "$h" grep -rqF "$XFT_TEST_PASSWORD" /root/.ssh /etc/hosts /etc/xftctl; then fail "password in a file on $h"; fi
done
if grep -rqF "$XFT_TEST_PASSWORD" "$HOME/.config/xftctl"; then fail "password in the control node's files"; fi
assert_not_contains "$all_out" "$XFT_TEST_PASSWORD" "xftctl output"
if grep -qF "$XFT_TEST_PASSWORD" "$TEST_TMP/ps.log"; then fail "password in a process argument list"; fi
echo "setup_hosts: ok"
