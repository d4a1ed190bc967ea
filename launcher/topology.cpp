#include "launcher/topology.h"

#include "inventory/deepspeed.h"
#include "inventory/grammar.h"
#include "inventory/load.h"
#include "inventory/yaml_errors.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <sstream>

namespace xft::launcher {

namespace {

// A physical core as the plan uses it: the usable logical CPUs of one core.
struct Core {
  std::vector<int> cpus;  // lowest sibling only, unless --smt
  int node = 0;
  int package = 0;
  int first() const { return cpus.front(); }
};

std::vector<Core> usable_cores(const HostFacts& facts, bool smt) {
  std::map<std::vector<int>, Core> by_siblings;
  for (const auto& cpu : facts.cpus) {
    if (!cpu.online || !cpu.allowed) continue;
    Core& core = by_siblings[cpu.siblings];
    if (core.cpus.empty()) {
      core.node = cpu.numa_node;
      core.package = cpu.package;
    }
    core.cpus.push_back(cpu.id);
  }
  std::vector<Core> cores;
  for (auto& [siblings, core] : by_siblings) {
    std::sort(core.cpus.begin(), core.cpus.end());
    if (!smt) core.cpus.resize(1);  // the lowest-numbered usable sibling
    // A core's node is the node of the CPU the rank will actually use.
    if (const LogicalCpu* cpu = facts.cpu(core.first())) core.node = cpu->numa_node;
    cores.push_back(core);
  }
  std::sort(cores.begin(), cores.end(), [](const Core& a, const Core& b) { return a.first() < b.first(); });
  return cores;
}

int distance(const HostFacts& facts, int from, int to) {
  if (from == to) return 10;
  const NumaNode* node = facts.node(from);
  if (!node) return INT_MAX / 2;
  auto it = node->distance.find(to);
  return it == node->distance.end() ? INT_MAX / 2 : it->second;
}

// Lower is better: nearest to the fabric NIC's node, then lowest id.
struct NodePreference {
  const HostFacts& facts;
  int nic_node;  // -1: unknown
  std::pair<int, int> key(int node) const {
    return {nic_node < 0 ? 0 : distance(facts, nic_node, node), node};
  }
};

int fabric_nic_node(const PlanHost& host) {
  if (host.fabric_iface.empty()) return -1;
  const Nic* nic = host.facts.nic(host.fabric_iface);
  return nic ? nic->numa_node : -1;
}

// The node a CPU on `node` should take memory from: itself, or for a
// memory-less node the nearest node that has memory.
int memory_node_for(const HostFacts& facts, int node) {
  const NumaNode* own = facts.node(node);
  if (!own || own->has_memory()) return node;
  int best = -1;
  for (const auto& other : facts.nodes) {
    if (!other.has_memory()) continue;
    if (best < 0 || distance(facts, node, other.id) < distance(facts, node, best)) best = other.id;
  }
  return best < 0 ? node : best;
}

using CoreGroup = std::vector<Core>;

// Keeps `cap` cores of a group, preferring nodes nearest the NIC.
CoreGroup cap_group(CoreGroup group, int cap, const NodePreference& pref) {
  if (cap <= 0 || static_cast<int>(group.size()) <= cap) return group;
  std::stable_sort(group.begin(), group.end(),
                   [&](const Core& a, const Core& b) { return pref.key(a.node) < pref.key(b.node); });
  group.resize(cap);
  std::sort(group.begin(), group.end(), [](const Core& a, const Core& b) { return a.first() < b.first(); });
  return group;
}

std::vector<CoreGroup> groups_by(const std::vector<Core>& cores, bool by_package) {
  std::map<int, CoreGroup> groups;
  for (const auto& core : cores) groups[by_package ? core.package : core.node].push_back(core);
  std::vector<CoreGroup> out;
  for (auto& [key, group] : groups) out.push_back(std::move(group));
  return out;
}

// N equal ranks: each from one NUMA node when one has room (the one nearest
// the NIC first), else from the fullest node and then its nearest neighbours.
std::vector<CoreGroup> equal_groups(const std::vector<Core>& cores, int count, int per_rank,
                                    const HostFacts& facts, const NodePreference& pref) {
  std::map<int, std::vector<Core>> free;  // node -> cores in id order
  for (const auto& core : cores) free[core.node].push_back(core);
  auto take = [&](int node, int n, CoreGroup& into) {
    auto& pool = free[node];
    int k = std::min<int>(n, pool.size());
    into.insert(into.end(), pool.begin(), pool.begin() + k);
    pool.erase(pool.begin(), pool.begin() + k);
    return k;
  };
  std::vector<CoreGroup> groups;
  for (int r = 0; r < count; ++r) {
    CoreGroup group;
    int fit = -1;
    for (const auto& [node, pool] : free)
      if (static_cast<int>(pool.size()) >= per_rank && (fit < 0 || pref.key(node) < pref.key(fit))) fit = node;
    if (fit >= 0) {
      take(fit, per_rank, group);
    } else {
      int start = -1;
      for (const auto& [node, pool] : free) {
        if (pool.empty()) continue;
        if (start < 0 || pool.size() > free[start].size() ||
            (pool.size() == free[start].size() && pref.key(node) < pref.key(start)))
          start = node;
      }
      std::vector<int> order;
      for (const auto& [node, pool] : free)
        if (!pool.empty()) order.push_back(node);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return std::make_pair(distance(facts, start, a), pref.key(a)) <
               std::make_pair(distance(facts, start, b), pref.key(b));
      });
      int need = per_rank;
      for (int node : order) {
        if (need == 0) break;
        need -= take(node, need, group);
      }
    }
    std::sort(group.begin(), group.end(), [](const Core& a, const Core& b) { return a.first() < b.first(); });
    groups.push_back(std::move(group));
  }
  std::sort(groups.begin(), groups.end(),
            [](const CoreGroup& a, const CoreGroup& b) { return a.front().first() < b.front().first(); });
  return groups;
}

