#include "cli/rank_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

#include <nlohmann/json.hpp>

#include "remote/ssh_transport.h"
#include "launcher/mpirun.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "inventory/load.h"

namespace xft::cli {

std::string self_path() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "xftctl";
  path[n] = '\0';
  return path;
}

std::string this_hostname() {
  char name[256] = "localhost";
  gethostname(name, sizeof name - 1);
  return name;
}

namespace {

// A recorded tree is named after its folder; the real root after this host.
std::string local_name(const std::string& root) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r == "/" || r.empty()) return this_hostname();
  return r.substr(r.find_last_of('/') + 1);
}

Expected<PlannedRanks> plan_this_machine(const PlanFlags& flags, const launcher::PlanOptions& options) {
  auto facts = launcher::probe_local_facts(flags.sysfs_root, local_name(flags.sysfs_root));
  if (!facts) return facts.error();
  launcher::PlanHost host;
  host.name = facts->host;
  host.address = "localhost";
  host.fabric_provider = "shm";
  host.facts = std::move(*facts);
  auto plan = launcher::plan_ranks({host}, options);
  if (!plan) return plan.error();
  return PlannedRanks{std::move(*plan), {}, {}};
}

// The inventory's hosts the hostfile names, in its order, with its slots.
Expected<std::vector<inventory::Host>> load_hostfile_hosts(const std::string& inventory_flag,
                                                           const std::string& hostfile) {
  auto path = inventory::locate_inventory(inventory_flag);
  if (!path) return path.error();
  auto loaded = inventory::load_inventory(*path);
  if (!loaded) return loaded.error();
  auto text = read_file(hostfile);
  if (!text)
    return make_error("--hostfile: " + text.error().message +
                      " (give an MPI hostfile, e.g. /etc/xftctl/hostfile from setup hosts)");
  return launcher::hosts_from_hostfile(*loaded, *text, hostfile);
}

Expected<PlannedRanks> plan_inventory(const Context& ctx, const PlanFlags& flags, const ReachFlags& reach,
                                      const launcher::PlanOptions& options, int& failure_code) {
  auto listed = flags.hostfile.empty() ? load_selected_hosts(ctx.inventory_flag, reach.hosts)
                                       : load_hostfile_hosts(ctx.inventory_flag, flags.hostfile);
  if (!listed) return listed.error();
  // Resolved here: the launch site and mpirun's host list need the real
  // addresses and bastions of hosts an inventory names by alias.
  auto hosts = hosts_as_reached(std::move(*listed), reach);
  if (!hosts) return hosts.error();
  auto transport = make_ssh_transport(reach);
  launcher::FactsRequest request;
  request.refresh = flags.refresh;
  request.fanout = reach.fanout;
  auto results = launcher::gather_facts(*hosts, *transport, request);
  std::vector<launcher::PlanHost> plan_hosts;
  for (size_t i = 0; i < hosts->size(); ++i) {
    auto& result = results[i];
    if (!result.facts) {
      failure_code = result.unreachable ? exit_unreachable : exit_host_failed;
      return make_error("facts of " + result.host + ": " + result.facts.error().message);
    }
    plan_hosts.push_back(launcher::plan_host_from((*hosts)[i], *result.facts));
  }
  auto plan = launcher::plan_ranks(std::move(plan_hosts), options);
  if (!plan) return plan.error();
  return PlannedRanks{std::move(*plan), std::move(*hosts), {}};
}

}  // namespace

void add_plan_flags(CLI::App& cmd, PlanFlags& flags) {
  cmd.add_option("--sysfs-root", flags.sysfs_root, "read sysfs/procfs under DIR (a recorded tree) instead of /")
      ->capture_default_str();
  cmd.add_option("--ranks-per-host", flags.ranks,
                 "N, per-socket or per-numa (default: the hostfile's slots, else the inventory's ranks)");
  add_hostfile_flag(cmd, flags.hostfile);
  // For scripts carried over from CCL_WORKER_COUNT; plan_for says it is ignored.
  cmd.add_option("--comm-cores", flags.comm_cores, "ignored: allreduce runs on the compute threads")
      ->check(CLI::Range(0, 4096))
      ->group("");
  cmd.add_flag("--smt", flags.smt, "also bind hyperthread siblings (default: one CPU per physical core)");
  cmd.add_option("--cores-per-rank", flags.cores_per_rank, "at most N cores per rank (0: no cap)")
      ->check(CLI::Range(0, 65536));
  cmd.add_flag("--refresh", flags.refresh, "probe the hosts again instead of using cached facts");
}

void add_hostfile_flag(CLI::App& cmd, std::string& hostfile) {
  cmd.add_option("--hostfile", hostfile,
                 "the inventory hosts FILE names (`NAME slots=N` lines: DeepSpeed's or Open MPI's hostfile, "
                 "or /etc/xftctl/hostfile from setup hosts), in its order, with slots=N ranks each; "
                 "not with --hosts")
      ->type_name("FILE");
}

