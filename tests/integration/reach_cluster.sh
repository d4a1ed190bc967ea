#!/usr/bin/env bash
# A cluster as clouds hand them out, end to end: h01-h04 and the bastion h05
# disable root login; ec2-user logs in by key, with passwordless sudo on h01
# and h02 and sudo with a password on h03 and h04; h01-h04 drop every TCP
# packet from the control node (their firewall), so they are reached only
# through h05 (jump:). Then, on one cluster:
#  1. h04's sudo password not given: setup hosts fails h04 alone, with one line
#     saying so and the fix; h01-h03 finish.
#  2. With it: setup hosts (root gets no key pair), a rerun that changes
#     nothing, setup hosts --root-ssh (now it does), check fabric, run
#     qwen on 4 hosts (a golden test model's greedy text, exactly) and bench
#     allreduce all succeed.
#  3. The same with an inventory of bare host names and the bastion, the user,
#     the key, the known_hosts file and accept-new in ~/.ssh/config.
#  4. The firewall counters: no packet from the control node reached h01-h04,
#     the bastion sent no TCP but SSH and no host got any but SSH from it
#     (rank traffic stayed between h01-h04: mpirun ran on h01). The sudo
#     password was in no process's argv (/proc/*/cmdline through ps, sampled
#     every 0.1 s), no output, no file here or on the hosts.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
source "$XFT_SOURCE_DIR/tests/integration/run_qwen_tp_lib.sh"  # $X (xftctl in /run), test models, check_ranks
command -v sudo >/dev/null || fail "this test needs sudo on the machine (apt-get install sudo)"
export XDG_CACHE_HOME="$TEST_TMP/cache"
# The ranks run as ec2-user: they read the binary and models (mktemp made
# the dir 0700) and rank 0 writes --dump-logits there.
chmod 1777 "$shared"
chmod -R go+rX "$shared"
# The copy in /run has no shipped playbooks beside it: the build tree's.
export XFTCTL_DATA_DIR=$(dirname "$XFTCTL")

watch_process_list "$TEST_TMP/ps.log"
start_cluster 5 --auth key --private /etc/xftctl
CLUSTER_NODES=(h01 h02 h03 h04)
BASTION=h05
addr() { host_var "$1" ADDR; }
SUDO_PASSWORD="sudo-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')"
INVENTORY_FILE="$TEST_TMP/inventory.yaml"
INV=(-i "$INVENTORY_FILE")
all_out=""
# run_x ARGS...: the copy of xftctl the ranks run too; sets RC, OUT, ERR and keeps the output.
run_x() {
  RC=0
  "$X" "${INV[@]}" "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || RC=$?
  OUT=$(cat "$TEST_TMP/out")
  ERR=$(cat "$TEST_TMP/err")
  all_out+="$OUT$ERR"
}
# Steps say when they start: the test's runtime by part, for CI's budget.
stage() { step "$* (at ${SECONDS}s)"; }
recap_not() { sed -n '/^RECAP/,$p' <<<"$OUT" | tail -n +2 | grep -v "$1" || true; }

stage "root login off everywhere; ec2-user (uid 4243): passwordless sudo on h01 h02, with a password on h03 h04"
home_made=""
[[ -e /home/ec2-user ]] || { mkdir -p /home/ec2-user && home_made=1; }
[[ -n $home_made ]] && remove_on_exit /home/ec2-user
hash=$(openssl passwd -6 -stdin <<<"$SUDO_PASSWORD")
for h in "${CLUSTER_NODES[@]}" "$BASTION"; do
  hd="$CLUSTER_DIR/hosts/$h"
  sed -i 's/^PermitRootLogin yes$/PermitRootLogin no/' "$hd/sshd_config"
  cluster start-host "$h" >&2
  { cat /etc/passwd; echo "ec2-user:x:4243:4243::/home/ec2-user:/bin/sh"; } >"$hd/etc_passwd"
  { cat /etc/group; echo "ec2-user:x:4243:"; } >"$hd/etc_group"
  echo "ec2-user:$hash:19000:0:99999:7:::" >>"$hd/etc_shadow"
  mkdir -p "$hd/home_ec2/.ssh" "$hd/sudoers.d"
  cp "$CLUSTER_KEY.pub" "$hd/home_ec2/.ssh/authorized_keys"
  chown -R 4243:4243 "$hd/home_ec2"
  chmod 755 "$hd/home_ec2"
  chmod 700 "$hd/home_ec2/.ssh"
  chmod 600 "$hd/home_ec2/.ssh/authorized_keys"
  case $h in
    h01 | h02) echo "ec2-user ALL=(ALL:ALL) NOPASSWD: ALL" >"$hd/sudoers.d/ec2-user" ;;
    h03 | h04) echo "ec2-user ALL=(ALL:ALL) ALL" >"$hd/sudoers.d/ec2-user" ;;
  esac
  chmod 440 "$hd/sudoers.d/"* 2>/dev/null || true
  host_run "$h" sh -c "mount --bind '$hd/etc_passwd' /etc/passwd && mount --bind '$hd/etc_group' /etc/group &&
    mount --bind '$hd/home_ec2' /home/ec2-user && mount --bind '$hd/sudoers.d' /etc/sudoers.d"
