#!/usr/bin/env bash
# Leaves the machine as if the test cluster had never run: what a stopped run did not clean (a
# test process killed with SIGKILL, a crash) is found and removed. Run before a cluster starts and
# after it stopped; harmless when there is nothing to clean. Only one test cluster runs per
# machine, so every pod cgroup, `cni-` network namespace, `cni0` bridge and KUBE-/CNI- iptables
# chain on it is the cluster's own.
#
#   CLUSTER_BASE=<base-dir> bash test/cluster/reset-host.sh [kube-proxy-binary]
#
# The base directory comes in the environment, not the arguments, so this script's own command
# line does not match the search for the processes that name it.
set -uo pipefail

base=${CLUSTER_BASE:?CLUSTER_BASE must name the base directory of the cluster}
kube_proxy=${1:-}
case "$base" in
  /*/*) ;;
  *) echo "reset-host: refusing a base directory this short: $base" >&2; exit 2 ;;
esac

# 1. Our processes: every component and containerd's shims name the base directory in their
# arguments. SIGKILL, as their own shutdown is what failed.
for pid in $(pgrep -f -- "$base" || true); do
  [ "$pid" = "$$" ] && continue
  kill -KILL "$pid" 2> /dev/null
done

# 2. What ran in pods: every process left in the kubelet's pod cgroups.
for hierarchy in /sys/fs/cgroup/pids /sys/fs/cgroup/memory /sys/fs/cgroup/unified; do
  [ -d "$hierarchy/kubepods" ] || continue
  find "$hierarchy/kubepods" -name cgroup.procs -exec cat {} + 2> /dev/null | while read -r pid; do
    kill -KILL "$pid" 2> /dev/null
  done
done
sleep 0.2

# 3. Network namespaces of pod sandboxes (containerd's CRI names them cni-<uuid>).
for ns in $(ip netns list 2> /dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
  ip netns delete "$ns" 2> /dev/null
done

# 4. Mounts under the base directory, deepest first (containers' rootfs, volumes, shm).
grep -F " $base" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r mnt; do
  umount "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null
done

# 5. The pods' bridge, and the iptables chains of kube-proxy and the CNI bridge plugin.
ip link delete cni0 2> /dev/null
if [ -n "$kube_proxy" ] && [ -x "$kube_proxy" ]; then
  "$kube_proxy" --cleanup > /dev/null 2>&1
fi
for table in nat filter; do
  chains=$(iptables -t "$table" -S 2> /dev/null | awk '$1 == "-N" && ($2 ~ /^CNI-/ || $2 ~ /^KUBE-/) {print $2}')
  [ -n "$chains" ] || continue
  # Rules in any chain that jump to one of them, then the chains themselves.
  iptables -t "$table" -S 2> /dev/null | grep -E -- '-j (CNI|KUBE)-' | grep -E '^-A ' | while read -r rule; do
    eval "iptables -t $table ${rule/-A/-D}" 2> /dev/null
  done
  for chain in $chains; do iptables -t "$table" -F "$chain" 2> /dev/null; done
  for chain in $chains; do iptables -t "$table" -X "$chain" 2> /dev/null; done
done

# 6. The state itself.
rm -rf -- "$base" 2> /dev/null || {
  sleep 1
  rm -rf -- "$base"
}
exit 0
