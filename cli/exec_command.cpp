// xftctl exec -- CMD: run one command on every host at once and print the
// outputs folded like `clush -b`: hosts with identical output share one block.
// A block is the host's stdout followed by its stderr (no pty, so the two
// streams arrive separately); exit codes and failures go to stderr after it.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/command.h"
#include "cli/reach_options.h"
#include "inventory/load.h"
#include "launcher/fanout.h"
#include "common/log.h"

namespace xft::cli {
namespace {

struct ExecOutcome {
  std::string host;
  std::optional<launcher::CommandResult> result;
  std::optional<launcher::RemoteError> error;
};

ExecOutcome exec_on_host(launcher::Transport& transport, const inventory::Host& host,
                         const std::string& command) {
  ExecOutcome outcome{host.name, std::nullopt, std::nullopt};
  auto session = transport.connect(host);
  if (!session) {
    outcome.error = session.error();
    return outcome;
  }
  auto ran = (*session)->run(command);
  if (ran) outcome.result = std::move(*ran);
  else outcome.error = ran.error();
  return outcome;
}

// Hosts grouped by identical output (stdout, then stderr), groups in the
// order of their first host; hosts with no output are left out, as clush does.
std::vector<std::pair<std::string, std::vector<std::string>>> fold_outputs(
    const std::vector<ExecOutcome>& outcomes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& outcome : outcomes) {
    if (!outcome.result) continue;
    std::string output = outcome.result->out + outcome.result->err;
    if (output.empty()) continue;
    auto found = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == output; });
    if (found == groups.end()) groups.push_back({output, {outcome.host}});
    else found->second.push_back(outcome.host);
  }
  return groups;
}

void print_group(const std::string& output, const std::vector<std::string>& hosts) {
  const char* rule = "---------------";
  std::printf("%s\n%s (%zu)\n%s\n%s", rule, inventory::fold_names(hosts).c_str(), hosts.size(), rule,
              output.c_str());
  if (output.back() != '\n') std::printf("\n");
}

std::string join_words(const std::vector<std::string>& words) {
  std::string command;
  for (const auto& word : words) command += (command.empty() ? "" : " ") + word;
  return command;
}

void run_exec(Context& ctx, const ReachFlags& flags, const std::vector<std::string>& words) {
  auto hosts = load_selected_hosts(ctx.inventory_flag, flags.hosts);
  if (!hosts) {
    log::error(hosts.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  std::string command = join_words(words);
  auto transport = make_ssh_transport(flags);
  auto outcomes = launcher::fan_out(*hosts, flags.fanout, [&](const inventory::Host& host) {
    return exec_on_host(*transport, host, command);
  });

  for (const auto& [output, group] : fold_outputs(outcomes)) print_group(output, group);
  std::fflush(stdout);
  bool any_unreachable = false, any_failed = false;
  for (const auto& outcome : outcomes) {
    if (outcome.error) {
      log::error(outcome.error->message, {{"host", outcome.host}});
      (outcome.error->kind == launcher::Failure::unreachable ? any_unreachable : any_failed) = true;
    } else if (outcome.result->exit_status != 0) {
      log::error(fmt::format("{}: exited with {}", outcome.host, outcome.result->exit_status),
                 {{"host", outcome.host}, {"exit_status", outcome.result->exit_status}});
      any_failed = true;
    }
  }
  ctx.exit_code = reach_exit_code(any_unreachable, any_failed);
}

}  // namespace

void add_exec_commands(CLI::App& app, Context& ctx) {
  auto* exec = app.add_subcommand(
      "exec", "run a command on every host in parallel, identical outputs folded (exit 2: a command failed, 4: unreachable)");
  static ReachFlags flags;
  static std::vector<std::string> words;
  add_reach_flags(*exec, flags);
  exec->add_option("command", words, "the command and its arguments; put -- before it")->required();
  exec->footer("Example: xftctl exec --hosts 'h[01-02]' -- uname -r");
  exec->callback([&ctx] { run_exec(ctx, flags, words); });
}

}  // namespace xft::cli