std::string host_label(const PlanHost& host) { return "host " + host.name; }

Expected<std::vector<CoreGroup>> rank_groups(const PlanHost& host, const inventory::Ranks& ranks,
                                             const std::vector<Core>& cores, const PlanOptions& options) {
  NodePreference pref{host.facts, fabric_nic_node(host)};
  int total = static_cast<int>(cores.size());
  if (ranks.kind == inventory::RanksKind::count) {
    if (ranks.count < 1)
      return make_error(host_label(host) + ": ranks must be at least 1 (got " + std::to_string(ranks.count) + ")");
    int per_rank = total / ranks.count;
    if (options.cores_per_rank > 0) per_rank = std::min(per_rank, options.cores_per_rank);
    if (per_rank < 1)
      return make_error(host_label(host) + ": " + std::to_string(ranks.count) + " ranks need at least one core each, " +
                        "but only " + std::to_string(total) + " usable (online, allowed) cores exist; lower ranks");
    return equal_groups(cores, ranks.count, per_rank, host.facts, pref);
  }
  std::vector<CoreGroup> groups = groups_by(cores, ranks.kind == inventory::RanksKind::per_socket);
  for (auto& group : groups) group = cap_group(std::move(group), options.cores_per_rank, pref);
  return groups;
}

}  // namespace

std::vector<std::string> RankPlacement::numactl_tokens() const {
  std::vector<int> nodes = memory_nodes;
  return {"numactl", "-C", format_cpu_list(cpus), "-m", format_cpu_list(nodes)};
}

std::string RankPlan::transport(int from, int to) const {
  const auto& a = ranks.at(from);
  const auto& b = ranks.at(to);
  if (a.host == b.host) return "shm";
  for (const auto& h : hosts)
    if (h.name == a.host) return h.fabric_provider.empty() ? "tcp;ofi_rxm" : h.fabric_provider;
  return "tcp;ofi_rxm";
}

namespace {

constexpr const char* kHostfileLineForm =
    "hostfile lines read NAME, NAME slots=N or NAME slots=N max_slots=M, e.g. h01 slots=2";

std::string not_in_inventory(const inventory::Inventory& inventory, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& host : inventory.hosts) names.push_back(host.name);
  std::string guess = inventory::closest_match(name, names);
  return inventory::quoted_value(name) + " is not a host of " + inventory.path +
         (guess.empty() ? " (add it there or remove the line)"
                        : " (did you mean " + inventory::quoted_value(guess) + "? or add it there)");
}

}  // namespace

Expected<std::vector<inventory::Host>> hosts_from_hostfile(const inventory::Inventory& inventory,
                                                           const std::string& text, const std::string& path) {
  inventory::ErrorList errors(path);
  std::vector<inventory::Host> hosts;
  std::set<std::string> chosen;
  for (const auto& line : inventory::read_hostfile_lines(text, errors, false, kHostfileLineForm)) {
    const inventory::Host* host = inventory.find(line.name);
    if (!host) {
      errors.add(line.line, line.column, "host", not_in_inventory(inventory, line.name));
      continue;
    }
    // A name and an address of one host on two lines would start its ranks twice.
    if (!chosen.insert(host->name).second) {
      errors.add(line.line, line.column, "host",
                 inventory::quoted_value(line.name) + " is host " + inventory::quoted_value(host->name) +
                     " again (keep one line per host)");
      continue;
    }
    hosts.push_back(*host);
    if (line.slots) hosts.back().ranks = inventory::Ranks{inventory::RanksKind::count, *line.slots};
  }
  if (hosts.empty() && errors.empty())
    errors.add(0, 0, "hosts", "the file lists no hosts (write one NAME or NAME slots=N line per host)");
  if (!errors.empty()) return errors.to_error();
  return hosts;
}