Expected<launcher::PlanOptions> plan_options(const PlanFlags& flags) {
  launcher::PlanOptions options;
  options.smt = flags.smt;
  options.cores_per_rank = flags.cores_per_rank;
  if (!flags.ranks.empty()) {
    auto ranks = launcher::parse_ranks(flags.ranks);
    if (!ranks) return make_error("--ranks-per-host: " + ranks.error().message);
    options.ranks = *ranks;
  }
  return options;
}

namespace {

// --hostfile is a host selection of its own: with --hosts or a plan on this
// machine one of the two would be silently dropped.
Expected<void> check_hostfile_alone(const PlanFlags& flags, const ReachFlags& reach) {
  if (flags.hostfile.empty()) return {};
  if (!reach.hosts.empty())
    return make_error("--hostfile and --hosts both select hosts: give one of them (the hostfile's hosts, in its "
                      "order, or an inventory pattern)");
  if (flags.local || flags.local_ranks > 0)
    return make_error("--hostfile selects inventory hosts, --local this machine: give one of them");
  return {};
}

}  // namespace

Expected<PlannedRanks> plan_for(const Context& ctx, const PlanFlags& flags, const ReachFlags& reach,
                                int& failure_code) {
  failure_code = exit_usage;
  if (auto alone = check_hostfile_alone(flags, reach); !alone) return alone.error();
  failure_code = exit_error;
  if (flags.comm_cores >= 0)
    spdlog::warn("--comm-cores is ignored: xftctl runs no communication threads (allreduce runs on the compute "
                 "threads), so every core computes");
  auto options = plan_options(flags);
  if (!options) return options.error();
  Expected<PlannedRanks> planned = Error{""};
  if (flags.local_ranks > 0) {
    auto plan = launcher::plan_local(flags.local_ranks, flags.sysfs_root, *options);
    if (!plan) return plan.error();
    planned = PlannedRanks{std::move(*plan), {}, {}};
  } else if (flags.local) {
    planned = plan_this_machine(flags, *options);
  } else {
    planned = plan_inventory(ctx, flags, reach, *options, failure_code);
  }
  if (planned) planned->env = flags.env;
  return planned;
}

void add_env_flag(CLI::App& command, PlanFlags& flags) {
  command
      .add_option("-x,--env", flags.env,
                  "VAR=VALUE for every rank, or VAR: its value from xftctl's environment, which never "
                  "appears on a command line (repeatable)")
      ->allow_extra_args(false);  // one value per -x, so `-x A=1 -- cmd -c` ends at --
}

Expected<void> apply_rank_env(const std::vector<std::string>& items, launcher::MpirunSpec& spec) {
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& item : items) {
    const std::string name = item.substr(0, item.find('='));
    if (!std::regex_match(name, variable))
      return make_error("-x " + launcher::shell_join({item}) + ": expected VAR=VALUE or VAR, VAR made of letters, "
                        "digits and _");
    if (name.size() < item.size()) {
      spec.env.emplace_back(name, item.substr(name.size() + 1));
      continue;
    }
    // mpirun inherits our environment: the name is all it needs.
    if (!std::getenv(name.c_str())) return make_error("-x " + name + ": " + name + " is not set in xftctl's environment");
    spec.pass_env.push_back(name);
  }
  return {};
}

Expected<launcher::MpirunSpec> mpirun_for(const PlannedRanks& planned, const ReachFlags& reach,
                                          std::vector<std::string> command) {
  // mpirun's ssh checks host keys in the file xftctl's own sessions use: the
  // first host's (a UserKnownHostsFile in ~/.ssh/config counts), one file for all.
  std::string known_hosts;
  if (!planned.hosts.empty()) {
    remote::SshOptions options;
    options.known_hosts_path = reach.known_hosts;
    bool named = remote::known_hosts_named(options);
    if (options.known_hosts_path.empty()) options.known_hosts_path = remote::default_known_hosts_path();
    known_hosts = remote::host_key_check_for(planned.hosts.front(), options, named).known_hosts;
  }
  auto spec = launcher::mpirun_spec_for(planned.plan, planned.hosts, known_hosts, std::move(command));
  if (!spec) return spec;
  if (auto applied = apply_rank_env(planned.env, *spec); !applied) return applied.error();
  // main() exported the level and format -v/-q/--log-format chose; ranks on
  // other hosts get them by name (set only when not the defaults).
  for (const char* name : {"XFTCTL_LOG_LEVEL", "XFTCTL_LOG_FORMAT"})
    if (std::getenv(name)) spec->pass_env.push_back(name);
  return spec;
}

