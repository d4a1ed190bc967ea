# Shared helpers for integration tests. Source it first thing:
#
#   source "$XFT_SOURCE_DIR/tests/integration/lib.sh"
#   start_cluster 4                      # 4 hosts h01..h04, password logins; see cluster.sh for options
#   xft ping                             # runs $XFTCTL -i $CLUSTER_INVENTORY ping; sets RC, OUT, ERR
#   assert_eq 0 "$RC" "ping exit code"
#   host_run h02 hostname                # a command inside host h02 (no SSH involved)
#
# Everything is torn down on exit, also on failure or interruption: the
# cluster (cluster.sh stop), the temp dir, background helpers started here.
# HOME points into the temp dir, so xftctl's ~/.config/xftctl (known_hosts,
# keys) starts empty and the operator's files are never touched.
#
# Variables: XFTCTL, XFT_SOURCE_DIR, XFT_BUILD_DIR (from ctest), TEST_TMP,
# XFT_TEST_PASSWORD (random per run, the hosts' root password), and after
# start_cluster everything in cluster.env (CLUSTER_DIR, CLUSTER_INVENTORY,
# CLUSTER_HOSTS, HOST_H01_ADDR, ...).
set -euo pipefail

: "${XFTCTL:?set XFTCTL to the built xftctl binary (ctest does)}"
: "${XFT_SOURCE_DIR:?set XFT_SOURCE_DIR to the source tree (ctest does)}"
CLUSTER_SH="$XFT_SOURCE_DIR/tests/cluster/cluster.sh"
TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)
TEST_TMP=$(mktemp -d "/tmp/xft-${TEST_NAME}.XXXXXX")
export HOME="$TEST_TMP/home"
mkdir -p "$HOME"
unset XFTCTL_KNOWN_HOSTS XFTCTL_INVENTORY XDG_CONFIG_HOME
XFT_TEST_PASSWORD="xft-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')"
export XFT_TEST_PASSWORD
_LIB_BACKGROUND_PIDS=()
_LIB_WATCHERS=()  # "pid:stopfile" of watch_process_list loops
_LIB_CLEANUP_PATHS=()
# remove_on_exit PATH: removed with the cluster and TEST_TMP when the test ends
# (for files outside TEST_TMP, e.g. under /run where every test host sees them).
remove_on_exit() { _LIB_CLEANUP_PATHS+=("$@"); }

_lib_cleanup() {
  local rc=$?
  stop_background
  if [[ -n ${CLUSTER_DIR:-} ]]; then
    if ((rc != 0)); then
      echo "--- $TEST_NAME failed (exit $rc); sshd logs of the test hosts:" >&2
      tail -n 5 "$CLUSTER_DIR"/hosts/*/sshd.log >&2 2>/dev/null || true
    fi
    bash "$CLUSTER_SH" stop "$CLUSTER_DIR" >/dev/null 2>&1 || true
  fi
  rm -rf "$TEST_TMP" "${_LIB_CLEANUP_PATHS[@]}"
  exit "$rc"
}
trap _lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

step() { echo "--- $*"; }

assert_eq() {  # EXPECTED ACTUAL WHAT
  [[ $1 == "$2" ]] && return 0
  fail "$3: expected
$1
--- got
$2"
}

assert_contains() {  # HAYSTACK NEEDLE WHAT
  [[ $1 == *"$2"* ]] && return 0
  fail "$3: expected to contain
$2
--- in
$1"
}

assert_not_contains() {  # HAYSTACK NEEDLE WHAT
  [[ $1 != *"$2"* ]] && return 0
  fail "$3: must not contain
$2
--- in
$1"
}

# Runs xftctl against the cluster inventory; sets RC, OUT, ERR (never exits).
xft() {
  local inventory_args=()
  [[ -n ${CLUSTER_INVENTORY:-} ]] && inventory_args=(-i "$CLUSTER_INVENTORY")
  RC=0
  "$XFTCTL" "${inventory_args[@]}" "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || RC=$?
  OUT=$(cat "$TEST_TMP/out")
  ERR=$(cat "$TEST_TMP/err")
}

# start_cluster N [cluster.sh start options]: starts N hosts and loads cluster.env.
start_cluster() {
  local count=$1
  shift
  [[ $EUID -eq 0 ]] || fail "the test cluster needs root"
  bash "$CLUSTER_SH" start "$TEST_TMP/cluster" -n "$count" --owner $$ "$@" >&2
  CLUSTER_DIR="$TEST_TMP/cluster"
  load_cluster_env
}

load_cluster_env() {
  # shellcheck source=/dev/null
  source "$CLUSTER_DIR/cluster.env"
}

cluster() {  # cluster stop-host|start-host|rekey NAME
  local command=$1
  shift
  bash "$CLUSTER_SH" "$command" "$CLUSTER_DIR" "$@"
  load_cluster_env
}

host_run() {  # host_run NAME CMD...
  bash "$CLUSTER_SH" run "$CLUSTER_DIR" "$@"
}

host_var() {  # host_var h01 ADDR -> value of HOST_H01_ADDR
  local name=${1^^}
  name="HOST_${name//[^A-Z0-9]/_}_$2"
  echo "${!name}"
}

# start_server LOG ARGS...: `xftctl run qwen ARGS` serving on a free port of
# ${ADDR:-127.0.0.1}, or as ${LISTEN} says (flags, split at spaces, never
# globbed: [::1]); its stderr goes to LOG. Returns once it serves, with PORT
# and SERVER_PID set; the server is stopped when the test ends.
start_server() {
  local log=$1
  shift
  local listen
  read -ra listen <<<"${LISTEN:---serve ${ADDR:-127.0.0.1}:0}"
  : >"$log"  # the background job opens it later; sed below must find it even if that job has not run yet
  "$XFTCTL" run qwen "${listen[@]}" "$@" 2>"$log" &
  SERVER_PID=$!
  _LIB_BACKGROUND_PIDS+=("$SERVER_PID")
  for _ in $(seq 1 600); do
    # Under mpirun, rank 0's lines come tagged "[rank 0 host] ".
    PORT=$(sed -n 's|^.*xftctl: serving .* on http://[^ ]*:\([0-9]*\) .*|\1|p' "$log")
    [[ -n $PORT ]] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the server exited: $(cat "$log")"
    sleep 0.1
  done
  fail "the server did not start in 60 s"
}

# Records every process's command line until the test ends, so a test can
# assert that a secret never showed up in `ps`.
# The watcher ends at a stop file rather than by a signal: killed, it could leave
# a last `ps` running that records the commands the test runs after stopping it.
watch_process_list() {  # FILE
  local file=$1 stop
  stop=$(mktemp -u "$TEST_TMP/.watch-stop.XXXXXX")
  (while [[ ! -e $stop ]]; do
    ps -eww -o args= >>"$file" 2>/dev/null || true
    sleep 0.1
  done) &
  _LIB_WATCHERS+=("$!:$stop")
}

stop_background() {
  local pid watcher
  for watcher in "${_LIB_WATCHERS[@]}"; do touch "${watcher#*:}"; done
  for watcher in "${_LIB_WATCHERS[@]}"; do wait "${watcher%%:*}" 2>/dev/null || true; done
  _LIB_WATCHERS=()
  for pid in "${_LIB_BACKGROUND_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  _LIB_BACKGROUND_PIDS=()
}
