#!/usr/bin/env bash
# A non-root login with sudo: every host disables root login (PermitRootLogin
# no) and has a login user xftuser; h01 and h02 give it passwordless sudo,
# h03 sudo with a password. `setup hosts` with become: sudo writes root's
# files through sudo (root-owned, asked modes) and xftuser's ~/.ssh as
# xftuser; a rerun changes nothing; the sudo password reaches no argv (ps
# sampled during the runs), no output and no file; without the password h03
# fails alone, with the fix, while h01 and h02 finish.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
command -v sudo >/dev/null || fail "this test needs sudo on the machine (apt-get install sudo)"

watch_process_list "$TEST_TMP/ps.log"
start_cluster 3 --auth key --private /etc/xftctl
H=(h01 h02 h03)
addr() { host_var "$1" ADDR; }
SUDO_PASSWORD="sudo-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')"
INV="$TEST_TMP/inventory.yaml"
all_out=""
xinv() {
  CLUSTER_INVENTORY=$INV xft "$@"
  all_out+="$OUT$ERR"
}

step "root login off; xftuser (uid 4242) with sudo: passwordless on h01 and h02, with a password on h03"
mkdir -p /home/xftuser
remove_on_exit /home/xftuser
hash=$(openssl passwd -6 -stdin <<<"$SUDO_PASSWORD")
for h in "${H[@]}"; do
  hd="$CLUSTER_DIR/hosts/$h"
  sed -i 's/^PermitRootLogin yes$/PermitRootLogin no/' "$hd/sshd_config"
  bash "$CLUSTER_SH" stop-host "$CLUSTER_DIR" "$h" >&2
  bash "$CLUSTER_SH" start-host "$CLUSTER_DIR" "$h" >&2
  { cat /etc/passwd; echo "xftuser:x:4242:4242::/home/xftuser:/bin/sh"; } >"$hd/etc_passwd"
  { cat /etc/group; echo "xftuser:x:4242:"; } >"$hd/etc_group"
  echo "xftuser:$hash:19000:0:99999:7:::" >>"$hd/etc_shadow"
  mkdir -p "$hd/home_xftuser/.ssh" "$hd/sudoers.d"
  cp "$CLUSTER_KEY.pub" "$hd/home_xftuser/.ssh/authorized_keys"
  chown -R 4242:4242 "$hd/home_xftuser"
  chmod 755 "$hd/home_xftuser"
  chmod 700 "$hd/home_xftuser/.ssh"
  chmod 600 "$hd/home_xftuser/.ssh/authorized_keys"
  if [[ $h == h03 ]]; then rule="xftuser ALL=(ALL:ALL) ALL"; else rule="xftuser ALL=(ALL:ALL) NOPASSWD: ALL"; fi
  echo "$rule" >"$hd/sudoers.d/xftuser"
  chmod 440 "$hd/sudoers.d/xftuser"
  host_run "$h" sh -c "mount --bind '$hd/etc_passwd' /etc/passwd && mount --bind '$hd/etc_group' /etc/group &&
    mount --bind '$hd/home_xftuser' /home/xftuser && mount --bind '$hd/sudoers.d' /etc/sudoers.d"
done
write_inventory() {  # EXTRA for h03
  {
    echo "defaults: {user: xftuser, key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v'), become: sudo}"
    echo "hosts:"
    echo "  - {name: h01, address: $(addr h01)}"
    echo "  - {name: h02, address: $(addr h02)}"
    echo "  - {name: h03, address: $(addr h03)$1}"
  } >"$INV"
}
write_inventory ""
CLUSTER_INVENTORY=$INV xft ping --accept-new-host-keys
assert_eq 0 "$RC" "xftuser logs in everywhere; err: $ERR"
sed -i "s/^\\(  - {name: h01, address: [^}]*\\)}/\\1, user: root}/" "$INV"
CLUSTER_INVENTORY=$INV xft ping --hosts h01
assert_eq 2 "$RC" "root login refused on h01; out: $OUT"
write_inventory ""

