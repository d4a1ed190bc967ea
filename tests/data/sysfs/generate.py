#!/usr/bin/env python3
"""Writes the recorded sysfs/procfs trees the topology unit tests read.

Each tree is what `xftctl facts --local --sysfs-root DIR` reads from a real host:
per-CPU topology files, NUMA nodes (cpulist, meminfo, distance), NIC NUMA nodes,
the cgroup cpuset, /proc/self/status, /proc/meminfo and the first /proc/cpuinfo
block. The trees are committed; rerun this only to change them:
    python3 tests/data/sysfs/generate.py
To record the tree of the machine you are on (same files, copied as they are):
    python3 tests/data/sysfs/generate.py --record NAME
"""
import glob
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPR_FLAGS = ("fpu vme sse sse2 ht syscall nx lm avx avx2 avx512f avx512dq avx512cd avx512bw "
             "avx512vl avx512_vnni avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8")
ICX_FLAGS = "fpu vme sse sse2 ht syscall nx lm avx avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"
ROME_FLAGS = "fpu vme sse sse2 ht syscall nx lm avx avx2 sha_ni"


def cpulist(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text + "\n")


def tree(name, *, cpus, nodes, distance, nics=(), ib=(), model, flags, allowed=None,
         offline=(), mem_kb=None, cgroup_v2=True):
    """cpus: {cpu: (package, die, core_id, [siblings])}; nodes: {node: ([cpus], mem_kb)}."""
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    all_cpus = sorted(cpus)
    online = [c for c in all_cpus if c not in offline]
    base = "/sys/devices/system/cpu"
    write(root, f"{base}/possible", cpulist(all_cpus))
    write(root, f"{base}/present", cpulist(all_cpus))
    write(root, f"{base}/online", cpulist(online))
    write(root, f"{base}/offline", cpulist(offline) if offline else "")
    for c, (pkg, die, core, sibs) in cpus.items():
        if c != 0:
            write(root, f"{base}/cpu{c}/online", "0" if c in offline else "1")
        if c in offline:
            continue  # the kernel removes an offline CPU's topology directory
        t = f"{base}/cpu{c}/topology"
        live = [s for s in sibs if s not in offline]
        write(root, f"{t}/physical_package_id", str(pkg))
        write(root, f"{t}/die_id", str(die))
        write(root, f"{t}/core_id", str(core))
        write(root, f"{t}/core_cpus_list", cpulist(live))
        write(root, f"{t}/thread_siblings_list", cpulist(live))
    nbase = "/sys/devices/system/node"
    node_ids = sorted(nodes)
    write(root, f"{nbase}/online", cpulist(node_ids))
    write(root, f"{nbase}/possible", cpulist(node_ids))
    write(root, f"{nbase}/has_memory", cpulist([n for n in node_ids if nodes[n][1] > 0]))
    write(root, f"{nbase}/has_cpu", cpulist([n for n in node_ids if nodes[n][0]]))
    for n in node_ids:
        ncpus, nmem = nodes[n]
        write(root, f"{nbase}/node{n}/cpulist", cpulist([c for c in ncpus if c not in offline]))
        write(root, f"{nbase}/node{n}/distance", " ".join(str(d) for d in distance[n]))
        write(root, f"{nbase}/node{n}/meminfo",
              f"Node {n} MemTotal:       {nmem} kB\nNode {n} MemFree:        {nmem * 9 // 10} kB\n"
              f"Node {n} MemUsed:        {nmem - nmem * 9 // 10} kB\nNode {n} HugePages_Total:     0")
    for iface, node in nics:
        write(root, f"/sys/class/net/{iface}/device/numa_node", str(node))
    for dev, node in ib:
        write(root, f"/sys/class/infiniband/{dev}/device/numa_node", str(node))
    allowed_list = cpulist(allowed if allowed is not None else online)
    if cgroup_v2:
        write(root, "/sys/fs/cgroup/cpuset.cpus.effective", allowed_list)
    write(root, "/proc/self/status",
          f"Name:\ttail\nState:\tR (running)\nTgid:\t4242\nPid:\t4242\n"
          f"Cpus_allowed_list:\t{allowed_list}\nMems_allowed_list:\t{cpulist(node_ids)}\n"
          f"voluntary_ctxt_switches:\t0")
    total = mem_kb if mem_kb is not None else sum(m for _, m in nodes.values())
    write(root, "/proc/meminfo", f"MemTotal:       {total} kB\nMemFree:        {total // 2} kB\n"
                                 f"MemAvailable:   {total // 2} kB")
    write(root, "/proc/cpuinfo",
          f"processor\t: 0\nvendor_id\t: {'AuthenticAMD' if 'AMD' in model else 'GenuineIntel'}\n"
          f"cpu family\t: 6\nmodel name\t: {model}\nsiblings\t: {len(all_cpus)}\n"
          f"flags\t\t: {flags}\n")


