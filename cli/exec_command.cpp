// xftctl exec -- CMD: run one command on every host at once. By default the
// outputs are folded like `clush -b`: hosts with identical output and exit
// status share one block under `---- h[01-64] (exit 0) ----`. A block is the
// host's stdout followed by its stderr (no pty, so the two streams arrive
// separately); many one-line blocks are packed in columns instead. --stream
// prints `host: line` as lines arrive; --json one document. While hosts still
// run, a progress line goes to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/reach_options.h"
#include "common/log.h"
#include "inventory/load.h"
#include "remote/fanout.h"
#include "playbooks/report_text.h"

namespace xft::cli {
namespace {

// Long enough for a package install, short enough that a hung host does not
// hold the whole run forever; --timeout 0 waits without limit.
constexpr int kDefaultExecTimeoutS = 600;

struct ExecFlags {
  bool stream = false;
  bool json = false;
  std::vector<std::string> words;
};

struct ExecOutcome {
  std::string host;
  std::optional<remote::CommandResult> result;
  std::optional<remote::RemoteError> error;
};

// Hosts not yet finished, on stderr (cli/progress.h): redrawn in place on a
// terminal (every 200 ms, none before), a log line every 5 s otherwise, so a
// fast run prints nothing and a slow one says which hosts it waits for.
class RunningHosts {
 public:
  RunningHosts(const std::vector<inventory::Host>& hosts, ProgressMode mode)
      : names_(names_of(hosts)), running_(hosts.size(), true),
        progress_(mode, [this](uint64_t, uint64_t, bool, size_t width) { return line(width); }, timing()) {}

  void done(size_t index) {
    progress_.update([&] { running_[index] = false; });
  }
  // Takes the line off the terminal before other output goes there.
  template <class Print>
  void print_above(Print&& print) {
    progress_.print_above(std::forward<Print>(print));
  }
  void finish() { progress_.finish(); }

 private:
  static std::vector<std::string> names_of(const std::vector<inventory::Host>& hosts) {
    std::vector<std::string> names;
    for (const auto& host : hosts) names.push_back(host.name);
    return names;
  }
  static ProgressTiming timing() {
    ProgressTiming timing;
    timing.redraw = timing.show_after = std::chrono::milliseconds(200);
    timing.ticker = true;
    return timing;
  }
  // Called under the progress's lock, as done() changes running_.
  std::string line(size_t width) const {
    std::vector<std::string> left;
    for (size_t i = 0; i < names_.size(); ++i)
      if (running_[i]) left.push_back(names_[i]);
    if (left.empty()) return "";  // all done: the report follows at once
    std::string text = std::to_string(left.size()) + " of " + std::to_string(names_.size()) +
                       " hosts still running: " + inventory::fold_names(left);
    if (text.size() > width) text = text.substr(0, width - 3) + "...";
    return text;
  }

  std::vector<std::string> names_;
  std::vector<bool> running_;
  Progress progress_;  // last: its ticker reads the members above
};

// --stream: whole lines as `host: line`, stdout's on stdout and stderr's on
// stderr; a last line without a newline is printed when the host is done.
class LineStreamer {
 public:
  explicit LineStreamer(RunningHosts& progress) : progress_(progress) {}

  void add(const std::string& host, bool is_stderr, std::string_view chunk) {
    std::string& partial = partial_for(host, is_stderr);
    partial.append(chunk);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1))
      print(host, is_stderr, partial.substr(0, nl));
  }
  void host_done(const std::string& host) {
    for (bool is_stderr : {false, true}) {
      std::string& partial = partial_for(host, is_stderr);
      if (!partial.empty()) print(host, is_stderr, partial);
      partial.clear();
    }
  }

 private:
  std::string& partial_for(const std::string& host, bool is_stderr) {
    std::lock_guard lock(mutex_);
    return partial_[{host, is_stderr}];
  }
  void print(const std::string& host, bool is_stderr, const std::string& text) {
    progress_.print_above([&] {
      FILE* to = is_stderr ? stderr : stdout;
      std::fprintf(to, "%s: %s\n", host.c_str(), text.c_str());
      std::fflush(to);
    });
  }

  RunningHosts& progress_;
  std::mutex mutex_;
  std::map<std::pair<std::string, bool>, std::string> partial_;  // nodes stay put: references are safe
};

