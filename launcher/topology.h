// The rank plan: how many ranks each host runs and which cores and memory
// node each one is bound to, derived from host facts instead of hand-written
// numactl lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "inventory/inventory.h"
#include "launcher/facts.h"

namespace xft::launcher {

struct PlanOptions {
  std::optional<inventory::Ranks> ranks;  // overrides every host's inventory value
  bool smt = false;         // also use hyperthread siblings
  int cores_per_rank = 0;   // cap, 0 = no cap
};

// One host of the plan: who it is (from the inventory or --local) and its facts.
struct PlanHost {
  std::string name;
  std::string address;
  inventory::Ranks ranks;
  std::string fabric_iface;     // the NIC nearest to which ranks go when there is a choice
  std::string fabric_provider;  // libfabric provider string; "tcp;ofi_rxm" by default
  std::vector<std::pair<std::string, std::string>> fabric_env;  // the inventory's fabric.env, for this host's ranks
  HostFacts facts;
};

struct RankPlacement {
  std::string host;
  std::string address;
  int rank = 0;
  int local_rank = 0;
  int numa_node = 0;               // node of the rank's first core
  std::vector<int> memory_nodes;   // what -m binds: nodes with memory nearest the rank's cores
  // Every bound CPU computes (OMP threads, OS ids): allreduce runs on these
  // threads inside each layer step, so no core is kept for communication.
  std::vector<int> cpus;
  int omp_threads() const { return static_cast<int>(cpus.size()); }
  // {"numactl", "-C", "0-3", "-m", "0"}
  std::vector<std::string> numactl_tokens() const;
};

struct RankPlan {
  std::vector<PlanHost> hosts;
  std::vector<RankPlacement> ranks;  // by rank id
  int size() const { return static_cast<int>(ranks.size()); }
  // "shm" between ranks of one host, the fabric provider across hosts.
  std::string transport(int from, int to) const;
};

// The inventory hosts a hostfile (DeepSpeed's `NAME slots=N`, Open MPI's
// `NAME slots=N max_slots=M`, or a bare NAME) names, matched by name or
// address, in the file's order, which becomes the rank order. slots=N sets
// that host's ranks. Errors: every problem as "path:line:col: what (fix)".
Expected<std::vector<inventory::Host>> hosts_from_hostfile(const inventory::Inventory& inventory,
                                                           const std::string& text, const std::string& path);

// "4", "per-socket", "per-numa".
Expected<inventory::Ranks> parse_ranks(const std::string& text);
std::string ranks_to_string(const inventory::Ranks& ranks);

// Places one host's ranks; errors name the host and say what to change.
Expected<std::vector<RankPlacement>> plan_host(const PlanHost& host, const PlanOptions& options);
// Every host in order; rank ids run across hosts.
Expected<RankPlan> plan_ranks(std::vector<PlanHost> hosts, const PlanOptions& options);

// Intel MPI -print-rank-map style table, the transport matrix, and each rank's binding.
std::string format_rank_map(const RankPlan& plan);
nlohmann::json plan_to_json(const RankPlan& plan);

}  // namespace xft::launcher
