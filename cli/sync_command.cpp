// xftctl sync DIR: pushes a directory (a model, binaries) to the same path on
// every host over SFTP, hosts in parallel, sending only files whose size or
// hash differ (playbooks/sync.h). For clusters without a shared file system.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/reach_options.h"
#include "inventory/grammar.h"
#include "inventory/load.h"
#include "remote/fanout.h"
#include "playbooks/report_text.h"
#include "playbooks/sync.h"
#include "common/log.h"

namespace xft::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct SyncFlags {
  std::string dir;
  std::string dest;  // empty: the same absolute path as dir
  bool check = false;
  bool delete_extra = false;
  bool json = false;
};

struct HostOutcome {
  std::string host;
  std::optional<playbooks::SyncReport> report;
  std::optional<remote::RemoteError> error;
};

std::string mebibytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// Totals across hosts on stderr (cli/progress.h): redrawn in place on a
// terminal, a line every 5 s otherwise (logs of long runs still show movement).
class SyncProgressLine {
 public:
  SyncProgressLine(size_t hosts, ProgressMode mode)
      : hosts_(hosts), progress_(mode, [this](uint64_t, uint64_t, bool, size_t) { return line(); }, timing()) {}

  void add(const playbooks::SyncProgress& step) {
    progress_.update([&] {
      if (step.planned_files || step.planned_bytes || (!step.sent_files && !step.sent_bytes)) ++hosts_planned_;
      planned_files_ += step.planned_files;
      planned_bytes_ += step.planned_bytes;
      sent_files_ += step.sent_files;
      sent_bytes_ += step.sent_bytes;
    });
  }
  void finish() { progress_.finish(); }

 private:
  static ProgressTiming timing() {
    ProgressTiming timing;
    timing.redraw = timing.show_after = std::chrono::milliseconds(200);
    timing.ticker = true;
    return timing;
  }
  std::string line() const {
    return "sync: " + mebibytes(sent_bytes_) + " of " + mebibytes(planned_bytes_) + ", " +
           std::to_string(sent_files_) + " of " + std::to_string(planned_files_) + " files, " +
           std::to_string(hosts_planned_) + " of " + std::to_string(hosts_) + " hosts compared";
  }

  size_t hosts_;
  size_t hosts_planned_ = 0, planned_files_ = 0, sent_files_ = 0;
  uint64_t planned_bytes_ = 0, sent_bytes_ = 0;
  Progress progress_;  // last: its ticker reads the counters above
};

HostOutcome sync_host(remote::Transport& transport, const inventory::Host& host, const playbooks::SyncPlan& plan,
                      const std::string& dest, const playbooks::SyncOptions& options) {
  HostOutcome outcome{host.name, std::nullopt, std::nullopt};
  auto session = transport.connect(host);
  if (!session) {
    outcome.error = session.error();
    return outcome;
  }
  auto synced = playbooks::sync_tree(**session, plan, dest, options);
  if (synced) outcome.report = std::move(*synced);
  else outcome.error = synced.error();
  return outcome;
}

