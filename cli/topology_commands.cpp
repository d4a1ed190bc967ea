// xftctl facts, xftctl topology, xftctl launch: what the hosts are made of,
// where each rank goes (numactl core lists), and running a command as those
// ranks through mpirun. Plus the hidden `xftctl rank-probe` that a launched
// rank runs to report where it landed.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/rank_launch.h"
#include "cli/reach_options.h"
#include "launcher/facts.h"
#include "launcher/launch.h"
#include "launcher/mpirun.h"
#include "remote/ssh_transport.h"
#include "launcher/topology.h"
#include "common/log.h"

namespace xft::cli {
namespace {

using launcher::HostFacts;
using launcher::RankPlan;

void fail(Context& ctx, const std::string& message, int code = exit_error) {
  log::error(message);
  ctx.exit_code = code;
}

// The local name of a recorded tree (its folder) or of this machine.
std::string local_name(const std::string& root) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r == "/" || r.empty()) return this_hostname();
  return r.substr(r.find_last_of('/') + 1);
}

struct GatheredFacts {
  std::vector<inventory::Host> hosts;
  std::vector<launcher::HostFactsResult> results;
  bool any_unreachable = false;
  bool any_failed = false;
};

Expected<GatheredFacts> gather(const Context& ctx, const ReachFlags& reach, bool refresh) {
  auto hosts = load_selected_hosts(ctx.inventory_flag, reach.hosts);
  if (!hosts) return hosts.error();
  auto transport = make_ssh_transport(reach);
  launcher::FactsRequest request;
  request.refresh = refresh;
  request.fanout = reach.fanout;
  GatheredFacts gathered;
  gathered.hosts = *hosts;
  gathered.results = launcher::gather_facts(*hosts, *transport, request);
  for (const auto& r : gathered.results) {
    if (r.facts) continue;
    (r.unreachable ? gathered.any_unreachable : gathered.any_failed) = true;
  }
  return gathered;
}

std::string gib(std::uint64_t kb) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(kb) / (1024.0 * 1024.0));
  return text;
}

void print_facts(const HostFacts& f, bool from_cache) {
  int online = 0, allowed = 0;
  for (const auto& c : f.cpus) {
    online += c.online;
    allowed += c.online && c.allowed;
  }
  std::string isa;
  for (const auto& flag : f.isa) isa += (isa.empty() ? "" : " ") + flag;
  std::printf("%s: %s\n", f.host.c_str(), f.cpu_model.empty() ? "unknown CPU" : f.cpu_model.c_str());
  std::printf("  %d socket%s, %d cores, %zu CPUs (%d online, %d allowed), %s memory\n", f.package_count(),
              f.package_count() == 1 ? "" : "s", f.core_count(), f.cpus.size(), online, allowed, gib(f.memory_kb).c_str());
  for (const auto& n : f.nodes)
    std::printf("  NUMA %d: CPUs %s, %s%s\n", n.id, n.cpus.empty() ? "none" : launcher::format_cpu_list(n.cpus).c_str(),
                gib(n.memory_kb).c_str(), n.has_memory() ? "" : " (memory-less)");
  std::string nics;
  for (const auto& n : f.nics)
    nics += (nics.empty() ? "" : ", ") + n.name + (n.kind == "infiniband" ? " (infiniband, " : " (") + "NUMA " +
            (n.numa_node < 0 ? std::string("unknown") : std::to_string(n.numa_node)) + ")";
  std::printf("  NICs: %s\n", nics.empty() ? "none with a device" : nics.c_str());
  std::printf("  ISA: %s\n", isa.empty() ? "none of avx512f avx512_bf16 amx_bf16 amx_tile avx512_fp16" : isa.c_str());
  if (!f.probed_at.empty()) std::printf("  probed %s%s\n", f.probed_at.c_str(), from_cache ? " (cached; --refresh to probe again)" : "");
}

void run_facts(Context& ctx, const PlanFlags& flags, const ReachFlags& reach) {
  if (flags.local) {
    auto facts = launcher::probe_local_facts(flags.sysfs_root, local_name(flags.sysfs_root));
    if (!facts) return fail(ctx, facts.error().message);
    if (flags.json)
      std::printf("%s\n", launcher::facts_to_json(*facts).dump(2).c_str());
    else
      print_facts(*facts, false);
    return;
  }
  auto gathered = gather(ctx, reach, flags.refresh);
  if (!gathered) return fail(ctx, gathered.error().message);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : gathered->results) {
    if (!r.facts) {
      if (flags.json)
        all.push_back({{"host", r.host}, {"error", r.facts.error().message}});
      else
        log::error(r.facts.error().message, {{"host", r.host}});
      continue;
    }
    if (flags.json) {
      auto j = launcher::facts_to_json(*r.facts);
      j["from_cache"] = r.from_cache;
      all.push_back(j);
    } else {
      print_facts(*r.facts, r.from_cache);
    }
  }
  if (flags.json) std::printf("%s\n", all.dump(2).c_str());
  ctx.exit_code = reach_exit_code(gathered->any_unreachable, gathered->any_failed);
}