step "without the password: h03 fails alone with one line saying so and the fix; h01 and h02 finish"
xinv setup hosts --skip packages
assert_eq 2 "$RC" "setup exit code; out: $OUT; err: $ERR"
assert_contains "$OUT" "h03: sudo as xftuser: sudo asks for a password and the inventory gives none (export it and name the variable with become_password_env: VAR for this host, or allow xftuser passwordless sudo)" "h03's line"
assert_eq 1 "$(grep -c 'sudo asks for a password' <<<"$OUT")" "said once: $OUT"
for h in h01 h02; do
  host_run "$h" grep -q "^# BEGIN xftctl managed hosts" /etc/hosts || fail "$h: no managed block in /etc/hosts"
done
recap=$(sed -n '/^RECAP/,$p' <<<"$OUT")
for h in h01 h02; do assert_contains "$recap" "  $h  ok=" "$h's recap row"; done
assert_eq "h03" "$(grep -v 'failed=0' <<<"$recap" | tail -n +2 | awk '{ print $1 }')" "only h03 failed: $recap"

step "with become_password_env on h03: every host set up; root's files root's, xftuser's ~/.ssh xftuser's"
write_inventory ", become_password_env: XFT_SUDO_PASSWORD"
export XFT_SUDO_PASSWORD=$SUDO_PASSWORD
xinv setup hosts --skip packages
assert_eq 0 "$RC" "setup with the sudo password; out: $OUT; err: $ERR"
for h in "${H[@]}"; do
  assert_eq "root root 644" "$(host_run "$h" stat -c '%U %G %a' /etc/xftctl/hostfile)" "$h: the hostfile"
  assert_eq "xftuser 600" "$(host_run "$h" stat -c '%U %a' /home/xftuser/.ssh/authorized_keys)" "$h: authorized_keys"
  assert_eq "xftuser 600" "$(host_run "$h" stat -c '%U %a' /home/xftuser/.ssh/id_ed25519)" "$h: the key pair"
  host_run "$h" grep -q "^$(addr h02) h02$" /etc/hosts || fail "$h: /etc/hosts has no h02 line"
  ls "$CLUSTER_DIR/hosts/$h/tmp" | grep -q xftctl-tmp && fail "$h: a temp file left in /tmp"
done
step "xftuser reaches every host from every host by name (real ssh, no password)"
for h in "${H[@]}"; do
  for o in "${H[@]}"; do
    [[ $h == "$o" ]] && continue
    got=$(host_run "$h" runuser -u xftuser -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 "$o" hostname 2>&1) ||
      fail "xftuser $h -> $o: $got"
    assert_eq "$o" "$got" "hostname seen by xftuser's ssh from $h to $o"
  done
done

step "a rerun changes nothing"
xinv setup hosts --skip packages
assert_eq 0 "$RC" "rerun; out: $OUT; err: $ERR"
assert_eq "" "$(sed -n '/^RECAP/,$p' <<<"$OUT" | grep -v 'changed=0' | tail -n +2)" "no host changed anything: $OUT"

step "the sudo password is in no argv, no output and no file"
assert_not_contains "$all_out" "$SUDO_PASSWORD" "xftctl's output"
if grep -qF "$SUDO_PASSWORD" "$TEST_TMP/ps.log"; then fail "the sudo password in a process argument list"; fi
[[ -s $TEST_TMP/ps.log ]] || fail "no process list was sampled"
if grep -rqF "$SUDO_PASSWORD" "$TEST_TMP" --exclude=etc_shadow --exclude=ps.log 2>/dev/null; then
  fail "the sudo password in a file: $(grep -rlF "$SUDO_PASSWORD" "$TEST_TMP" --exclude=etc_shadow)"
fi
for h in "${H[@]}"; do
  host_run "$h" sh -c "grep -rqF '$SUDO_PASSWORD' /etc/hosts /etc/xftctl /home/xftuser /tmp 2>/dev/null" &&
    fail "$h: the sudo password in a file"
done
echo "PASS: reach_sudo"