Expected<inventory::Ranks> parse_ranks(const std::string& text) {
  inventory::Ranks ranks;
  if (text == "per-socket") {
    ranks.kind = inventory::RanksKind::per_socket;
  } else if (text == "per-numa") {
    ranks.kind = inventory::RanksKind::per_numa;
  } else {
    size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || n < 1)
      return make_error("ranks per host \"" + text + "\": expected a positive number, per-socket or per-numa");
    ranks.count = n;
  }
  return ranks;
}

std::string ranks_to_string(const inventory::Ranks& ranks) {
  switch (ranks.kind) {
    case inventory::RanksKind::per_socket: return "per-socket";
    case inventory::RanksKind::per_numa: return "per-numa";
    default: return std::to_string(ranks.count);
  }
}

Expected<std::vector<RankPlacement>> plan_host(const PlanHost& host, const PlanOptions& options) {
  std::vector<Core> cores = usable_cores(host.facts, options.smt);
  if (cores.empty())
    return make_error(host_label(host) + ": no online CPU is allowed by its cpuset/affinity; check " +
                      "/sys/fs/cgroup/cpuset.cpus.effective and Cpus_allowed_list there");
  inventory::Ranks ranks = options.ranks ? *options.ranks : host.ranks;
  auto groups = rank_groups(host, ranks, cores, options);
  if (!groups) return groups.error();

  std::vector<RankPlacement> placements;
  for (const auto& group : *groups) {
    RankPlacement p;
    p.host = host.name;
    p.address = host.address;
    p.local_rank = static_cast<int>(placements.size());
    std::set<int> memory;
    for (const auto& core : group) {
      p.cpus.insert(p.cpus.end(), core.cpus.begin(), core.cpus.end());
      memory.insert(memory_node_for(host.facts, core.node));
    }
    std::sort(p.cpus.begin(), p.cpus.end());
    p.numa_node = group.front().node;
    p.memory_nodes.assign(memory.begin(), memory.end());
    placements.push_back(std::move(p));
  }
  return placements;
}

Expected<RankPlan> plan_ranks(std::vector<PlanHost> hosts, const PlanOptions& options) {
  RankPlan plan;
  for (auto& host : hosts) {
    auto placements = plan_host(host, options);
    if (!placements) return placements.error();
    for (auto& p : *placements) {
      p.rank = plan.size();
      plan.ranks.push_back(std::move(p));
    }
  }
  plan.hosts = std::move(hosts);
  return plan;
}

namespace {

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& sep) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += (i ? sep : "") + (i + 1 < row.size() ? pad(row[i], widths[i]) : row[i]);
    out += line + "\n";
  }
  return out;
}

std::vector<int> host_ranks(const RankPlan& plan, const std::string& host) {
  std::vector<int> ids;
  for (const auto& r : plan.ranks)
    if (r.host == host) ids.push_back(r.rank);
  return ids;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// Items joined with ", " into lines of at most `width` columns after `indent`
// (an item wider than that gets a line of its own).
std::string wrap_items(const std::vector<std::string>& items, const std::string& indent, size_t width) {
  std::string out, line;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (!line.empty() && indent.size() + line.size() + 1 + item.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

// Top-level parts of a folded host set: "gpu1,node[01-03,07]" -> gpu1, node[01-03,07].
std::vector<std::string> host_set_parts(const std::string& folded) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : folded) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

constexpr size_t kCompactWidth = 100;

// Past kFullMapRanks the rank x rank matrix and the row per rank outgrow a
// terminal (16 hosts x 4 ranks gave 962 columns); this form stays within
// kCompactWidth columns and grows with the number of distinct host layouts,
// not with the number of hosts. --json keeps every rank.
std::string format_compact_rank_map(const RankPlan& plan) {
  std::ostringstream out;
  out << "Rank map (" << plan.hosts.size() << " hosts, " << plan.size()
      << " ranks; --json lists every rank and pair)\n";
  std::vector<std::string> per_host;
  for (const auto& h : plan.hosts) per_host.push_back(h.name + " " + format_cpu_list(host_ranks(plan, h.name)));
  out << "Ranks per host:\n" << wrap_items(per_host, "  ", kCompactWidth) << "\n";

  std::map<std::string, size_t> pairs;
  for (const auto& a : plan.ranks)
    for (const auto& b : plan.ranks)
      if (a.rank != b.rank) ++pairs[plan.transport(a.rank, b.rank)];
  std::vector<std::string> transports;
  for (const auto& [name, count] : pairs)
    transports.push_back(name + (name == "shm" ? " within a host (" : " across hosts (") + std::to_string(count) +
                         (count == 1 ? " rank pair)" : " rank pairs)"));
  out << "Transports:\n" << wrap_items(transports, "  ", kCompactWidth) << "\n";

  // Hosts whose ranks are bound alike share one block.
  std::vector<std::pair<std::vector<std::vector<std::string>>, std::vector<std::string>>> layouts;
  for (const auto& h : plan.hosts) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : plan.ranks)
      if (r.host == h.name)
        rows.push_back({std::to_string(r.local_rank), std::to_string(r.numa_node), std::to_string(r.omp_threads()),
                        join(r.numactl_tokens(), " ")});
    auto found = std::find_if(layouts.begin(), layouts.end(), [&](auto& l) { return l.first == rows; });
    if (found == layouts.end()) layouts.push_back({rows, {h.name}});
    else found->second.push_back(h.name);
  }
  out << "Bindings (hosts bound alike share a block)";
  for (const auto& [rows, hosts] : layouts) {
    auto parts = host_set_parts(inventory::fold_names(hosts));
    parts.back() += ": " + std::to_string(hosts.size()) + (hosts.size() == 1 ? " host, " : " hosts, ") +
                    std::to_string(rows.size()) + (rows.size() == 1 ? " rank each" : " ranks each");
    out << "\n" << wrap_items(parts, "", kCompactWidth);
    std::vector<std::vector<std::string>> table_rows = {{"LOCAL", "NUMA", "OMP_NUM_THREADS", "BINDING"}};
    table_rows.insert(table_rows.end(), rows.begin(), rows.end());
    std::istringstream lines(table(table_rows, "  "));
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  }
  return out.str();
}