void run_topology(Context& ctx, const PlanFlags& flags, const ReachFlags& reach) {
  int failure_code = exit_error;
  auto planned = plan_for(ctx, flags, reach, failure_code);
  if (!planned) return fail(ctx, planned.error().message, failure_code);
  if (flags.json)
    std::printf("%s\n", launcher::plan_to_json(planned->plan).dump(2).c_str());
  else
    std::printf("%s", launcher::format_rank_map(planned->plan).c_str());
}

struct LaunchFlags {
  bool dry_run = false;
  bool json = false;
  int timeout_s = 0;
  std::vector<std::string> command;
};

void run_launch(Context& ctx, const PlanFlags& flags, const ReachFlags& reach, const LaunchFlags& launch_flags) {
  if (launch_flags.command.empty()) return fail(ctx, "launch: give the command after --, e.g. xftctl launch -- hostname");
  int failure_code = exit_error;
  auto planned = plan_for(ctx, flags, reach, failure_code);
  if (!planned) return fail(ctx, planned.error().message, failure_code);
  auto mpirun = mpirun_for(*planned, reach, launch_flags.command);
  if (!mpirun) return fail(ctx, mpirun.error().message);
  RankRun run;
  run.what = "launch";
  run.dry_run = launch_flags.dry_run;
  run.json = launch_flags.json;
  run.timeout = std::chrono::seconds(launch_flags.timeout_s);
  run.tag_every_line = true;
  set_launch_site(run, *planned, reach);
  ctx.exit_code = run_ranks(planned->plan, *mpirun, run);
}

// What a rank sees: where it runs and with what binding.
void run_rank_probe() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "-");
  };
  std::printf("rank=%s local_rank=%s host=%s cpus=%s omp=%s\n", env("OMPI_COMM_WORLD_RANK").c_str(),
              env("OMPI_COMM_WORLD_LOCAL_RANK").c_str(), this_hostname().c_str(),
              launcher::format_cpu_list(cpus).c_str(), env("OMP_NUM_THREADS").c_str());
  std::fflush(stdout);
}

}  // namespace

void add_topology_commands(CLI::App& app, Context& ctx) {
  static PlanFlags facts_flags, topo_flags, launch_plan_flags;
  static ReachFlags facts_reach, topo_reach, launch_reach;
  static LaunchFlags launch_flags;

  auto* facts = app.add_subcommand("facts", "CPU, NUMA, NIC and ISA facts of the hosts (cached per host)");
  facts->add_flag("--local", facts_flags.local, "this machine (or the tree under --sysfs-root), no inventory");
  facts->add_option("--sysfs-root", facts_flags.sysfs_root, "read sysfs/procfs under DIR instead of /")
      ->capture_default_str();
  facts->add_flag("--refresh", facts_flags.refresh, "probe again instead of using the cache");
  facts->add_flag("--json", facts_flags.json, "JSON output");
  add_reach_flags(*facts, facts_reach);
  facts->callback([&] { run_facts(ctx, facts_flags, facts_reach); });

  auto* topo = app.add_subcommand("topology", "the rank plan: rank map, transports, numactl binding per rank");
  topo->add_flag("--local", topo_flags.local, "this machine (or the tree under --sysfs-root), no inventory");
  add_plan_flags(*topo, topo_flags);
  topo->add_flag("--json", topo_flags.json, "JSON output");
  add_reach_flags(*topo, topo_reach);
  topo->callback([&] { run_topology(ctx, topo_flags, topo_reach); });

  auto* launch = app.add_subcommand("launch", "run a command as the ranks of the plan (mpirun + numactl)");
  auto* dry_run = launch->add_flag("--dry-run", launch_flags.dry_run,
                   "print the mpirun command and its ssh agent script instead of running them");
  launch->add_flag("--json", launch_flags.json, "with --dry-run: one JSON document (argv, agent script, env names)")
      ->needs(dry_run);
  launch->add_option("--timeout", launch_flags.timeout_s, "stop every rank after S seconds (0: no limit)")
      ->check(CLI::Range(0, 86400 * 30));
  launch->add_option("--local", launch_plan_flags.local_ranks, "N ranks on this machine, no inventory")
      ->check(CLI::Range(1, 4096));
  add_env_flag(*launch, launch_plan_flags);
  add_plan_flags(*launch, launch_plan_flags);
  launch->add_flag("--accept-new-host-keys", launch_reach.accept_new_host_keys,
                   "trust and record unknown host keys while probing facts");
  launch->add_option("--known-hosts", launch_reach.known_hosts,
                     "known_hosts file for probing and for mpirun's ssh (else ~/.config/xftctl/known_hosts)");
  launch->add_option("--hosts", launch_reach.hosts, "only these inventory hosts");
  launch->add_option("--fanout", launch_reach.fanout, "hosts probed at once")->check(CLI::Range(1, 4096));
  launch->add_option("--connect-timeout", launch_reach.connect_timeout_s, "seconds to wait for a host")
      ->check(CLI::Range(1, 3600));
  launch->add_option("command", launch_flags.command, "the command each rank runs (after --)");
  launch->callback([&] { run_launch(ctx, launch_plan_flags, launch_reach, launch_flags); });

  auto* probe = app.add_subcommand("rank-probe", "print this rank's host, rank and CPU affinity");
  probe->group("");  // hidden: launched ranks run it
  probe->callback([] { run_rank_probe(); });
}

}  // namespace xft::cli