std::string plural(size_t count, const char* word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

// "sent 3 files, 1200 bytes; 997 unchanged; 2 dirs created"
std::string summary_text(const playbooks::SyncReport& report, bool check) {
  std::string line = std::string(check ? "would send " : "sent ") + plural(report.files_sent, "file") + ", " +
                     std::to_string(report.bytes_sent) + " bytes; " + std::to_string(report.files_unchanged) +
                     " unchanged";
  auto extra = [&](size_t count, const char* what) {
    if (count) line += "; " + std::to_string(count) + " " + what;
  };
  extra(report.dirs_created, report.dirs_created == 1 ? "dir created" : "dirs created");
  extra(report.links_made, report.links_made == 1 ? "symlink made" : "symlinks made");
  extra(report.modes_set, report.modes_set == 1 ? "mode set" : "modes set");
  extra(report.removed, "removed");
  return line;
}

nlohmann::ordered_json change_json(const playbooks::SyncChange& change) {
  nlohmann::ordered_json j = {{"change", playbooks::change_name(change.kind)}, {"path", change.path}};
  if (change.kind == playbooks::ChangeKind::send) j["bytes"] = change.bytes;
  if (change.mode) j["mode"] = fmt::format("{:04o}", change.mode);
  if (!change.link_target.empty()) j["target"] = change.link_target;
  return j;
}

nlohmann::ordered_json outcome_json(const HostOutcome& outcome) {
  if (outcome.error)
    return {{"host", outcome.host}, {"status", remote::failure_name(outcome.error->kind)},
            {"error", outcome.error->message}};
  const auto& r = *outcome.report;
  nlohmann::ordered_json changes = nlohmann::ordered_json::array();
  for (const auto& change : r.changes) changes.push_back(change_json(change));
  return {{"host", outcome.host},      {"status", "ok"},
          {"files_sent", r.files_sent}, {"bytes_sent", r.bytes_sent},
          {"files_unchanged", r.files_unchanged}, {"dirs_created", r.dirs_created},
          {"links_made", r.links_made}, {"modes_set", r.modes_set},
          {"removed", r.removed},       {"changes", std::move(changes)}};
}

// --json: one document; the per-host lines and the summary are not printed.
void print_json(const std::string& root, const std::string& dest, bool check, double seconds,
                const std::vector<HostOutcome>& outcomes) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  size_t ok = 0, files = 0;
  uint64_t bytes = 0;
  for (const auto& outcome : outcomes) {
    hosts.push_back(outcome_json(outcome));
    if (!outcome.report) continue;
    ++ok;
    files += outcome.report->files_sent;
    bytes += outcome.report->bytes_sent;
  }
  nlohmann::ordered_json doc = {{"dir", root}, {"dest", dest}, {"check", check}, {"hosts", std::move(hosts)},
                                {"ok", ok}, {"failed", outcomes.size() - ok}, {"files_sent", files},
                                {"bytes_sent", bytes}, {"seconds", seconds}};
  std::printf("%s\n", doc.dump(2).c_str());
}

// What the report says of one host past its name: its summary (or its
// failure), and under --check or -v a line per change.
struct HostBlock {
  std::string summary;
  std::string changes;
  std::vector<std::string> hosts;
};

// Hosts whose report reads the same share one block, in the order each first appears.
std::vector<HostBlock> fold_reports(const std::vector<HostOutcome>& outcomes, bool check, bool with_changes) {
  std::vector<HostBlock> blocks;
  for (const auto& outcome : outcomes) {
    HostBlock key;
    if (outcome.error) {
      key.summary = remote::failure_name(outcome.error->kind);
    } else {
      key.summary = summary_text(*outcome.report, check);
      if (with_changes)
        for (const auto& change : outcome.report->changes) key.changes += "  " + playbooks::describe_change(change) + "\n";
    }
    auto same = std::find_if(blocks.begin(), blocks.end(), [&](const HostBlock& block) {
      return block.summary == key.summary && block.changes == key.changes;
    });
    if (same == blocks.end()) same = blocks.insert(blocks.end(), std::move(key));
    same->hosts.push_back(outcome.host);
  }
  return blocks;
}

// "h[01-64]: sent 3 files, 1200 bytes; 997 unchanged"; a host set too wide
// for the line continues on lines of its own, each ending with ','.
void print_folded(const std::vector<HostOutcome>& outcomes, bool check, bool with_changes) {
  constexpr size_t kLeast = 24;  // room for a few ranges even beside a long summary
  for (const auto& block : fold_reports(outcomes, check, with_changes)) {
    size_t room = std::max(kLeast, playbooks::kReportWidth - std::min(playbooks::kReportWidth, block.summary.size() + 2));
    auto lines = playbooks::fold_lines(block.hosts, room);
    for (size_t i = 0; i + 1 < lines.size(); ++i) std::printf("%s\n", lines[i].c_str());
    std::printf("%s: %s\n%s", lines.back().c_str(), block.summary.c_str(), block.changes.c_str());
  }
}

// One stderr line per failure, hosts failing the same way folded.
void report_errors(const std::vector<HostOutcome>& outcomes, bool& any_unreachable, bool& any_failed) {
  std::vector<playbooks::HostMessage> errors;
  for (const auto& outcome : outcomes) {
    if (!outcome.error) continue;
    (outcome.error->kind == remote::Failure::unreachable ? any_unreachable : any_failed) = true;
    errors.push_back({outcome.host, outcome.error->message});
  }
  for (const auto& folded : playbooks::fold_messages(errors))
    log::error(folded.line, {{"host", inventory::fold_names(folded.hosts)}});
}

