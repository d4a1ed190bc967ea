#!/usr/bin/env bash
# The test cluster: N "hosts" on this one machine, each a network namespace
# with its own address, hostname, root home, /tmp, /etc/hosts, /etc/shadow,
# shared dir and a real OpenSSH sshd. Integration tests drive the real xftctl
# binary against it. Needs root, iproute2, util-linux, openssh-server, openssl.
#
# Usage
#   cluster.sh start DIR [options]   start the hosts; writes DIR/inventory.yaml and DIR/cluster.env
#       -n, --hosts N            number of hosts (default 4, at most 200)
#       --prefix P               host names P01..PNN (default h)
#       --password-env VAR       root password of every host, read from $VAR (default XFT_TEST_PASSWORD;
#                                must be set). The inventory says password_env: VAR. Never on a command line.
#       --auth password|key      inventory credentials: password_env (default) or key DIR/id_ed25519
#                                (generated and authorized on every host; password login still works)
#       --shared-path PATH       where each host sees its shared dir (default /mnt; only inside the
#                                host's mount namespace)
#       --share LIST             these hosts share one shared dir (names or numbers, comma-separated);
#                                repeatable; hosts in no --share list get their own dir
#       --share-all              every host sees the same shared dir
#       --private PATH           give every host its own empty dir over PATH (repeatable), e.g. /opt/xft;
#                                PATH is created here (empty) when missing, as a mount point
#       --owner PID              the run is a leftover once PID is gone (default: the caller, $PPID)
#       --timeout S              seconds to wait for every sshd to answer (default 30)
#   cluster.sh stop DIR              tear everything down (safe to repeat; safe after a failed start)
#   cluster.sh stop-host DIR NAME    kill that host's sshd: the host becomes unreachable
#   cluster.sh start-host DIR NAME   boot it again (fresh mount namespace, same files and address)
#   cluster.sh rekey DIR NAME        new ed25519 host key, sshd restarted (a "reinstalled" host)
#   cluster.sh run DIR NAME CMD...   run CMD inside the host (its network, mount and UTS namespaces)
#   cluster.sh cleanup               tear down leftovers of runs whose owner process is gone
#
# DIR/cluster.env (source it) defines CLUSTER_ID, CLUSTER_DIR, CLUSTER_SUBNET (10.A.B.0/24),
# CLUSTER_GATEWAY (10.A.B.1, the bridge in the root namespace), CLUSTER_BRIDGE, CLUSTER_HOSTS
# ("h01 h02 ..."), CLUSTER_INVENTORY, CLUSTER_SHARED_PATH, CLUSTER_PASSWORD_ENV, CLUSTER_KEY (key auth)
# and per host (name upper-cased, non-alphanumerics as _): HOST_H01_NS, HOST_H01_ADDR (10.A.B.11),
# HOST_H01_PID (sshd = the host's init; nsenter -t PID -m -u -n), HOST_H01_SHARED (its dir here).
#
# Isolation: every run claims an id (the /24 it uses, hex) by mkdir under /run/xftctl-test-cluster,
# skips subnets that overlap any route or address of this machine, and names its namespaces
# xft<ID><name>, its bridge xft<ID>br and veths xft<ID>v<NN>. Only PIDs recorded in DIR are killed
# (plus whatever still runs inside this run's own namespaces), so parallel runs never touch each other.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REGISTRY=/run/xftctl-test-cluster

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

# --- small helpers ----------------------------------------------------------

ip_to_int() {
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  echo $(((${1:-0} << 24) | (${2:-0} << 16) | (${3:-0} << 8) | ${4:-0}))
}