done

stage "h01-h04 drop all TCP from the control node; h05 is their bastion"
# Counters: DROP (the control node, directly), FROM_BASTION (anything from h05
# but SSH) on h01-h04; NOT_SSH (anything h05 sends but SSH) on h05. Plain
# rules in order, first match wins (no negated ports).
for h in "${CLUSTER_NODES[@]}"; do
  host_run "$h" iptables -A INPUT -p tcp -s "$CLUSTER_GATEWAY" -j DROP
  host_run "$h" iptables -A INPUT -p tcp -s "$(addr $BASTION)" --dport 22 -m comment --comment SSH_FROM_BASTION -j ACCEPT
  host_run "$h" iptables -A INPUT -p tcp -s "$(addr $BASTION)" -m comment --comment FROM_BASTION -j ACCEPT
done
# First match wins: SSH is counted apart, whatever TCP is left is not SSH.
host_run "$BASTION" iptables -A OUTPUT -p tcp --sport 22 -m comment --comment SSH_SERVED -j ACCEPT
host_run "$BASTION" iptables -A OUTPUT -p tcp --dport 22 -m comment --comment SSH_TUNNELLED -j ACCEPT
host_run "$BASTION" iptables -A OUTPUT -p tcp -m comment --comment NOT_SSH -j ACCEPT
counter() {  # HOST CHAIN MATCH: packets of the rule whose target or comment is MATCH
  host_run "$1" iptables -L "$2" -v -n -x | awk -v m="$3" '$3 == m || $0 ~ "/\\* " m " \\*/" { print $1; exit }'
}
drops() { for h in "${CLUSTER_NODES[@]}"; do counter "$h" INPUT DROP; done | paste -sd' '; }
from_bastion() { for h in "${CLUSTER_NODES[@]}"; do counter "$h" INPUT FROM_BASTION; done | paste -sd' '; }

write_inventory() {  # H04-EXTRA
  {
    echo "defaults:"
    echo "  user: ec2-user"
    echo "  key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v')"
    echo "  become: sudo"
    echo "  jump: ec2-user@$(addr $BASTION)"
    echo "  fabric: {provider: \"tcp;ofi_rxm\", iface: eth0}"
    echo "hosts:"
    echo "  - {name: h01, address: $(addr h01)}"
    echo "  - {name: h02, address: $(addr h02)}"
    echo "  - {name: h03, address: $(addr h03), become_password_env: XFT_SUDO_PASSWORD}"
    echo "  - {name: h04, address: $(addr h04)$1}"
  } >"$INVENTORY_FILE"
}
write_inventory ""
export XFT_SUDO_PASSWORD=$SUDO_PASSWORD
run_x ping --accept-new-host-keys --connect-timeout 5
assert_eq 0 "$RC" "ec2-user reaches every host through h05; out: $OUT; err: $ERR"
sed "s/^  user: ec2-user$/  user: root/" "$INVENTORY_FILE" >"$TEST_TMP/as-root.yaml"
RC=0
"$X" -i "$TEST_TMP/as-root.yaml" ping --hosts h01 --connect-timeout 5 >"$TEST_TMP/root-out" 2>&1 || RC=$?
assert_eq 2 "$RC" "root login refused on h01: $(cat "$TEST_TMP/root-out")"
drops_before=$(drops)
assert_eq "0 0 0 0" "$drops_before" "the control node never tried h01-h04 directly"

