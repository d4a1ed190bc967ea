#!/usr/bin/env bash
# The shared-path check of `xftctl setup hosts`: h01 and h02 see one shared
# directory at /mnt, h03 has a private one. A marker written on one host must
# be read on all: h03 is named as not sharing (exit 2), the others pass, and
# no marker is left behind. Then the same with a shared path holding a space
# and $(...): the hosts get a directory of exactly that name and nothing in
# the value runs anywhere.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 3 --share h01,h02 --private /etc/xftctl
xft setup hosts --accept-new-host-keys --skip packages
assert_eq 2 "$RC" "exit code with a host that does not share; out: $OUT; err: $ERR"
read_task=$(sed -n '/^TASK \[shared path check, read the marker on every host\]$/,/^TASK/p' <<<"$OUT")
assert_contains "$read_task" "  ok: h[01-02]" "h01 and h02 read the marker"
assert_contains "$read_task" "  failed: h03: /mnt is not shared with h01: a marker written there is not here (mount the shared file system, see nfs: in the inventory, or push files with xftctl sync)" "h03 named"
for h in h01 h02; do
  grep -qE "^  $h  ok=[0-9]+ changed=[0-9]+ failed=0 unreachable=0 " <<<"$OUT" || fail "$h should have no failure: $OUT"
done
grep -qE "^  h03  ok=[0-9]+ changed=[0-9]+ failed=1 unreachable=0 " <<<"$OUT" || fail "h03 should have one failure: $OUT"
leftover=$(ls -A "$HOST_H01_SHARED" "$HOST_H03_SHARED")
assert_not_contains "$leftover" ".xftctl-shared" "markers removed"

step "a shared path with a space and \$(...) is carried literally"
marker="/tmp/PWNED-xft-shared-$$"
value="/mnt/sub dir \$(touch $marker) x"
sed "s|^  shared: .*|  shared: $(jq -Rn --arg v "$value" '$v')|" "$CLUSTER_INVENTORY" >"$TEST_TMP/hostile.yaml"
grep -qF "  shared: \"$value\"" "$TEST_TMP/hostile.yaml" || fail "inventory with the hostile shared path: $(cat "$TEST_TMP/hostile.yaml")"
CLUSTER_INVENTORY="$TEST_TMP/hostile.yaml" xft setup hosts --skip packages
assert_eq 2 "$RC" "exit code with the hostile shared path (h03 does not share); out: $OUT; err: $ERR"
read_task=$(sed -n '/^TASK \[shared path check, read the marker on every host\]$/,/^TASK/p' <<<"$OUT")
assert_contains "$read_task" "  ok: h[01-02]" "h01 and h02 read the marker under the hostile path"
assert_contains "$read_task" "  failed: h03: $value is not shared with h01" "h03 named with the exact path"
for h in h01 h02; do
  host_run "$h" test -d "$value" || fail "$h: no directory named exactly '$value'"
done
# the value's own slashes make it nested: "sub dir $(touch " / tmp / "PWNED-...) x"
assert_eq "sub dir \$(touch " "$(ls -A "$HOST_H01_SHARED")" "the one new entry of the shared dir"
assert_eq "" "$(ls -A "$HOST_H01_SHARED/${value#/mnt/}")" "marker removed from the hostile path"
for h in h01 h02 h03; do
  assert_eq "" "$(host_run "$h" sh -c 'ls -d /tmp/PWNED* 2>/dev/null || true')" "markers on $h"
done
[[ ! -e $marker ]] || fail "$marker exists on the control node"
echo "setup_shared_path: ok"