def smt_host(sockets, cores_per_socket, threads, adjacent, nodes_per_socket=1):
    """CPU numbering: adjacent → siblings (2i, 2i+1); else siblings i and i+total_cores."""
    total = sockets * cores_per_socket
    cpus = {}
    for s in range(sockets):
        for k in range(cores_per_socket):
            g = s * cores_per_socket + k  # global core index
            sibs = ([g * threads + t for t in range(threads)] if adjacent
                    else [g + t * total for t in range(threads)])
            for c in sibs:
                cpus[c] = (s, 0, k, sibs)
    nodes = {}
    per_node = cores_per_socket // nodes_per_socket
    for s in range(sockets):
        for j in range(nodes_per_socket):
            n = s * nodes_per_socket + j
            first = s * cores_per_socket + j * per_node
            members = []
            for g in range(first, first + per_node):
                members += ([g * threads + t for t in range(threads)] if adjacent
                            else [g + t * total for t in range(threads)])
            nodes[n] = (sorted(members), 0)
    return cpus, nodes


def main():
    # A 96-vCPU cloud VM (Intel 8575C-like): 48 cores x 2 threads, siblings next to each other.
    cpus, nodes = smt_host(1, 48, 2, adjacent=True)
    nodes = {0: (nodes[0][0], 393_216_000)}
    tree("cloud-96vcpu", cpus=cpus, nodes=nodes, distance={0: [10]},
         nics=[("eth0", -1)], model="Intel(R) Xeon(R) Platinum 8575C", flags=SPR_FLAGS)

    # 2-socket bare-metal Sapphire Rapids, 2x56 cores, siblings i and i+112, SNC2: 4 NUMA nodes.
    cpus, nodes = smt_host(2, 56, 2, adjacent=False, nodes_per_socket=2)
    nodes = {n: (c, 257_000_000) for n, (c, _) in nodes.items()}
    dist = {0: [10, 12, 21, 21], 1: [12, 10, 21, 21], 2: [21, 21, 10, 12], 3: [21, 21, 12, 10]}
    tree("spr-2s-snc2", cpus=cpus, nodes=nodes, distance=dist,
         nics=[("eno1", 0), ("ens5f0", 2)], ib=[("mlx5_0", 2)],
         model="Intel(R) Xeon(R) Platinum 8480+", flags=SPR_FLAGS)

    # 4-socket Cooper Lake-like host: 4x24 cores, siblings i and i+96, one NUMA node per socket.
    cpus, nodes = smt_host(4, 24, 2, adjacent=False)
    nodes = {n: (c, 192_000_000) for n, (c, _) in nodes.items()}
    dist = {n: [10 if m == n else 20 for m in range(4)] for n in range(4)}
    tree("xeon-4s", cpus=cpus, nodes=nodes, distance=dist, nics=[("ens1f0", 3)],
         model="Intel(R) Xeon(R) Platinum 8380H CPU @ 2.90GHz", flags=ICX_FLAGS)

    # No SMT; node 1 has CPUs but no memory (nearest memory: node 2), node 3 is memory only (CXL).
    cpus = {c: (c // 16, 0, c % 16, [c]) for c in range(32)}
    nodes = {0: (list(range(0, 8)), 64_000_000), 1: (list(range(8, 16)), 0),
             2: (list(range(16, 32)), 64_000_000), 3: ([], 128_000_000)}
    dist = {0: [10, 20, 30, 40], 1: [20, 10, 12, 30], 2: [30, 12, 10, 40], 3: [40, 30, 40, 10]}
    tree("memoryless-node", cpus=cpus, nodes=nodes, distance=dist, nics=[("eth0", 1)],
         model="AMD EPYC 7302 16-Core Processor", flags=ROME_FLAGS)

    # A container on a 16-core x 2-thread host (siblings i, i+16): cpuset allows 4-11,20-28
    # (core 12 only through its second thread 28), and CPU 31 is offline.
    cpus, nodes = smt_host(1, 16, 2, adjacent=False)
    nodes = {0: (nodes[0][0], 128_000_000)}
    allowed = list(range(4, 12)) + list(range(20, 29))
    tree("cpuset-partial", cpus=cpus, nodes=nodes, distance={0: [10]}, nics=[("eth0", 0)],
         model="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", flags=ICX_FLAGS,
         allowed=allowed, offline=[31])


# The files launcher/facts.cpp reads (fact_file_patterns), plus /proc/cpuinfo.
PATTERNS = [
    "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/present",
    "/sys/devices/system/cpu/cpu[0-9]*/online",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/die_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/core_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/core_cpus_list",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list",
    "/sys/devices/system/node/node[0-9]*/cpulist", "/sys/devices/system/node/node[0-9]*/meminfo",
    "/sys/devices/system/node/node[0-9]*/distance", "/sys/class/net/*/device/numa_node",
    "/sys/class/infiniband/*/device/numa_node", "/sys/fs/cgroup/cpuset.cpus.effective",
    "/proc/self/status", "/proc/meminfo",
]


def record(name):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    for pattern in PATTERNS:
        for path in glob.glob(pattern):
            try:
                text = open(path).read()
            except OSError:
                continue
            write(root, path, text.rstrip("\n"))
    block = open("/proc/cpuinfo").read().split("\n\n")[0]
    write(root, "/proc/cpuinfo", block)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--record":
        record(sys.argv[2])
    else:
        main()
