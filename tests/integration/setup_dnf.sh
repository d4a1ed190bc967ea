#!/usr/bin/env bash
# The package task on an RPM host: h02's /etc/os-release says Alibaba Cloud
# Linux 3 and it carries a dnf and an rpm (stubs as strict as the real ones:
# only the argument forms the task uses, unknown packages refused, state kept
# in the host's own /usr/local). Debian's apt-get is still on that host's
# PATH, so the family from os-release has to win. h01 stays Debian and uses
# apt for the same task.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 2 --private /usr/local --private /etc/xftctl

cat >"$TEST_TMP/os-release" <<'EOF'
NAME="Alibaba Cloud Linux"
VERSION="3 (Soaring Falcon)"
ID="alinux"
ID_LIKE="rhel fedora centos anolis"
VERSION_ID="3"
PRETTY_NAME="Alibaba Cloud Linux 3 (Soaring Falcon)"
EOF

# rpm -q --qf '%{NAME}\n' NAME...: installed names, "package X is not
# installed" for the others, exit status = how many are missing (as rpm does).
cat >"$TEST_TMP/rpm" <<'EOF'
#!/bin/sh
db=/usr/local/var/rpmdb
[ "$1" = -q ] && [ "$2" = --qf ] && [ "$3" = '%{NAME}\n' ] || { echo "rpm stub: unsupported arguments: $*" >&2; exit 64; }
shift 3
missing=0
for name in "$@"; do
  if grep -qx -- "$name" "$db" 2>/dev/null; then echo "$name"; else echo "package $name is not installed"; missing=$((missing + 1)); fi
done
exit $missing
EOF

# dnf install|remove -y NAME...: only names the catalog knows (dnf: "No match
# for argument"), every call logged for the test to read.
cat >"$TEST_TMP/dnf" <<'EOF'
#!/bin/sh
db=/usr/local/var/rpmdb
catalog=" numactl libfabric openmpi rdma-core libibverbs-utils nfs-utils "
echo "dnf $*" >>/usr/local/var/dnf.log
verb=$1
[ "$verb" = install ] || [ "$verb" = remove ] || { echo "dnf stub: unsupported command: $*" >&2; exit 64; }
[ "$2" = -y ] || { echo "dnf stub: $verb without -y would prompt" >&2; exit 64; }
shift 2
[ $# -gt 0 ] || { echo "Error: Need to pass a list of pkgs to $verb" >&2; exit 1; }
for name in "$@"; do
  case $catalog in *" $name "*) ;; *) echo "No match for argument: $name" >&2; echo "Error: Unable to find a match: $name" >&2; exit 1;; esac
done
touch "$db"
for name in "$@"; do
  if [ "$verb" = install ]; then grep -qx -- "$name" "$db" || echo "$name" >>"$db"
  else grep -vx -- "$name" "$db" >"$db.new"; mv "$db.new" "$db"; fi
done
echo Complete!
EOF

# The host has its own /tmp: the files travel on stdin.
host_run h02 mkdir -p /usr/local/bin /usr/local/var
host_run h02 sh -c 'cat >/usr/local/var/os-release' <"$TEST_TMP/os-release"
host_run h02 mount --bind /usr/local/var/os-release /etc/os-release
for tool in rpm dnf; do
  host_run h02 sh -c 'cat >"$1" && chmod 0755 "$1"' sh "/usr/local/bin/$tool" <"$TEST_TMP/$tool"
done
assert_eq "alinux" "$(host_run h02 sh -c '. /etc/os-release; echo $ID')" "h02's os-release"
assert_eq "Debian" "$(host_run h01 sh -c '. /etc/os-release; echo $NAME' | cut -d' ' -f1)" "h01's os-release"

step "a user's playbook: dnf on h02, apt on h01, a name dnf does not know"
book="$TEST_TMP/packages.yaml"
cat >"$book" <<'YAML'
name: packages
tasks:
  - name: tools
    package:
      name: {apt: [bash, coreutils], dnf: [numactl, openmpi]}
YAML
xft playbook run "$book" --accept-new-host-keys
assert_eq 0 "$RC" "playbook exit code; out: $OUT; err: $ERR"
assert_eq "PLAY [packages] on 2 hosts
CONNECT
  ok: h[01-02]
TASK [tools]
  ok: h01
  changed: h02: dnf: installed numactl openmpi
RECAP
  h01  ok=1 changed=0 failed=0 unreachable=0 skipped=0
  h02  ok=0 changed=1 failed=0 unreachable=0 skipped=0" "$OUT" "first run"
assert_eq "dnf install -y numactl openmpi" "$(host_run h02 cat /usr/local/var/dnf.log)" "dnf calls"

xft playbook run "$book"
assert_eq 0 "$RC" "second run exit code; err: $ERR"
assert_contains "$OUT" "TASK [tools]
  ok: h[01-02]
RECAP" "second run is idempotent"
assert_eq "dnf install -y numactl openmpi" "$(host_run h02 cat /usr/local/var/dnf.log)" "no dnf call on the second run"

cat >"$book" <<'YAML'
name: packages
tasks:
  - name: a package RHEL does not have
    package:
      name: {apt: [bash], dnf: [libfabric1]}
YAML
xft playbook run "$book" -l h02
assert_eq 2 "$RC" "a failed install exits 2; out: $OUT"
assert_contains "$OUT" "  failed: h02: dnf install libfabric1: exit 1: Error: Unable to find a match: libfabric1" "dnf's own error"

step "setup hosts: the shipped playbook installs the RPM names with dnf on h02"
xft setup hosts -l h02
assert_eq 0 "$RC" "setup exit code; out: $OUT; err: $ERR"
assert_contains "$OUT" "TASK [packages a rank needs]
  changed: h02: dnf: installed libfabric rdma-core libibverbs-utils" "package task on the RPM host"
assert_eq "dnf install -y numactl openmpi
dnf install -y libfabric1
dnf install -y libfabric rdma-core libibverbs-utils" "$(host_run h02 cat /usr/local/var/dnf.log)" "dnf calls after setup"
assert_eq "numactl
openmpi
libfabric
rdma-core
libibverbs-utils" "$(host_run h02 cat /usr/local/var/rpmdb)" "what the RPM host has installed"
echo "PASS"