void print_rank_line(const launcher::RankPlan& plan, const launcher::OutputLine& line) {
  if (line.rank < 0) return;  // mpirun's own lines: summarized by LaunchResult
  if (line.rank == 0 && !line.is_stderr) {
    std::fprintf(stdout, "%s\n", line.text.c_str());
    std::fflush(stdout);
    return;
  }
  std::string host = line.rank < plan.size() ? plan.ranks[size_t(line.rank)].host : "?";
  log::relay(fmt::format("[{} {}] ", line.rank, host), line.text, {{"rank", line.rank}, {"host", host}});
}

namespace {

// Only the names reach mpirun's command line; launch() puts the values in its environment.
void add_secret_names(std::vector<std::string>& pass_env, const RankRun& run) {
  for (const auto& [name, value] : run.secret_env) pass_env.push_back(name);
}

// --dry-run --json: mpirun's argv as an array, the agent script, and the
// names of the variables the ranks get (values forwarded by name never shown).
nlohmann::ordered_json site_json(const launcher::LaunchSite& site) {
  if (!site.on_first_host) return {{"where", "local"}, {"reason", site.reason}};
  nlohmann::ordered_json via = nlohmann::ordered_json::array();
  for (const auto& hop : site.jump) via.push_back(hop.text());
  return {{"where", "first host"}, {"host", site.host}, {"address", site.address}, {"user", site.user},
          {"via", via},           {"reason", site.reason}};
}

Expected<nlohmann::ordered_json> describe_mpirun_json(const launcher::RankPlan& plan, launcher::MpirunSpec spec,
                                                      const launcher::LaunchSite& site) {
  nlohmann::ordered_json agent = nullptr;
  if (!spec.local_only) {
    auto script = launcher::ssh_agent_script(spec.ssh);
    if (!script) return script.error();
    spec.ssh_agent_path = (site.on_first_host ? std::string(launcher::kRemoteAgentDirTemplate)
                                              : launcher::ssh_agent_dir_template()) +
                          "/" + launcher::kSshAgentName;
    agent = {{"path", spec.ssh_agent_path}, {"script", *script}};
  }
  auto argv = launcher::build_mpirun_command(plan, spec);
  if (!argv) return argv.error();
  nlohmann::ordered_json set = nlohmann::ordered_json::array();
  for (const auto& [name, value] : launcher::fabric_env(spec)) set.push_back(name);
  for (const auto& [name, value] : spec.env) set.push_back(name);
  return nlohmann::ordered_json{{"ranks", plan.size()},
                                {"launch_site", site_json(site)},
                                {"argv", *argv},
                                {"ssh_agent", agent},
                                {"env", set},
                                {"forwarded_env", spec.pass_env}};
}

Expected<std::string> dry_run_text(const launcher::RankPlan& plan, const launcher::MpirunSpec& mpirun, bool json,
                                   const launcher::LaunchSite& site) {
  if (!json) {
    auto text = launcher::describe_mpirun_command(plan, mpirun);
    if (!text || !site.on_first_host) return text;
    return "# on " + site.host + " (" + site.user + "@" + site.address + "): " + site.reason + "\n" + *text;
  }
  auto doc = describe_mpirun_json(plan, mpirun, site);
  if (!doc) return doc.error();
  return doc->dump(2) + "\n";
}

// mpirun on the first host, reached through its bastions like any other session.
Expected<launcher::LaunchResult> launch_on_first_host(const launcher::LaunchSpec& spec, const RankRun& run) {
  if (!run.first_host) return make_error("no first host to run mpirun on");
  spdlog::info("{}: {}", run.what, run.site.reason);
  // Variables forwarded by name have their values here, not there: they travel like secrets.
  launcher::LaunchSpec remote_spec = spec;
  for (const auto& name : spec.mpirun.pass_env) {
    bool carried = false;
    for (const auto& [carried_name, value] : remote_spec.child_env) carried = carried || carried_name == name;
    if (const char* value = std::getenv(name.c_str()); value && !carried) remote_spec.child_env.emplace_back(name, value);
  }
  auto transport = make_ssh_transport(run.reach);
  auto session = transport->connect(*run.first_host);
  if (!session) return session.error().to_error();
  return launcher::launch_through(remote_spec, **session);
}

}  // namespace

void set_launch_site(RankRun& run, const PlannedRanks& planned, const ReachFlags& reach) {
  run.site = launcher::launch_site_for(planned.hosts);
  if (!run.site.on_first_host) return;
  run.first_host = planned.hosts.front();
  run.reach = reach;
}