// The folded hosts, then the totals.
void print_report(const std::string& root, const std::string& dest, bool check, bool verbose, double seconds,
                  const std::vector<HostOutcome>& outcomes) {
  print_folded(outcomes, check, check || verbose);
  size_t ok = 0, files = 0;
  uint64_t bytes = 0;
  for (const auto& outcome : outcomes) {
    if (!outcome.report) continue;
    ++ok;
    files += outcome.report->files_sent;
    bytes += outcome.report->bytes_sent;
  }
  std::printf("%s -> %s on %s: %zu ok, %zu failed; %s %s, %llu bytes (%s) in %.1f s\n", root.c_str(), dest.c_str(),
              plural(outcomes.size(), "host").c_str(), ok, outcomes.size() - ok, check ? "would send" : "sent",
              plural(files, "file").c_str(), static_cast<unsigned long long>(bytes), mebibytes(bytes).c_str(),
              seconds);
}

std::string default_dest(const std::string& dir) {
  std::string path = std::filesystem::absolute(dir).lexically_normal().generic_string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void run_sync(Context& ctx, const ReachFlags& reach, const SyncFlags& flags) {
  auto fail = [&](const std::string& message) {
    log::error(message);
    ctx.exit_code = exit_error;
  };
  auto hosts = load_selected_hosts(ctx.inventory_flag, reach.hosts);
  if (!hosts) return fail(hosts.error().message);
  auto plan = playbooks::SyncPlan::scan(flags.dir);
  if (!plan) return fail(plan.error().message);
  std::string dest = flags.dest.empty() ? default_dest(flags.dir) : flags.dest;
  if (dest.empty() || dest[0] != '/')
    return fail("--dest " + inventory::printable(dest) + ": give an absolute path on the hosts");
  // Also the default: DIR's absolute path reaches the hosts just the same.
  if (auto problem = inventory::check_absolute_path(dest)) return fail("--dest: " + *problem);
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();

  auto started = Clock::now();
  SyncProgressLine progress(hosts->size(), flags.check ? ProgressMode::none : progress_mode(ctx.quiet));
  playbooks::SyncOptions options;
  options.check_only = flags.check;
  options.delete_extra = flags.delete_extra;
  options.progress = [&](const playbooks::SyncProgress& step) { progress.add(step); };
  auto transport = make_ssh_transport(reach);
  auto outcomes = remote::fan_out(*hosts, reach.fanout, [&](const inventory::Host& host) {
    return sync_host(*transport, host, *plan, dest, options);
  });
  progress.finish();
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();

  if (flags.json) print_json(plan->root(), dest, flags.check, seconds, outcomes);
  else print_report(plan->root(), dest, flags.check, ctx.verbosity > 0, seconds, outcomes);
  std::fflush(stdout);
  bool any_unreachable = false, any_failed = false;
  report_errors(outcomes, any_unreachable, any_failed);
  ctx.exit_code = reach_exit_code(any_unreachable, any_failed);
}

}  // namespace

void add_sync_commands(CLI::App& app, Context& ctx) {
  auto* sync = app.add_subcommand(
      "sync", "push a directory to the same path on every host over SFTP, only files whose size or hash "
              "differ (exit 2: a host failed, 4: unreachable)");
  static ReachFlags reach;
  static SyncFlags flags;
  sync->add_option("dir", flags.dir, "local directory to push")->required()->check(CLI::ExistingDirectory);
  sync->add_option("--dest", flags.dest, "absolute path on the hosts (default: DIR's absolute path)");
  sync->add_flag("--check", flags.check, "change nothing; list what would be sent, created, set or removed");
  sync->add_flag("--delete", flags.delete_extra, "remove files on the hosts that DIR does not have");
  sync->add_flag("--json", flags.json, "one JSON document: per host status, counts and changes, then totals");
  add_reach_flags(*sync, reach);
  sync->footer(
      "Files are written to a temp file and renamed, modes kept; symlinks are recreated as symlinks "
      "(never followed).\nExample: xftctl sync /opt/models/qwen --hosts 'node[01-08]'");
  sync->callback([&ctx] { run_sync(ctx, reach, flags); });
}

}  // namespace xft::cli
