#!/usr/bin/env bash
# The first process of one test host. cluster.sh starts it as
#   ip netns exec NS unshare -m -u --propagation private bash host-init.sh HOSTDIR
# so it already sits in the host's network namespace and in a fresh mount and
# UTS namespace that nothing propagates out of. It gives the host its own
# identity and private paths, then becomes the host's sshd (exec: same PID,
# which cluster.sh records and later nsenters or kills).
#
# HOSTDIR/host.conf defines HOST_NAME, CLUSTER_DIR, SHARED_PATH, SHARED_DIR and PRIVATE_PATHS
# (space-separated absolute paths that get an empty per-host directory).
set -euo pipefail
hostdir=$1
# shellcheck source=/dev/null
source "$hostdir/host.conf"

hostname "$HOST_NAME"
# Belt and braces: unshare --propagation private already did this.
mount --make-rprivate /

# bind SOURCE TARGET: SOURCE replaces TARGET. When the cluster dir lies under
# TARGET (mktemp -d puts it in /tmp), it is bound into SOURCE at the same
# relative path first and carried along (rbind), so sshd still finds its
# config, keys and logs at the paths cluster.sh wrote.
bind() {
  local source=$1 target=$2
  case "$CLUSTER_DIR/" in
    "$target"/*)
      local inner="$source/${CLUSTER_DIR#"$target"/}"
      mkdir -p "$inner"
      mount --bind "$CLUSTER_DIR" "$inner"
      mount --rbind "$source" "$target"
      ;;
    *) mount --bind "$source" "$target" ;;
  esac
}
# Root's home (with .ssh/authorized_keys) and the scratch dirs are per host,
# so hosts never see each other's files except through the shared dir.
bind "$hostdir/root" /root
bind "$hostdir/tmp" /tmp
bind "$hostdir/var_tmp" /var/tmp
bind "$hostdir/etc_hosts" /etc/hosts
bind "$hostdir/etc_hostname" /etc/hostname
bind "$hostdir/etc_shadow" /etc/shadow
bind "$SHARED_DIR" "$SHARED_PATH"
i=0
for path in $PRIVATE_PATHS; do
  bind "$hostdir/private/$i" "$path"
  i=$((i + 1))
done

exec /usr/sbin/sshd -D -f "$hostdir/sshd_config" -E "$hostdir/sshd.log"