stage "1. h04's sudo asks for a password nobody gave: h04 fails alone, with the fix; h01-h03 finish"
run_x setup hosts --skip packages
assert_eq 2 "$RC" "setup exit code; out: $OUT; err: $ERR"
assert_eq "  failed: h04: sudo as ec2-user: sudo asks for a password and the inventory gives none (export it and name the variable with become_password_env: VAR for this host, or allow ec2-user passwordless sudo)" \
  "$(grep 'sudo asks for a password' <<<"$OUT")" "h04's one line"
assert_eq "h04" "$(recap_not 'failed=0' | awk '{ print $1 }')" "only h04 failed: $OUT"
for h in h01 h02 h03; do
  host_run "$h" grep -q "^# BEGIN xftctl managed hosts" /etc/hosts || fail "$h: no managed block in /etc/hosts"
done

stage "2. every host with its password: setup hosts, then a rerun that changes nothing"
write_inventory ", become_password_env: XFT_SUDO_PASSWORD"
run_x setup hosts --skip packages
assert_eq 0 "$RC" "setup hosts; out: $OUT; err: $ERR"
for h in "${CLUSTER_NODES[@]}"; do
  assert_eq "root root 644" "$(host_run "$h" stat -c '%U %G %a' /etc/xftctl/hostfile)" "$h: the hostfile, root's"
  assert_eq "ec2-user 600" "$(host_run "$h" stat -c '%U %a' /home/ec2-user/.ssh/id_ed25519)" "$h: ec2-user's key pair"
  host_run "$h" test ! -e /root/.ssh/id_ed25519 || fail "$h: root got a key pair nobody asked for"
done
run_x setup hosts --skip packages
assert_eq 0 "$RC" "rerun; out: $OUT; err: $ERR"
assert_eq "" "$(recap_not 'changed=0')" "the rerun changed nothing: $OUT"

stage "2. setup hosts --root-ssh: root's own key pair, authorized and known on every host (only when asked)"
run_x setup hosts --skip packages --root-ssh
assert_eq 0 "$RC" "setup hosts --root-ssh; out: $OUT; err: $ERR"
root_keys=$(for h in "${CLUSTER_NODES[@]}"; do host_run "$h" cat /root/.ssh/id_ed25519.pub; done | sort)
for h in "${CLUSTER_NODES[@]}"; do
  assert_eq "root root 600" "$(host_run "$h" stat -c '%U %G %a' /root/.ssh/id_ed25519)" "$h: root's key"
  # The test cluster's own key was there before (cluster.sh): kept.
  assert_eq "$(sort <(echo "$root_keys") "$CLUSTER_KEY.pub")" "$(host_run "$h" sort /root/.ssh/authorized_keys)" \
    "$h: root's authorized_keys"
  host_run "$h" grep -q "^h03,$(addr h03) ssh-ed25519 " /root/.ssh/known_hosts || fail "$h: root does not know h03"
done
[[ $(wc -l <<<"$root_keys") -eq 4 ]] || fail "four distinct root keys: $root_keys"

stage "2. check fabric"
run_x check fabric --remote-xftctl "$X" --sizes 8,64K --iterations 20 --pair-timeout 5
assert_eq 0 "$RC" "check fabric; out: $OUT; err: $ERR"
stage "2. run qwen on 4 hosts"
check_ranks "4 hosts behind the bastion" qwen2-tiny-s7 --cores-per-rank 1 --comm mpi
stage "2. bench allreduce"
run_x bench allreduce --cores-per-rank 1 -b 8 -e 256 -f 32 -n 2 -w 1
assert_eq 0 "$RC" "bench allreduce; out: $OUT; err: $ERR"
assert_contains "$OUT$ERR" "4 ranks" "bench allreduce on 4 ranks"