ExecOutcome exec_on_host(remote::Transport& transport, const inventory::Host& host, const std::string& command,
                         LineStreamer* streamer) {
  ExecOutcome outcome{host.name, std::nullopt, std::nullopt};
  auto session = transport.connect(host);
  if (!session) {
    outcome.error = session.error();
    return outcome;
  }
  remote::RunOptions options;
  if (streamer)
    options.on_output = [&](bool is_stderr, std::string_view chunk) { streamer->add(host.name, is_stderr, chunk); };
  auto ran = (*session)->run(command, options);
  if (streamer) streamer->host_done(host.name);
  if (ran) outcome.result = std::move(*ran);
  else outcome.error = ran.error();
  return outcome;
}

struct OutputGroup {
  std::string output;
  int exit_status = 0;
  std::vector<std::string> hosts;
};

// Hosts grouped by identical output (stdout, then stderr) and exit status,
// groups in the order of their first host; hosts that printed nothing and
// exited 0 are left out, as clush does.
std::vector<OutputGroup> fold_outputs(const std::vector<ExecOutcome>& outcomes) {
  std::vector<OutputGroup> groups;
  for (const auto& outcome : outcomes) {
    if (!outcome.result) continue;
    std::string output = outcome.result->out + outcome.result->err;
    int status = outcome.result->exit_status;
    if (output.empty() && status == 0) continue;
    auto found = std::find_if(groups.begin(), groups.end(),
                              [&](const OutputGroup& g) { return g.output == output && g.exit_status == status; });
    if (found == groups.end()) groups.push_back({output, status, {outcome.host}});
    else found->hosts.push_back(outcome.host);
  }
  return groups;
}

// `---- h[01-64] (exit 0) ----`; a host set too wide for one line continues
// on lines of its own, each ending with ',' (report_text.h's fold_lines).
void print_group(const OutputGroup& group) {
  const std::string head = "---- ", tail = " (exit " + std::to_string(group.exit_status) + ") ----";
  auto lines = playbooks::fold_lines(group.hosts, playbooks::kReportWidth - head.size() - tail.size());
  for (size_t i = 0; i < lines.size(); ++i)
    std::printf("%s%s%s\n", i == 0 ? head.c_str() : "     ", lines[i].c_str(), i + 1 == lines.size() ? tail.c_str() : "");
  std::fputs(group.output.c_str(), stdout);
  if (!group.output.empty() && group.output.back() != '\n') std::fputs("\n", stdout);
}

// Past this many blocks of one line each (64 hostnames), `host: line`
// entries packed in columns, row by row, keep the report within a screen.
constexpr size_t kPackedAbove = 30;

bool one_line(const std::string& output) {
  auto nl = output.find('\n');
  return !output.empty() && (nl == std::string::npos || nl + 1 == output.size());
}

void print_packed(const std::vector<OutputGroup>& groups) {
  std::vector<std::string> entries;
  size_t widest = 0;
  for (const auto& group : groups) {
    std::string text = group.output.substr(0, group.output.find('\n'));
    std::string status = group.exit_status ? " (exit " + std::to_string(group.exit_status) + ")" : "";
    entries.push_back(inventory::fold_names(group.hosts) + status + ": " + text);
    widest = std::max(widest, entries.back().size());
  }
  size_t columns = std::max<size_t>(1, (playbooks::kReportWidth + 2) / (widest + 2));
  for (size_t i = 0; i < entries.size(); ++i) {
    bool last = (i + 1) % columns == 0 || i + 1 == entries.size();
    std::string cell = last ? entries[i] : entries[i] + std::string(widest + 2 - entries[i].size(), ' ');
    std::printf("%s%s", cell.c_str(), last ? "\n" : "");
  }
}

void print_folded(const std::vector<OutputGroup>& groups) {
  bool pack = groups.size() > kPackedAbove &&
              std::all_of(groups.begin(), groups.end(), [](const OutputGroup& g) { return one_line(g.output); });
  if (pack) return print_packed(groups);
  for (const auto& group : groups) print_group(group);
}

std::string status_word(const ExecOutcome& outcome) {
  if (outcome.error) return remote::failure_name(outcome.error->kind);
  return outcome.result->exit_status == 0 ? "ok" : "failed";
}

