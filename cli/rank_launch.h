// What every command that starts ranks shares (`topology`, `launch`,
// `run qwen`, `bench allreduce`, `check fabric`): the plan flags, the plan for
// the inventory or for this machine, and running a command as the plan's
// ranks through the launcher with rank output shown and failures named.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/reach_options.h"
#include "common/expected.h"
#include "inventory/inventory.h"
#include "launcher/launch.h"
#include "launcher/launch_site.h"
#include "launcher/topology.h"

namespace xft::cli {

struct PlanFlags {
  bool local = false;         // facts/topology: this machine (or --sysfs-root) only
  int local_ranks = 0;        // --local N: N ranks on this machine, no inventory
  std::string sysfs_root = "/";
  std::string ranks;          // --ranks-per-host; empty: the inventory's value
  std::string hostfile;       // --hostfile: its hosts, in its order, with its slots as ranks
  int comm_cores = -1;        // --comm-cores, accepted and ignored (-1: not given)
  bool smt = false;
  int cores_per_rank = 0;
  bool refresh = false;
  bool json = false;
  // -x items (add_env_flag): NAME=VALUE goes on mpirun's command line; NAME
  // forwards xftctl's own value by name only, so it never appears on one.
  std::vector<std::string> env;
};

// --sysfs-root, --ranks-per-host, --hostfile, --smt, --cores-per-rank,
// --refresh, and the hidden --comm-cores.
void add_plan_flags(CLI::App& command, PlanFlags& flags);
// --hostfile FILE alone, for commands with their own plan flags.
void add_hostfile_flag(CLI::App& command, std::string& hostfile);
Expected<launcher::PlanOptions> plan_options(const PlanFlags& flags);
// -x,--env NAME=VALUE or NAME (repeatable) for every rank, into flags.env.
void add_env_flag(CLI::App& command, PlanFlags& flags);
// The -x items on the spec: NAME=VALUE into spec.env, NAME into spec.pass_env.
// An error for a name that is no variable name or NAME unset here.
Expected<void> apply_rank_env(const std::vector<std::string>& items, launcher::MpirunSpec& spec);

struct PlannedRanks {
  launcher::RankPlan plan;
  std::vector<inventory::Host> hosts;  // empty for a plan on this machine
  std::vector<std::string> env;  // PlanFlags::env, applied by mpirun_for
};

// The plan for --local N, for this machine (flags.local), or for the
// inventory's hosts (--hosts or --hostfile picks which; facts cached or
// probed over SSH). On error, failure_code says which exit code fits
// (unreachable host, failed host, bad input, a usage error).
Expected<PlannedRanks> plan_for(const Context& ctx, const PlanFlags& flags, const ReachFlags& reach,
                                int& failure_code);

// mpirun for the plan: ssh key, user and known_hosts of the inventory hosts,
// and the -x items of planned.env.
Expected<launcher::MpirunSpec> mpirun_for(const PlannedRanks& planned, const ReachFlags& reach,
                                          std::vector<std::string> command);

struct RankRun {
  std::string what;  // "bench allreduce": prefixes error messages
  bool dry_run = false;  // print the mpirun command instead
  bool json = false;     // with dry_run: one JSON document (argv, agent script, env names)
  std::chrono::seconds timeout{0};
  std::chrono::seconds kill_grace{5};
  bool pass_stdin = false;  // rank 0 reads our stdin (chat)
  // A server: ^C / SIGTERM is how it ends, so ranks that then exit 0 are a success.
  // The ranks get SIGUSR1 (through mpirun) instead of SIGTERM.
  bool signal_is_normal_stop = false;
  // Unset: rank 0's stdout passes through, everything else as "[rank host] line" on
  // stderr; with tag_every_line, every line of every rank is tagged (`xftctl launch`).
  bool tag_every_line = false;
  std::function<void(const launcher::OutputLine&)> on_output;
  // NAME/VALUE pairs every rank gets in its environment that must never be on a
  // command line (an API key): set only in mpirun's own environment and
  // forwarded with `-x NAME`. --dry-run shows `-x NAME`, never the value.
  std::vector<std::pair<std::string, std::string>> secret_env;
  // Where mpirun runs (set_launch_site); default: here.
  launcher::LaunchSite site;
  std::optional<inventory::Host> first_host;  // with site.on_first_host: reached with `reach`
  ReachFlags reach;
};

// Where the planned ranks' mpirun runs: here, or on the first host when a
// host is behind a bastion (launcher/launch_site.h).
void set_launch_site(RankRun& run, const PlannedRanks& planned, const ReachFlags& reach);

// Runs the ranks and returns the exit code for the command: 0, 1 when mpirun
// could not start, 2 when a rank failed or the run timed out (named on stderr).
int run_ranks(const launcher::RankPlan& plan, const launcher::MpirunSpec& mpirun, const RankRun& run);

// Rank 0's stdout as is; other lines as "[rank host] text" on stderr.
void print_rank_line(const launcher::RankPlan& plan, const launcher::OutputLine& line);

// N ranks on this machine when there are fewer cores than ranks: plain
// mpirun, unbound and oversubscribed (correctness runs; timings mean little).
int run_ranks_oversubscribed(int ranks, const std::vector<std::string>& command, const RankRun& run);

// This binary's path, for the ranks' command line.
std::string self_path();
std::string this_hostname();

}  // namespace xft::cli