stage "3. the same through ~/.ssh/config: the inventory names h01-h04 alone"
mkdir -p "$HOME/.ssh"
# libssh matches the blocks after a HostName against the new name: HostName last.
{
  echo "Host bastion"
  echo "  HostName $(addr $BASTION)"
  echo "Host bastion h0?"
  echo "  User ec2-user"
  echo "  IdentityFile $CLUSTER_KEY"
  echo "  UserKnownHostsFile ~/.ssh/cluster_known_hosts"
  echo "  StrictHostKeyChecking accept-new"
  echo "Host h0?"
  echo "  ProxyJump bastion"
  for h in "${CLUSTER_NODES[@]}"; do printf 'Host %s\n  HostName %s\n' "$h" "$(addr "$h")"; done
} >"$HOME/.ssh/config"
{
  echo "defaults: {become: sudo, become_password_env: XFT_SUDO_PASSWORD, fabric: {provider: \"tcp;ofi_rxm\", iface: eth0}}"
  echo "hosts: [{name: h01}, {name: h02}, {name: h03}, {name: h04}]"
} >"$INVENTORY_FILE"
run_x setup hosts --skip packages
assert_eq 0 "$RC" "setup hosts through ~/.ssh/config; out: $OUT; err: $ERR"
assert_eq "" "$(recap_not 'changed=0')" "the same hosts, set up already: $OUT"
for h in "${CLUSTER_NODES[@]}" "$BASTION"; do
  grep -q "^$(addr "$h") ssh-ed25519 " "$HOME/.ssh/cluster_known_hosts" ||
    fail "$h's key not in the config's UserKnownHostsFile (accept-new): $(cat "$HOME/.ssh/cluster_known_hosts")"
done
# The pairs too: the control node must learn from the servers' output that
# they listen, as ProxyJump puts h01-h04 out of its reach (the counters below).
run_x check fabric --remote-xftctl "$X" --sizes 8 --iterations 10 --pair-timeout 5
assert_eq 0 "$RC" "check fabric through ~/.ssh/config; out: $OUT; err: $ERR"
stage "3. run qwen"
check_ranks "4 hosts through ~/.ssh/config" qwen2-tiny-s7 --cores-per-rank 1 --comm mpi
stage "3. bench allreduce"
run_x bench allreduce --cores-per-rank 1 -b 8 -e 256 -f 32 -n 2 -w 1
assert_eq 0 "$RC" "bench allreduce through ~/.ssh/config; out: $OUT; err: $ERR"

stage "4. no packet from the control node reached h01-h04; h05 carried SSH and nothing else"
assert_eq "$drops_before" "$(drops)" "DROP counters of h01-h04 (the control node, directly)"
assert_eq "0 0 0 0" "$(from_bastion)" "packets from h05 to h01-h04 other than SSH"
[[ $(counter $BASTION OUTPUT NOT_SSH) == 0 ]] || fail "h05 sent TCP other than SSH: $(host_run $BASTION iptables -L OUTPUT -v -n -x; host_run $BASTION ss -tanp)"
[[ $(counter h01 INPUT SSH_FROM_BASTION) -gt 0 && $(counter $BASTION OUTPUT SSH_TUNNELLED) -gt 0 ]] ||
  fail "no SSH from h05 reached h01: the counters count nothing"

stage "4. the sudo password is in no argv, no output and no file"
assert_not_contains "$all_out" "$SUDO_PASSWORD" "xftctl's output"
[[ -s $TEST_TMP/ps.log ]] || fail "no process list was sampled"
if grep -qF "$SUDO_PASSWORD" "$TEST_TMP/ps.log"; then fail "the sudo password in a process argument list"; fi
if grep -rlF "$SUDO_PASSWORD" "$TEST_TMP" "$shared" --exclude=etc_shadow --exclude=ps.log 2>/dev/null; then
  fail "the sudo password in a file (above)"
fi
for h in "${CLUSTER_NODES[@]}"; do
  host_run "$h" sh -c "grep -rqF '$SUDO_PASSWORD' /etc/hosts /etc/xftctl /home/ec2-user /tmp /var/tmp 2>/dev/null" &&
    fail "$h: the sudo password in a file"
done
echo "PASS: reach_cluster (${SECONDS}s)"
