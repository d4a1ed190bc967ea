#!/usr/bin/env bash
# Hosts behind a bastion: h02 and h03 drop SSH from the control node (their
# firewall), so they are reached only through h01 (inventory jump:), over
# direct-tcpip channels of h01's SSH session; then the same with an
# inventory of bare aliases and the bastion in ~/.ssh/config. The bastion's
# host key is checked and recorded like any other; the firewall's counters
# show that no packet of the run went from the control node to h02 or h03
# directly.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 3 --auth key
KNOWN_HOSTS="$HOME/.config/xftctl/known_hosts"
addr() { host_var "$1" ADDR; }
INV="$TEST_TMP/inventory.yaml"

# The DROP rule's packet count in HOST's INPUT chain.
dropped() { host_run "$1" iptables -L INPUT -v -n -x | awk '$3 == "DROP" { print $1 }'; }

step "h02 and h03 accept SSH only from inside the cluster network"
for h in h02 h03; do
  host_run "$h" iptables -A INPUT -p tcp --dport 22 -s "$CLUSTER_GATEWAY" -j DROP
done
{
  echo "defaults: {key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v')}"
  echo "hosts:"
  for h in h01 h02 h03; do echo "  - {name: $h, address: $(addr "$h")}"; done
} >"$INV"
CLUSTER_INVENTORY=$INV xft ping --accept-new-host-keys --connect-timeout 2 --hosts h02
assert_eq 4 "$RC" "h02 directly is unreachable; out: $OUT; err: $ERR"
[[ $(dropped h02) -gt 0 ]] || fail "the firewall of h02 saw no direct attempt: $(host_run h02 iptables -L INPUT -v -n)"

step "through h01 (jump: root@h01): ping and exec reach every host"
{
  echo "defaults: {key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v')}"
  echo "hosts:"
  echo "  - {name: h01, address: $(addr h01)}"
  for h in h02 h03; do echo "  - {name: $h, address: $(addr "$h"), jump: root@$(addr h01)}"; done
} >"$INV"
before_h02=$(dropped h02)
before_h03=$(dropped h03)
CLUSTER_INVENTORY=$INV xft inventory validate
assert_eq 0 "$RC" "validate; err: $ERR"
CLUSTER_INVENTORY=$INV xft ping --accept-new-host-keys
assert_eq 0 "$RC" "ping through the bastion; out: $OUT; err: $ERR"
CLUSTER_INVENTORY=$INV xft exec -- hostname
assert_eq 0 "$RC" "exec through the bastion; err: $ERR"
assert_eq $'---- h01 (exit 0) ----\nh01\n---- h02 (exit 0) ----\nh02\n---- h03 (exit 0) ----\nh03' "$OUT" \
  "each host answered from its own namespace"
CLUSTER_INVENTORY=$INV xft exec --hosts h03 -- 'head -c 300000 /dev/zero | tr "\0" x'
assert_eq 0 "$RC" "exec with 300 kB of output; err: $ERR"
assert_eq "300000" "$(tail -n 1 <<<"$OUT" | tr -d '\n' | wc -c)" "300 kB of output through the tunnel"
assert_eq "$before_h02" "$(dropped h02)" "no packet from the control node to h02 directly"
assert_eq "$before_h03" "$(dropped h03)" "no packet from the control node to h03 directly"
for h in h01 h02 h03; do
  grep -q "^$(addr "$h") ssh-ed25519 " "$KNOWN_HOSTS" || fail "$h's key not recorded: $(cat "$KNOWN_HOSTS")"
done

step "the same through ~/.ssh/config: the inventory names only aliases; HostName and ProxyJump from the config"
mkdir -p "$HOME/.ssh"
{
  echo "Host gw"
  echo "  HostName $(addr h01)"
  echo "  User root"
  echo "Host h02 h03"
  echo "  ProxyJump gw"
  echo "Host h02"
  echo "  HostName $(addr h02)"
  echo "Host h03"
  echo "  HostName $(addr h03)"
} >"$HOME/.ssh/config"
{
  echo "defaults: {key: $(jq -Rn --arg v "$CLUSTER_KEY" '$v')}"
  echo "hosts:"
  echo "  - {name: h02}"
  echo "  - {name: h03}"
} >"$TEST_TMP/aliases.yaml"
CLUSTER_INVENTORY=$TEST_TMP/aliases.yaml xft exec -- hostname
assert_eq 0 "$RC" "exec through the config's bastion; err: $ERR"
assert_eq $'---- h02 (exit 0) ----\nh02\n---- h03 (exit 0) ----\nh03' "$OUT" "each alias answered"
assert_eq "$before_h02" "$(dropped h02)" "no packet from the control node to h02 directly (config)"
CLUSTER_INVENTORY=$TEST_TMP/aliases.yaml xft exec --ssh-config none --connect-timeout 2 -- hostname
assert_eq 4 "$RC" "with --ssh-config none the aliases do not resolve; out: $OUT"
rm "$HOME/.ssh/config"

step "a changed bastion key is refused, naming the bastion"
bash "$CLUSTER_SH" rekey "$CLUSTER_DIR" h01 >&2
CLUSTER_INVENTORY=$INV xft exec --hosts h02 -- true
assert_eq 2 "$RC" "exec with the bastion's key changed"
assert_contains "$ERR" "xftctl: h02 ($(addr h02)) via bastion root@$(addr h01): HOST KEY CHANGED" "the refusal names the bastion"
echo "PASS: reach_bastion"