nlohmann::ordered_json outcomes_json(const std::string& command, const std::vector<ExecOutcome>& outcomes) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const auto& outcome : outcomes) {
    nlohmann::ordered_json host = {{"host", outcome.host}, {"status", status_word(outcome)}};
    host["exit_status"] = outcome.result ? nlohmann::ordered_json(outcome.result->exit_status) : nullptr;
    host["stdout"] = outcome.result ? outcome.result->out : "";
    host["stderr"] = outcome.result ? outcome.result->err : "";
    host["error"] = outcome.error ? nlohmann::ordered_json(outcome.error->message) : nullptr;
    hosts.push_back(std::move(host));
  }
  return {{"command", command}, {"hosts", std::move(hosts)}};
}

// One stderr line per failure: hosts with the same exit status, or the same
// error (unreachable, timed out), folded into one line.
void report_failures(const std::vector<ExecOutcome>& outcomes, bool& any_unreachable, bool& any_failed) {
  std::vector<std::pair<int, std::vector<std::string>>> by_status;
  std::vector<playbooks::HostMessage> errors;
  for (const auto& outcome : outcomes) {
    if (outcome.error) {
      errors.push_back({outcome.host, outcome.error->message});
      (outcome.error->kind == remote::Failure::unreachable ? any_unreachable : any_failed) = true;
      continue;
    }
    int status = outcome.result->exit_status;
    if (status == 0) continue;
    any_failed = true;
    auto found = std::find_if(by_status.begin(), by_status.end(), [&](auto& s) { return s.first == status; });
    if (found == by_status.end()) by_status.push_back({status, {outcome.host}});
    else found->second.push_back(outcome.host);
  }
  for (const auto& folded : playbooks::fold_messages(errors))
    log::error(folded.line, {{"host", inventory::fold_names(folded.hosts)}});
  for (const auto& [status, hosts] : by_status) {
    std::string names = inventory::fold_names(hosts);
    log::error(fmt::format("{}: exited with {}", names, status), {{"host", names}, {"exit_status", status}});
  }
}

std::string join_words(const std::vector<std::string>& words) {
  std::string command;
  for (const auto& word : words) command += (command.empty() ? "" : " ") + word;
  return command;
}

void run_exec(Context& ctx, const ReachFlags& reach, const ExecFlags& flags) {
  auto hosts = load_selected_hosts(ctx.inventory_flag, reach.hosts);
  if (!hosts) {
    log::error(hosts.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  std::string command = join_words(flags.words);
  auto transport = make_ssh_transport(reach);
  // In --stream mode the lines themselves show that the run moves.
  RunningHosts progress(*hosts, flags.stream ? ProgressMode::none : progress_mode(ctx.quiet));
  std::optional<LineStreamer> streamer;
  if (flags.stream) streamer.emplace(progress);
  std::vector<std::optional<ExecOutcome>> slots(hosts->size());
  remote::run_bounded(hosts->size(), reach.fanout, [&](size_t i) {
    slots[i] = exec_on_host(*transport, (*hosts)[i], command, streamer ? &*streamer : nullptr);
    progress.done(i);
  });
  progress.finish();
  std::vector<ExecOutcome> outcomes;
  for (auto& slot : slots) outcomes.push_back(std::move(*slot));

  if (flags.json) std::printf("%s\n", outcomes_json(command, outcomes).dump(2).c_str());
  else if (!flags.stream)
    print_folded(fold_outputs(outcomes));
  std::fflush(stdout);
  bool any_unreachable = false, any_failed = false;
  report_failures(outcomes, any_unreachable, any_failed);
  ctx.exit_code = reach_exit_code(any_unreachable, any_failed);
}

}  // namespace

void add_exec_commands(CLI::App& app, Context& ctx) {
  auto* exec = app.add_subcommand(
      "exec", "run a command on every host in parallel, identical outputs folded (exit 2: a command failed, 4: unreachable)");
  static ReachFlags reach;
  static ExecFlags flags;
  reach.timeout_s = kDefaultExecTimeoutS;
  add_reach_flags(*exec, reach);
  auto* stream = exec->add_flag("--stream", flags.stream, "print each line as `host: line` as it arrives, unfolded");
  exec->add_flag("--json", flags.json, "one JSON document: per host status, exit status, stdout, stderr, error")
      ->excludes(stream);
  exec->add_option("command", flags.words, "the command and its arguments; put -- before it")->required();
  exec->footer("Example: xftctl exec --hosts 'h[01-02]' -- uname -r");
  exec->callback([&ctx] { run_exec(ctx, reach, flags); });
}

}  // namespace xft::cli
