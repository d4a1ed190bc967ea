#!/usr/bin/env bash
# The shared-path check of `xftctl setup hosts`: h01 and h02 see one shared
# directory at /mnt, h03 has a private one. A marker written on one host must
# be read on all: h03 is named as not sharing (exit 2), the others pass, and
# no marker is left behind.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 3 --share h01,h02 --private /etc/xftctl
xft setup hosts --accept-new-host-keys --skip packages
assert_eq 2 "$RC" "exit code with a host that does not share; out: $OUT; err: $ERR"
read_task=$(sed -n '/^TASK \[shared path check, read the marker on every host\]$/,/^TASK/p' <<<"$OUT")
assert_contains "$read_task" "  h01: ok" "h01 reads the marker"
assert_contains "$read_task" "  h02: ok" "h02 reads the marker"
assert_contains "$read_task" "  h03: failed: /mnt is not shared with h01: a marker written there is not here (mount the shared file system, see nfs: in the inventory, or push files with xftctl sync)" "h03 named"
for h in h01 h02; do
  grep -qE "^  $h +ok=[0-9]+ +changed=[0-9]+ +failed=0 " <<<"$OUT" || fail "$h should have no failure: $OUT"
done
grep -qE "^  h03 +ok=[0-9]+ +changed=[0-9]+ +failed=1 " <<<"$OUT" || fail "h03 should have one failure: $OUT"
leftover=$(ls -A "$HOST_H01_SHARED" "$HOST_H03_SHARED")
assert_not_contains "$leftover" ".xftctl-shared" "markers removed"
echo "setup_shared_path: ok"