# Does 10.A.B.0/24 overlap any route or address prefix of this machine?
subnet_in_use() {
  local base=$(($(ip_to_int "$1") & 0xFFFFFF00)) prefix net len mask
  while read -r prefix; do
    [[ $prefix == default || -z $prefix ]] && continue
    net=${prefix%/*}
    len=${prefix#*/}
    [[ $prefix == */* ]] || len=32
    ((len < 24)) && mask=$(((0xFFFFFFFF << (32 - len)) & 0xFFFFFFFF)) || mask=0xFFFFFF00
    (((base & mask) == ($(ip_to_int "$net") & mask))) && return 0
  done < <({
    ip -4 route show table all | awk '{print ($1 == "broadcast" || $1 == "local") ? $2 : $1}'
    ip -4 -o addr show | awk '{print $4}'
  })
  return 1
}

# A process's start time (field 22 of /proc/PID/stat): a PID alone can be reused.
start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  echo "${20}"
}

owner_alive() {  # owner_alive RUNDIR
  local pid started
  pid=$(cat "$1/owner.pid" 2>/dev/null) || return 1
  started=$(cat "$1/owner.start" 2>/dev/null) || return 1
  [[ $(start_time "$pid" 2>/dev/null) == "$started" ]]
}

var_name() {  # h01 -> H01
  local name=${1^^}
  echo "${name//[^A-Z0-9]/_}"
}

host_names() { cat "$1/hosts.list"; }
host_dir() { echo "$1/hosts/$2"; }
require_host() { [[ -d $1/hosts/$2 ]] || die "$2 is not a host of the cluster in $1"; }

# True when PID is the sshd this host's init became (guards against PID reuse).
is_host_sshd() {  # is_host_sshd PID HOSTDIR
  [[ -n $1 ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-f $2/sshd_config"
}

# --- start -------------------------------------------------------------------

claim_run_id() {
  mkdir -p "$REGISTRY"
  local attempt a b id
  for attempt in $(seq 1 200); do
    a=$((100 + (RANDOM ^ $$ + attempt) % 100))
    b=$(((RANDOM + attempt * 7) % 256))
    id=$(printf '%02x%02x' "$a" "$b")
    subnet_in_use "10.$a.$b.0" && continue
    if mkdir "$REGISTRY/$id" 2>/dev/null; then
      RUN_ID=$id
      OCT_A=$a
      OCT_B=$b
      return 0
    fi
  done
  die "no free 10.x.y.0/24 subnet found (leftovers? run: cluster.sh cleanup)"
}

write_sshd_config() {  # HOSTDIR ADDRESS
  cat >"$1/sshd_config" <<EOF
# Test host sshd (tests/cluster/cluster.sh)
ListenAddress $2:22
HostKey $1/ssh_host_ed25519_key
PidFile $1/sshd.pid
PermitRootLogin yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
UseDNS no
PrintMotd no
MaxStartups 256
MaxSessions 256
LogLevel VERBOSE
Subsystem sftp internal-sftp
EOF
}

write_host_files() {  # NAME INDEX
  local name=$1 index=$2 hd address
  hd=$(host_dir "$DIR" "$name")
  address="10.$OCT_A.$OCT_B.$((10 + index))"
  mkdir -p "$hd/root/.ssh" "$hd/tmp" "$hd/var_tmp"
  chmod 700 "$hd/root" "$hd/root/.ssh"
  chmod 1777 "$hd/tmp" "$hd/var_tmp"
  : >"$hd/root/.ssh/authorized_keys"
  [[ -n $KEY_FILE ]] && cat "$KEY_FILE.pub" >>"$hd/root/.ssh/authorized_keys"
  chmod 600 "$hd/root/.ssh/authorized_keys"
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$hd/ssh_host_ed25519_key"
  echo "$name" >"$hd/etc_hostname"
  awk -F: -v hash="$PASSWORD_HASH" 'BEGIN { OFS = ":" } $1 == "root" { $2 = hash } { print }' \
    /etc/shadow >"$hd/etc_shadow"
  chmod 640 "$hd/etc_shadow"
  cp "$DIR/etc_hosts" "$hd/etc_hosts"
  local i=0 path
  for path in "${PRIVATE_PATH_LIST[@]}"; do
    mkdir -p "$hd/private/$i"
    i=$((i + 1))
  done
  write_sshd_config "$hd" "$address"
  {
    printf 'HOST_NAME=%q\n' "$name"
    printf 'CLUSTER_DIR=%q\n' "$DIR"
    printf 'HOST_INDEX=%q\n' "$index"
    printf 'HOST_ADDR=%q\n' "$address"
    printf 'HOST_NS=%q\n' "xft${RUN_ID}${name}"
    printf 'HOST_VETH=%q\n' "$(printf 'xft%sv%02d' "$RUN_ID" "$index")"
    printf 'SHARED_PATH=%q\n' "$SHARED_PATH"
    printf 'SHARED_DIR=%q\n' "$(shared_dir_of "$name" "$index")"
    printf 'PRIVATE_PATHS=%q\n' "${PRIVATE_PATH_LIST[*]}"
  } >"$hd/host.conf"
  mkdir -p "$(shared_dir_of "$name" "$index")"
}

# Which shared dir a host gets: its --share group's, or its own.
shared_dir_of() {  # NAME INDEX
  local g members item
  for g in "${!SHARE_GROUPS[@]}"; do
    IFS=, read -ra members <<<"${SHARE_GROUPS[$g]}"
    for item in "${members[@]}"; do
      if [[ $item == "$1" ]] || { [[ $item =~ ^[0-9]+$ ]] && ((10#$item == $2)); }; then
        echo "$DIR/shared/group$g"
        return
      fi
    done
  done
  echo "$DIR/shared/$1"
}

create_network() {
  local bridge="xft${RUN_ID}br"
  echo "$bridge" >"$DIR/bridge"
  ip link add "$bridge" type bridge
  ip addr add "10.$OCT_A.$OCT_B.1/24" dev "$bridge"
  ip link set "$bridge" up
}

plug_host() {  # NAME
  local hd
  hd=$(host_dir "$DIR" "$1")
  # shellcheck source=/dev/null
  source "$hd/host.conf"
  ip netns add "$HOST_NS"
  ip link add "$HOST_VETH" type veth peer name eth0 netns "$HOST_NS"
  ip link set "$HOST_VETH" master "$(cat "$DIR/bridge")" up
  ip -n "$HOST_NS" link set lo up
  ip -n "$HOST_NS" addr add "$HOST_ADDR/24" dev eth0
  ip -n "$HOST_NS" link set eth0 up
  ip -n "$HOST_NS" route add default via "10.$OCT_A.$OCT_B.1"
}

boot_host() {  # DIR NAME
  local hd
  hd=$(host_dir "$1" "$2")
  # shellcheck source=/dev/null
  source "$hd/host.conf"
  rm -f "$hd/sshd.pid"
  ip netns exec "$HOST_NS" unshare -m -u --propagation private \
    bash "$SCRIPT_DIR/host-init.sh" "$hd" </dev/null >>"$hd/init.log" 2>&1 &
  echo $! >"$hd/init.pid"
}

# TCP connect and an "SSH-2.0" banner from every listed host, or fail with its logs.
wait_for_sshd() {  # DIR TIMEOUT NAME...
  local dir=$1 timeout=$2 name hd banner
  shift 2
  local deadline=$((SECONDS + timeout))
  for name in "$@"; do
    hd=$(host_dir "$dir" "$name")
    # shellcheck source=/dev/null
    source "$hd/host.conf"
    while :; do
      banner=$(timeout 2 bash -c "exec 3<>/dev/tcp/$HOST_ADDR/22 && head -c 7 <&3" 2>/dev/null || true)
      [[ $banner == SSH-2.0 ]] && break
      if ! kill -0 "$(cat "$hd/init.pid")" 2>/dev/null; then
        echo "cluster.sh: $name: sshd exited; init.log and sshd.log follow" >&2
        cat "$hd/init.log" "$hd/sshd.log" >&2 2>/dev/null || true
        return 1
      fi
      ((SECONDS < deadline)) || { echo "cluster.sh: $name ($HOST_ADDR): no SSH banner after ${timeout}s" >&2; return 1; }
      sleep 0.1
    done
  done
}

write_inventory() {
  local name hd
  {
    echo "# Written by tests/cluster/cluster.sh for test cluster $RUN_ID"
    echo "defaults:"
    echo "  user: root"
    if [[ $AUTH == key ]]; then echo "  key: $KEY_FILE"; else echo "  password_env: $PASSWORD_ENV"; fi
    echo "  shared: $SHARED_PATH"
    echo "  fabric:"
    echo "    provider: \"tcp;ofi_rxm\""
    echo "    iface: eth0"
    echo "hosts:"
    for name in $(host_names "$DIR"); do
      hd=$(host_dir "$DIR" "$name")
      # shellcheck source=/dev/null
      source "$hd/host.conf"
      echo "  - name: $name"
      echo "    address: $HOST_ADDR"
    done
  } >"$DIR/inventory.yaml"
}

write_env() {  # DIR
  local dir=$1 name hd v
  {
    printf 'CLUSTER_ID=%q\n' "$(cat "$dir/run.id")"
    printf 'CLUSTER_DIR=%q\n' "$dir"
    cat "$dir/net.env"
    printf 'CLUSTER_HOSTS=%q\n' "$(host_names "$dir" | tr '\n' ' ' | sed 's/ $//')"
    printf 'CLUSTER_INVENTORY=%q\n' "$dir/inventory.yaml"
    for name in $(host_names "$dir"); do
      hd=$(host_dir "$dir" "$name")
      # shellcheck source=/dev/null
      source "$hd/host.conf"
      v=$(var_name "$name")
      printf 'HOST_%s_NS=%q\n' "$v" "$HOST_NS"
      printf 'HOST_%s_ADDR=%q\n' "$v" "$HOST_ADDR"
      printf 'HOST_%s_PID=%q\n' "$v" "$(cat "$hd/init.pid" 2>/dev/null || true)"
      printf 'HOST_%s_SHARED=%q\n' "$v" "$SHARED_DIR"
    done
  } >"$dir/cluster.env.tmp"
  mv "$dir/cluster.env.tmp" "$dir/cluster.env"
}

cmd_start() {
  local count=4 prefix=h timeout=30 owner=$PPID
  PASSWORD_ENV=XFT_TEST_PASSWORD
  AUTH=password
  SHARED_PATH=/mnt
  SHARE_GROUPS=()
  PRIVATE_PATH_LIST=()  # host.conf carries it as the string PRIVATE_PATHS
  [[ $# -ge 1 ]] || die "usage: cluster.sh start DIR [options]"
  DIR=$1
  shift
  while (($#)); do
    case $1 in
      -n | --hosts) count=$2; shift ;;
      --prefix) prefix=$2; shift ;;
      --password-env) PASSWORD_ENV=$2; shift ;;
      --auth) AUTH=$2; shift ;;
      --shared-path) SHARED_PATH=$2; shift ;;
      --share) SHARE_GROUPS+=("$2"); shift ;;
      --share-all) SHARE_GROUPS+=("all") ;;
      --private) PRIVATE_PATH_LIST+=("$2"); shift ;;
      --owner) owner=$2; shift ;;
      --timeout) timeout=$2; shift ;;
      *) die "start: unknown option $1 (see the usage at the top of $0)" ;;
    esac
    shift
  done
  [[ $count =~ ^[0-9]+$ ]] && ((count >= 1 && count <= 200)) || die "start: --hosts must be 1..200"
  [[ $AUTH == password || $AUTH == key ]] || die "start: --auth is password or key"
  [[ $SHARED_PATH == /* && -d $SHARED_PATH ]] || die "start: --shared-path $SHARED_PATH must be an existing absolute directory"
  for path in "${PRIVATE_PATH_LIST[@]}"; do
    [[ $path == /* ]] || die "start: --private $path must be absolute"
  done
  [[ -n ${!PASSWORD_ENV:-} ]] || die "start: \$$PASSWORD_ENV is not set; export the root password the test hosts get"
  ((EUID == 0)) || die "start: needs root (network namespaces, bind mounts)"
  for tool in ip unshare nsenter /usr/sbin/sshd ssh-keygen openssl awk; do
    command -v "$tool" >/dev/null || die "start: $tool is missing; run scripts/install-deps.sh"
  done
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  [[ ! -e $DIR/run.id ]] || die "start: $DIR already holds a cluster; stop it first"
  for i in "${!SHARE_GROUPS[@]}"; do
    [[ ${SHARE_GROUPS[$i]} == all ]] && SHARE_GROUPS[i]=$(seq -s, 1 "$count")
  done

  cmd_cleanup
  claim_run_id
  # From here on everything is recorded first, so `stop DIR` can undo a half-done start.
  echo "$RUN_ID" >"$DIR/run.id"
  echo "$DIR" >"$REGISTRY/$RUN_ID/dir"
  echo "$owner" >"$REGISTRY/$RUN_ID/owner.pid"
  start_time "$owner" >"$REGISTRY/$RUN_ID/owner.start" || die "start: owner PID $owner is not running"
  STARTED=0
  trap 'if ((!STARTED)); then echo "cluster.sh: start failed; tearing down" >&2; cmd_stop "$DIR" >/dev/null 2>&1 || true; fi' EXIT
  {
    printf 'CLUSTER_SUBNET=%q\n' "10.$OCT_A.$OCT_B.0/24"
    printf 'CLUSTER_GATEWAY=%q\n' "10.$OCT_A.$OCT_B.1"
    printf 'CLUSTER_BRIDGE=%q\n' "xft${RUN_ID}br"
    printf 'CLUSTER_SHARED_PATH=%q\n' "$SHARED_PATH"
    printf 'CLUSTER_PASSWORD_ENV=%q\n' "$PASSWORD_ENV"
    printf 'CLUSTER_KEY=%q\n' "$([[ $AUTH == key ]] && echo "$DIR/id_ed25519" || true)"
  } >"$DIR/net.env"

  KEY_FILE=
  if [[ $AUTH == key ]]; then
    KEY_FILE=$DIR/id_ed25519
    ssh-keygen -q -t ed25519 -N '' -C "xftctl-test-$RUN_ID" -f "$KEY_FILE"
  fi
  # The hash is made from stdin, so the password shows up in no process list.
  PASSWORD_HASH=$(openssl passwd -6 -stdin <<<"${!PASSWORD_ENV}")
  mkdir -p /run/sshd  # sshd's privilege separation directory
  # Mount points must exist; they stay empty here, the hosts see their own dirs.
  for path in "${PRIVATE_PATH_LIST[@]}"; do mkdir -p "$path"; done
  : >"$DIR/hosts.list"
  local i name
  for i in $(seq 1 "$count"); do
    printf '%s%02d\n' "$prefix" "$i" >>"$DIR/hosts.list"
  done
  {
    echo "127.0.0.1 localhost"
    i=1
    for name in $(host_names "$DIR"); do
      echo "10.$OCT_A.$OCT_B.$((10 + i)) $name"
      i=$((i + 1))
    done
  } >"$DIR/etc_hosts"

  create_network
  i=1
  for name in $(host_names "$DIR"); do
    write_host_files "$name" "$i"
    plug_host "$name"
    boot_host "$DIR" "$name"
    i=$((i + 1))
  done
  write_inventory
  write_env "$DIR"
  # shellcheck disable=SC2046
  wait_for_sshd "$DIR" "$timeout" $(host_names "$DIR")
  STARTED=1
  echo "cluster.sh: $count hosts up in 10.$OCT_A.$OCT_B.0/24 (run $RUN_ID); env: $DIR/cluster.env"
}

# --- stop and per-host actions -----------------------------------------------

kill_host() {  # DIR NAME
  local hd pid
  hd=$(host_dir "$1" "$2")
  pid=$(cat "$hd/init.pid" 2>/dev/null || true)
  is_host_sshd "$pid" "$hd" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    is_host_sshd "$pid" "$hd" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
  [[ $# -eq 1 ]] || die "usage: cluster.sh stop DIR"
  local dir=$1 id name hd pid
  [[ -f $dir/run.id ]] || return 0
  dir=$(cd "$dir" && pwd)
  id=$(cat "$dir/run.id")
  for name in $(host_names "$dir" 2>/dev/null); do
    kill_host "$dir" "$name"
  done
  for name in $(host_names "$dir" 2>/dev/null); do
    hd=$(host_dir "$dir" "$name")
    [[ -f $hd/host.conf ]] || continue
    # shellcheck source=/dev/null
    source "$hd/host.conf"
    if [[ -e /run/netns/$HOST_NS ]]; then
      # Sessions sshd forked keep running after it; they live only in this
      # run's namespace, so they are ours to end.
      for pid in $(ip netns pids "$HOST_NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
      ip netns del "$HOST_NS" 2>/dev/null || true
    fi
    ip link del "$HOST_VETH" 2>/dev/null || true
  done
  [[ -f $dir/bridge ]] && ip link del "$(cat "$dir/bridge")" 2>/dev/null || true
  rm -rf "${REGISTRY:?}/$id"
  rm -f "$dir/run.id"
  echo "cluster.sh: run $id stopped"
}

cmd_stop_host() {
  [[ $# -eq 2 ]] || die "usage: cluster.sh stop-host DIR NAME"
  require_host "$1" "$2"
  kill_host "$1" "$2"
}

cmd_start_host() {
  [[ $# -eq 2 ]] || die "usage: cluster.sh start-host DIR NAME"
  require_host "$1" "$2"
  local dir
  dir=$(cd "$1" && pwd)
  kill_host "$dir" "$2"
  boot_host "$dir" "$2"
  write_env "$dir"
  wait_for_sshd "$dir" 30 "$2"
}

cmd_rekey() {
  [[ $# -eq 2 ]] || die "usage: cluster.sh rekey DIR NAME"
  require_host "$1" "$2"
  local hd
  hd=$(host_dir "$1" "$2")
  rm -f "$hd/ssh_host_ed25519_key" "$hd/ssh_host_ed25519_key.pub"
  ssh-keygen -q -t ed25519 -N '' -C "$2" -f "$hd/ssh_host_ed25519_key"
  cmd_start_host "$1" "$2"
}

cmd_run() {
  [[ $# -ge 3 ]] || die "usage: cluster.sh run DIR NAME CMD..."
  require_host "$1" "$2"
  local hd pid
  hd=$(host_dir "$1" "$2")
  pid=$(cat "$hd/init.pid")
  is_host_sshd "$pid" "$hd" || die "run: $2 is not running (cluster.sh start-host $1 $2)"
  shift 2
  nsenter -t "$pid" -m -u -n -- "$@"
}

cmd_cleanup() {
  [[ -d $REGISTRY ]] || return 0
  local entry dir
  for entry in "$REGISTRY"/*/; do
    [[ -d $entry ]] || continue
    entry=${entry%/}
    owner_alive "$entry" && continue
    # A claim a few seconds old may be a start still writing its owner.
    if [[ ! -f $entry/owner.start ]] && (($(date +%s) - $(stat -c %Y "$entry") < 60)); then continue; fi
    dir=$(cat "$entry/dir" 2>/dev/null || true)
    echo "cluster.sh: cleaning up leftover run $(basename "$entry") (${dir:-no dir})" >&2
    if [[ -n $dir && -f $dir/run.id ]]; then
      cmd_stop "$dir" >/dev/null || true
    fi
    remove_by_id "$(basename "$entry")"
    rm -rf "$entry"
  done
}

# When a run's DIR is gone its records are too; its names still say whose
# namespaces and links they are (the id is claimed in the registry).
remove_by_id() {  # ID
  local id=$1 ns pid link
  [[ $id =~ ^[0-9a-f]{4}$ ]] || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^xft$id" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^xft$id" || true); do
    ip link del "$link" 2>/dev/null || true
  done
}

main() {
  [[ $# -ge 1 ]] || die "usage: cluster.sh start|stop|stop-host|start-host|rekey|run|cleanup ... (see the top of $0)"
  local command=$1
  shift
  case $command in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    stop-host) cmd_stop_host "$@" ;;
    start-host) cmd_start_host "$@" ;;
    rekey) cmd_rekey "$@" ;;
    run) cmd_run "$@" ;;
    cleanup) cmd_cleanup ;;
    *) die "unknown command $command (see the top of $0)" ;;
  esac
}

main "$@"
