// Runs a command as the ranks of a plan through mpirun, and says which rank
// failed and why. `run qwen`, `bench allreduce` and `check fabric` all start
// their ranks through launch().
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "launcher/facts.h"
#include "launcher/mpirun.h"
#include "launcher/topology.h"
#include "remote/transport.h"

namespace xft::launcher {

// One line of rank output. rank is -1 for mpirun's own lines.
struct OutputLine {
  int rank = -1;
  bool is_stderr = false;
  std::string text;
};

struct LaunchSpec {
  RankPlan plan;
  MpirunSpec mpirun;  // mpirun.command is what every rank runs
  std::chrono::seconds timeout{0};  // whole launch; 0 = none
  std::chrono::seconds kill_grace{5};  // SIGTERM to the group, then SIGKILL after this
  // What ^C / SIGTERM of xftctl sends first. A server asks for SIGUSR1: mpirun
  // forwards it to every rank without ending the job, so the ranks can stop
  // together and exit 0 (mpirun itself ends the job on SIGTERM).
  int interrupt_signal = 15;
  // Each line as it arrives; unset: print "[rank host] line" to our stdout/stderr.
  std::function<void(const OutputLine&)> on_output;
  size_t stderr_tail_lines = 20;  // kept per rank for the failure report
  bool pass_stdin = false;  // mpirun reads our stdin (it forwards it to rank 0); else /dev/null
  // Set only in mpirun's own environment (handed to exec, never to setenv here):
  // with their names in mpirun.pass_env they reach the ranks without ever being
  // on a command line.
  std::vector<std::pair<std::string, std::string>> child_env;
};

struct RankFailure {
  int rank = -1;
  std::string host;
  std::string address;
  int exit_code = 0;       // when it exited
  int signal = 0;          // when a signal killed it
  std::vector<std::string> last_stderr;
};

struct LaunchResult {
  int exit_code = 0;      // mpirun's; 124 when the launch timed out
  bool timed_out = false;
  bool interrupted = false;  // SIGINT/SIGTERM reached us and was passed on
  std::optional<RankFailure> failure;
  std::vector<std::string> command;                 // the mpirun tokens run
  std::map<int, std::vector<std::string>> stdout_lines;  // by rank
  std::vector<std::string> mpirun_messages;         // mpirun's own untagged output
  bool ok() const { return exit_code == 0 && !timed_out && !interrupted; }
  // One line for the user: "rank 1 (h02, 10.0.0.12) exited with 3; last stderr: ..." etc.
  std::string summary() const;
};

// Starts mpirun in its own process group and waits for it (with the timeout);
// on timeout or SIGINT/SIGTERM the whole group is stopped. Unless every rank
// is local, mpirun's ssh is an SshAgentFile that lives as long as the launch.
// An error only when mpirun could not be started; a failed rank is a LaunchResult.
Expected<LaunchResult> launch(const LaunchSpec& spec);

// The same run with mpirun on another host (LaunchSite: the first host behind
// a bastion), through `session`: the agent script goes to a private directory
// there (removed afterwards), mpirun's argv is run through the login shell as
// single-quoted tokens, its output streams back through the same parsing, and
// child_env values reach it on its standard input (never on a command line).
// Not with pass_stdin. spec.timeout closes the session (mpirun there is not
// signalled as launch() signals a local one).
Expected<LaunchResult> launch_through(const LaunchSpec& spec, remote::RemoteSession& session);

// This process's environment as NAME=VALUE strings with `overrides` set, for an
// exec whose child must see values we never put into our own environment.
// An error for a name that is not [A-Za-z_][A-Za-z0-9_]*.
Expected<std::vector<std::string>> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// Splits "[1,3]<stderr>:text" (4.x) / "[1,3]<stderr>: text" (5.x); false for untagged lines.
bool parse_tagged_line(const std::string& line, int mpi_major, OutputLine& out);
// The failing rank named in mpirun's messages, with its exit code or signal.
std::optional<RankFailure> find_failed_rank(const std::vector<std::string>& mpirun_messages);
// A line of Open MPI's state trace (state_base_verbose), which launch() turns on and keeps from the output.
bool is_state_trace_line(const std::string& line);
// The first rank the trace shows failing; its exit code (or signal) is mpirun's exit status.
std::optional<RankFailure> failure_from_state_trace(const std::vector<std::string>& trace, int mpirun_exit_code);

// The mpirun to run: $XFTCTL_MPIRUN, else AWS's EFA build
// (ROOT/opt/amazon/openmpi/bin/mpirun) when installed, else mpirun on PATH.
std::string default_mpirun(const std::string& root);

// `mpirun --version` (run with an argv, no shell) -> Open MPI's major version;
// 4 when mpirun is not there (launch() then says how to install it). An error
// that says how to point XFTCTL_MPIRUN at Open MPI for any other MPI.
Expected<int> detect_open_mpi_major(const std::string& mpirun);

// The local interface's subnet ("10.1.2.0/24") that contains `address`, for
// oob_tcp_if_include: it names the same network on every host whatever the
// interface is called there. Empty when no local interface has it.
std::string local_subnet_for(const std::string& address);

// Facts for the hosts: from the cache unless `refresh` or missing, else probed
// over SSH in parallel (and cached). Errors name the host.
struct FactsRequest {
  bool refresh = false;
  int fanout = 64;
  std::string cache_dir;  // empty: facts_cache_dir()
};
struct HostFactsResult {
  std::string host;
  Expected<HostFacts> facts = Error{"not probed"};
  bool from_cache = false;
  bool unreachable = false;
};
std::vector<HostFactsResult> gather_facts(const std::vector<inventory::Host>& hosts, remote::Transport& transport,
                                          const FactsRequest& request);

// A plan host from an inventory host and its facts.
PlanHost plan_host_from(const inventory::Host& host, HostFacts facts);

// N ranks on this machine (`--local N`), facts from `sysfs_root`.
Expected<RankPlan> plan_local(int ranks, const std::string& sysfs_root, const PlanOptions& options);

// The MpirunSpec for a plan: version, root, ssh key/known_hosts/user/port of
// the hosts (one for all: mpirun has one ssh agent), fabric of the first host.
Expected<MpirunSpec> mpirun_spec_for(const RankPlan& plan, const std::vector<inventory::Host>& hosts,
                                     const std::string& known_hosts, std::vector<std::string> command);

}  // namespace xft::launcher