int run_ranks(const launcher::RankPlan& plan, const launcher::MpirunSpec& mpirun, const RankRun& run) {
  launcher::LaunchSpec spec;
  spec.plan = plan;
  spec.mpirun = run.site.on_first_host ? launcher::mpirun_spec_on_first_host(mpirun, run.site) : mpirun;
  add_secret_names(spec.mpirun.pass_env, run);
  if (run.dry_run) {
    auto text = dry_run_text(plan, spec.mpirun, run.json, run.site);
    if (!text) {
      spdlog::error("{}: {}", run.what, text.error().message);
      return exit_error;
    }
    std::printf("%s", text->c_str());
    return exit_ok;
  }
  spec.child_env = run.secret_env;
  spec.timeout = run.timeout;
  spec.kill_grace = run.kill_grace;
  spec.pass_stdin = run.pass_stdin;
  if (run.signal_is_normal_stop) spec.interrupt_signal = SIGUSR1;
  if (run.on_output)
    spec.on_output = run.on_output;
  else if (!run.tag_every_line)
    spec.on_output = [&plan](const launcher::OutputLine& line) { print_rank_line(plan, line); };
  auto result = run.site.on_first_host ? launch_on_first_host(spec, run) : launcher::launch(spec);
  if (!result) {
    spdlog::error("{}: {}", run.what, result.error().message);
    return exit_error;
  }
  if (result->ok()) return exit_ok;
  if (run.signal_is_normal_stop && result->interrupted && !result->failure && result->exit_code == 0) {
    spdlog::info("{}: stopped; every rank exited cleanly", run.what);
    return exit_ok;
  }
  // mpirun could not start its daemon on a host: name the host, as ping would.
  if (!result->failure && !result->timed_out && !result->interrupted) {
    static const std::regex ssh_failed(R"(ssh: connect to host (\S+) port \d+: ([^\r\n]*))");  // ssh ends it with \r
    std::smatch m;
    for (const auto& line : result->mpirun_messages) {
      if (!std::regex_search(line, m, ssh_failed)) continue;
      std::string host = m[1];
      for (const auto& h : plan.hosts)
        if (h.address == host) host = h.name + " (" + h.address + ")";
      log::error(fmt::format("{}: {} is unreachable: mpirun's ssh said \"{}\"; check it with xftctl ping", run.what,
                             host, std::string(m[2])),
                 {{"host", host}});
      return exit_unreachable;
    }
  }
  // Without a named rank, mpirun's own words are the best explanation.
  if (!result->failure && !result->timed_out)
    for (const auto& line : result->mpirun_messages) log::relay("", line, {{"from", "mpirun"}});
  log::error(result->summary());
  return result->timed_out || result->failure || result->interrupted ? exit_host_failed : exit_error;
}

int run_ranks_oversubscribed(int ranks, const std::vector<std::string>& command, const RankRun& run) {
  std::string mpirun = launcher::default_mpirun("/");
  if (auto major = launcher::detect_open_mpi_major(mpirun); !major) {
    spdlog::error("{}: {}", run.what, major.error().message);
    return exit_error;
  }
  std::vector<std::string> argv{mpirun};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {"--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
                           "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
                           "-np", std::to_string(ranks)});
  for (const auto& [name, value] : run.secret_env) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), command.begin(), command.end());
  if (run.dry_run) {
    std::printf("%s\n", launcher::shell_join(argv).c_str());
    return exit_ok;
  }
  auto env = launcher::environment_with(run.secret_env);
  if (!env) {
    spdlog::error("{}: {}", run.what, env.error().message);
    return exit_error;
  }
  // Built before fork: the child only calls async-signal-safe functions until exec.
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : *env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    spdlog::error("{}: pipe: {}", run.what, std::strerror(errno));
    return exit_error;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(err_pipe[1], STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(err_pipe[1]);
  // Pass mpirun's stderr through and keep it: it names the rank that failed.
  std::vector<std::string> lines;
  std::string partial;
  char buf[8192];
  for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::fwrite(buf, 1, size_t(n), stderr);
    partial.append(buf, size_t(n));
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1))
      lines.push_back(partial.substr(0, nl));
  }
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL);  // leftovers of the group, if any
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return exit_ok;
  auto failure = launcher::find_failed_rank(lines);
  std::string what = "mpirun exited with " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  // A rank that gave up says why in a line of its own; that names the culprit best.
  for (const auto& line : lines)
    if (line.rfind("xftctl: rank ", 0) == 0) {
      what = line.substr(std::strlen("xftctl: "));
      break;
    }
  if (failure) {
    what = "rank " + std::to_string(failure->rank) + " (this host) " +
           (failure->signal ? "was killed by signal " + std::to_string(failure->signal) + " (" +
                                  strsignal(failure->signal) + ")"
                            : "exited with code " + std::to_string(failure->exit_code)) +
           "; mpirun stopped every other rank";
  }
  spdlog::error("{} failed: {}", run.what, what);
  return exit_host_failed;
}

}  // namespace xft::cli
