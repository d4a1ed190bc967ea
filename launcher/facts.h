// Host facts: the CPU, NUMA, NIC and ISA layout of one host, read from sysfs
// and procfs. One parser reads a set of files; where the files come from (a
// local tree under --sysfs-root, or a dump printed by a shell script over SSH)
// is a separate step, so tests feed it recorded trees.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace xft::launcher {

struct LogicalCpu {
  int id = 0;
  int package = -1;  // -1: unknown (offline CPUs have no topology directory)
  int die = 0;
  int core = -1;               // core_id, unique only within package and die
  std::vector<int> siblings;   // core_cpus_list (thread_siblings_list on old kernels)
  int numa_node = -1;
  bool online = true;
  bool allowed = true;  // in the cgroup cpuset and the affinity mask of a login shell
};

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  std::uint64_t memory_kb = 0;     // 0: a memory-less node
  std::map<int, int> distance;     // node id -> SLIT distance
  bool has_memory() const { return memory_kb > 0; }
};

struct Nic {
  std::string name;
  std::string kind;  // "net" (/sys/class/net) or "infiniband"
  int numa_node = -1;  // -1: the firmware does not say
};

struct HostFacts {
  std::string host;       // inventory name, or "localhost"
  std::string probed_at;  // UTC ISO 8601
  std::string cpu_model;
  std::vector<std::string> isa;  // the flags that matter for inference, in kIsaFlags order
  std::uint64_t memory_kb = 0;
  std::vector<LogicalCpu> cpus;  // sorted by id
  std::vector<NumaNode> nodes;   // sorted by id
  std::vector<Nic> nics;         // sorted by kind, then name
  // EFA's own libfabric (see efa_libfabric_dirs()); empty: the system's.
  std::string efa_libfabric_dir;
  std::string ld_library_path;  // the login session's own, recorded only with EFA's libfabric

  const LogicalCpu* cpu(int id) const;
  const NumaNode* node(int id) const;
  const Nic* nic(const std::string& name) const;
  int package_count() const;
  int core_count() const;  // physical cores among online CPUs
};

// avx512f, avx512_bf16, amx_bf16, amx_tile, avx512_fp16.
extern const std::vector<std::string> kIsaFlags;

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11}. Empty text is the empty set.
Expected<std::vector<int>> parse_cpu_list(const std::string& text);
// Runs of two or more consecutive ids become "a-b"; everything else is listed,
// so an every-second-CPU set stays the explicit "0,2,4,..." that numactl takes.
std::string format_cpu_list(const std::vector<int>& ids);

// Absolute paths (as on the host) -> file content.
using FileMap = std::map<std::string, std::string>;

// Glob patterns of every file the parser reads, as absolute host paths.
const std::vector<std::string>& fact_file_patterns();

// Reads every existing file matching fact_file_patterns() under `root`
// ("/" for this machine); keys are the paths without the root prefix.
FileMap read_fact_files(const std::string& root);

// The POSIX shell script that prints the same files on a remote host, each
// introduced by a "==> PATH <==" line (the format of `tail -v`).
std::string fact_probe_script();
// Splits that output back into a FileMap.
FileMap parse_fact_dump(const std::string& dump);

// EFA's own libfabric (aws-efa-installer): the first of these directories
// holding a libfabric.so.1 is the one ranks and check fabric's workers load,
// through LD_LIBRARY_PATH ahead of the session's own (xftctl links the
// system's libfabric.so.1, whose ABI EFA's shares).
const std::vector<std::string>& efa_libfabric_dirs();
// The dump sections (FileMap keys that are no paths) naming that directory
// and the session's LD_LIBRARY_PATH; both are there only when it was found.
inline constexpr const char* kEfaLibfabricSection = "efa libfabric";
inline constexpr const char* kLdLibraryPathSection = "LD_LIBRARY_PATH";
// POSIX sh that sets $efa to that directory, looked up under the root prefix
// $r (empty: /), and when found prints the two sections.
std::string efa_libfabric_probe_shell();
// LD_LIBRARY_PATH that puts EFA's directory first: "DIR[:LD_LIBRARY_PATH]";
// empty when `efa_dir` is.
std::string efa_library_path(const std::string& efa_dir, const std::string& ld_library_path);

// The one parser. `origin` names where the files came from, for errors.
Expected<HostFacts> parse_facts(const FileMap& files, const std::string& host,
                                const std::string& origin);

// Local convenience: read_fact_files + parse_facts, stamped with the current time.
Expected<HostFacts> probe_local_facts(const std::string& root, const std::string& host = "localhost");

nlohmann::json facts_to_json(const HostFacts& facts);
Expected<HostFacts> facts_from_json(const nlohmann::json& json, const std::string& origin);

// ~/.cache/xftctl/facts (honours $XDG_CACHE_HOME).
std::string facts_cache_dir();
Expected<HostFacts> load_cached_facts(const std::string& dir, const std::string& host);
Expected<void> save_cached_facts(const std::string& dir, const HostFacts& facts);

std::string utc_now_iso8601();

}  // namespace xft::launcher