constexpr int kFullMapRanks = 8;

}  // namespace

std::string format_rank_map(const RankPlan& plan) {
  if (plan.size() > kFullMapRanks) return format_compact_rank_map(plan);
  std::ostringstream out;
  std::vector<std::vector<std::string>> map = {{"ID", "Node name", "IP", "Ranks"}};
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const auto& h = plan.hosts[i];
    map.push_back({std::to_string(i), h.name, h.address, format_cpu_list(host_ranks(plan, h.name))});
  }
  out << "Rank map (" << plan.hosts.size() << (plan.hosts.size() == 1 ? " host, " : " hosts, ") << plan.size()
      << (plan.size() == 1 ? " rank)\n" : " ranks)\n")
      << table(map, " | ") << "\n";

  out << "Transport (rank to rank)\n";
  std::vector<std::vector<std::string>> matrix;
  std::vector<std::string> header = {""};
  for (const auto& r : plan.ranks) header.push_back(std::to_string(r.rank));
  matrix.push_back(header);
  for (const auto& a : plan.ranks) {
    std::vector<std::string> row = {std::to_string(a.rank)};
    for (const auto& b : plan.ranks) row.push_back(a.rank == b.rank ? "-" : plan.transport(a.rank, b.rank));
    matrix.push_back(row);
  }
  out << table(matrix, "  ") << "\n";

  out << "Bindings\n";
  std::vector<std::vector<std::string>> binds = {
      {"RANK", "HOST", "LOCAL", "NUMA", "OMP_NUM_THREADS", "BINDING"}};
  for (const auto& r : plan.ranks)
    binds.push_back({std::to_string(r.rank), r.host, std::to_string(r.local_rank), std::to_string(r.numa_node),
                     std::to_string(r.omp_threads()), join(r.numactl_tokens(), " ")});
  out << table(binds, "  ");
  return out.str();
}

nlohmann::json plan_to_json(const RankPlan& plan) {
  using nlohmann::json;
  json hosts = json::array();
  for (const auto& h : plan.hosts) {
    const Nic* nic = h.fabric_iface.empty() ? nullptr : h.facts.nic(h.fabric_iface);
    hosts.push_back({{"name", h.name}, {"address", h.address}, {"ranks", host_ranks(plan, h.name)},
                     {"fabric_iface", h.fabric_iface}, {"fabric_provider", h.fabric_provider},
                     {"fabric_numa_node", nic ? nic->numa_node : -1}});
  }
  json ranks = json::array();
  for (const auto& r : plan.ranks)
    ranks.push_back({{"rank", r.rank}, {"host", r.host}, {"address", r.address}, {"local_rank", r.local_rank},
                     {"numa_node", r.numa_node}, {"memory_nodes", r.memory_nodes}, {"cpus", r.cpus},
                     {"omp_num_threads", r.omp_threads()},
                     {"numactl", join(r.numactl_tokens(), " ")}});
  json transport = json::array();
  for (const auto& a : plan.ranks) {
    json row = json::array();
    for (const auto& b : plan.ranks) row.push_back(a.rank == b.rank ? "self" : plan.transport(a.rank, b.rank));
    transport.push_back(row);
  }
  return {{"hosts", hosts}, {"ranks", ranks}, {"transport", transport}};
}

}  // namespace xft::launcher
