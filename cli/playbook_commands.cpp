// xftctl playbook run FILE, and xftctl setup hosts (the shipped
// playbooks/setup_hosts.yaml with variables from the inventory and the
// control node). Output: per task, hosts with the same result on one folded
// line (report_text.h), then the recap; --json for machines; a progress line
// on stderr. Exit 0 / 2 (a host failed) / 4 (a host unreachable).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/rank_launch.h"
#include "cli/reach_options.h"
#include "inventory/load.h"
#include "remote/credentials.h"
#include "remote/ssh_keygen.h"
#include "playbooks/extra_vars.h"
#include "playbooks/report_text.h"
#include "playbooks/runner.h"
#include "common/log.h"

namespace xft::cli {
namespace {

namespace fs = std::filesystem;

struct PlayFlags {
  std::string file;
  bool check = false;
  bool diff = false;
  bool json = false;
  std::vector<std::string> skip;
  std::vector<std::string> extra_vars;  // -e NAME=VALUE
  bool root_ssh = false;                // setup hosts --root-ssh
};

// Where the shipped playbooks and templates are: $XFTCTL_DATA_DIR, beside the
// binary (the build tree links them there), or ../share/xftctl (installed).
Expected<std::string> data_dir() {
  if (const char* dir = std::getenv("XFTCTL_DATA_DIR"); dir && *dir) return std::string(dir);
  fs::path exe = fs::path(self_path()).parent_path();
  for (const auto& candidate : {exe, exe / ".." / "share" / "xftctl"})
    if (fs::exists(candidate / "playbooks" / "setup_hosts.yaml")) return fs::weakly_canonical(candidate).string();
  return make_error("cannot find the shipped playbooks beside " + exe.string() +
                    " or in ../share/xftctl (reinstall xftctl, or set XFTCTL_DATA_DIR)");
}

// "xftctl: " before each line of a (possibly multi-line) error.
// The logger prefixes every line of a multi-line message.
void print_error_lines(const std::string& message) { log::error(message); }

std::set<std::string> split_tags(const std::vector<std::string>& items) {
  std::set<std::string> tags;
  for (const auto& item : items) {
    std::stringstream words(item);
    for (std::string tag; std::getline(words, tag, ',');)
      if (!tag.empty()) tags.insert(tag);
  }
  return tags;
}

// Each task's folded lines on stdout once every host has done it, and the
// progress by hosts x tasks on stderr (cli/progress.h; stdout stays the
// report, or the one JSON document): redrawn in place on a terminal, a line
// every 5 s with -v when stderr is a file or pipe (logs), else nowhere.
class LivePrinter : public playbooks::PlayObserver {
 public:
  LivePrinter(std::string play, playbooks::TextOptions text, bool print_tasks, ProgressMode mode)
      : text_(text), print_tasks_(print_tasks),
        progress_(mode, [this](uint64_t, uint64_t, bool bar, size_t width) { return line(bar, width); }, timing()) {
    state_.play = std::move(play);
  }

  void play_started(size_t tasks, size_t hosts) override {
    progress_.update([&] {
      state_.tasks = tasks;
      state_.hosts = hosts;
    });
  }
  void task_started(const std::string& name, size_t hosts) override {
    progress_.update([&] { state_.start_task(name, hosts); }, true);
  }
  void host_done() override {
    progress_.update([&] { state_.host_done(); });
  }
  void task_done(const playbooks::TaskReport& task) override {
    if (!print_tasks_) return;
    progress_.print_above([&] {
      std::fputs(playbooks::format_task(task, text_).c_str(), stdout);
      std::fflush(stdout);
    });
  }
  // Clears the progress line; the report's recap follows on a clean line.
  void finish() { progress_.finish(); }

 private:
  static ProgressTiming timing() {
    ProgressTiming timing;
    timing.ticker = true;  // lines every 5 s while one task runs long
    return timing;
  }
  // Not on a terminal while connecting: a password prompt or a host-key
  // notice is written there then, and a redrawn line would run into it.
  std::string line(bool bar, size_t width) const {
    if (bar && state_.task == 0) return "";
    return playbooks::progress_line(state_, width);
  }

  playbooks::TextOptions text_;
  bool print_tasks_;
  playbooks::PlayProgress state_;
  Progress progress_;  // last: its ticker reads the state above
};

int run_and_report(const playbooks::Playbook& book, const std::vector<inventory::Host>& hosts,
                   const ReachFlags& reach, const PlayFlags& flags, playbooks::RunSettings settings, int verbosity, bool quiet) {
  settings.check = flags.check;
  settings.diff = flags.diff;
  settings.fanout = reach.fanout;
  settings.skip_tags = split_tags(flags.skip);
  auto transport = make_ssh_transport(reach);
  playbooks::TextOptions text{.diff = flags.diff, .per_host = verbosity > 0};
  LivePrinter printer(book.name, text, !flags.json, progress_mode(quiet, verbosity > 0));
  if (!flags.json)
    std::printf("PLAY [%s] on %zu host%s%s\n", book.name.c_str(), hosts.size(), hosts.size() == 1 ? "" : "s",
                flags.check ? " (check mode: nothing is changed)" : "");
  std::fflush(stdout);
  auto report = playbooks::run_play(book, hosts, *transport, settings, &printer);
  printer.finish();
  if (flags.json) std::printf("%s\n", playbooks::report_json(report).dump(2).c_str());
  else std::fputs(playbooks::format_recap(report, text).c_str(), stdout);
  std::fflush(stdout);
  return reach_exit_code(report.any_unreachable(), report.any_failed());
}

using playbooks::parse_extra_vars;  // -e NAME=VALUE, checked there (one line, a variable name)

void run_playbook_command(Context& ctx, const ReachFlags& reach, const PlayFlags& flags) {
  auto fail = [&](const std::string& message) {
    print_error_lines(message);
    ctx.exit_code = exit_error;
  };
  auto book = playbooks::load_playbook(flags.file);
  if (!book) return fail(book.error().message);
  auto pattern = reach.hosts.empty() ? (book->hosts == "all" ? "" : book->hosts) : reach.hosts;
  auto hosts = load_selected_hosts(ctx.inventory_flag, pattern);
  if (!hosts) return fail(hosts.error().message);
  auto extra = parse_extra_vars(flags.extra_vars);
  if (!extra) return fail(extra.error().message);
  auto dir = data_dir();
  playbooks::RunSettings settings;
  settings.templates_dir = dir ? *dir + "/templates" : "";
  settings.playbook_dir = fs::absolute(flags.file).parent_path().string();
  settings.extra_vars = *extra;
  ctx.exit_code = run_and_report(*book, *hosts, reach, flags, settings, ctx.verbosity, ctx.quiet);
}

// --- setup hosts ---------------------------------------------------------------

std::string random_id() {
  std::random_device random;
  char text[20];
  std::snprintf(text, sizeof text, "x%08x%04x", random(), random() & 0xffff);
  return text;
}

// The control node's ed25519 key pair (xftctl's own, which the transport
// offers first); created when missing, never replaced. Returns the public key
// line, or "" in check mode when there is none yet.
Expected<std::string> control_public_key(bool check) {
  std::string key = remote::xftctl_config_dir() + "/id_ed25519";
  if (!fs::exists(key)) {
    if (check) {
      spdlog::info("control node: would create {} (check mode)", key);
      return std::string();
    }
    fs::create_directories(remote::xftctl_config_dir());
    ::chmod(remote::xftctl_config_dir().c_str(), 0700);
    auto made = remote::generate_ed25519_key_pair(key, "xftctl@" + this_hostname());
    if (!made) return make_error("cannot create the control key " + key + ": " + made.error().message);
    spdlog::info("control node: created {}", key);
  }
  std::ifstream in(key + ".pub");
  std::string line;
  if (!std::getline(in, line) || line.empty())
    return make_error(key + ".pub: missing or empty (remove " + key + " to have a new pair made)");
  return line;
}

void run_setup_hosts(Context& ctx, const ReachFlags& reach, const PlayFlags& flags) {
  auto fail = [&](const std::string& message) {
    print_error_lines(message);
    ctx.exit_code = exit_error;
  };
  auto path = inventory::locate_inventory(ctx.inventory_flag);
  if (!path) return fail(path.error().message);
  auto inventory = inventory::load_inventory(*path);
  if (!inventory) return fail(inventory.error().message);
  auto hosts = load_selected_hosts(*path, reach.hosts);
  if (!hosts) return fail(hosts.error().message);
  auto dir = data_dir();
  if (!dir) return fail(dir.error().message);
  auto book = playbooks::load_playbook(*dir + "/playbooks/setup_hosts.yaml");
  if (!book) return fail(book.error().message);
  auto control_key = control_public_key(flags.check);
  if (!control_key) return fail(control_key.error().message);

  playbooks::RunSettings settings;
  settings.templates_dir = *dir + "/templates";
  settings.playbook_dir = *dir + "/playbooks";
  auto& vars = settings.extra_vars;
  vars["control_pubkey"] = *control_key;
  vars["run_id"] = random_id();
  vars["nfs_enabled"] = inventory->nfs.has_value();
  vars["root_ssh"] = flags.root_ssh;
  if (inventory->nfs) {
    const auto* server = inventory->find(inventory->nfs->server);
    if (!server) return fail(*path + ": nfs.server " + inventory->nfs->server + " is not an inventory host");
    vars["nfs_server_name"] = server->name;
    vars["nfs_server_address"] = server->address;
    vars["nfs_export_path"] = inventory->nfs->export_path.empty() ? server->shared : inventory->nfs->export_path;
    vars["nfs_options"] = inventory->nfs->options;
  }
  ctx.exit_code = run_and_report(*book, *hosts, reach, flags, settings, ctx.verbosity, ctx.quiet);
}

void add_play_flags(CLI::App& command, PlayFlags& flags) {
  command.add_flag("--check", flags.check, "change nothing; report what would change");
  command.add_flag("--diff", flags.diff, "show each changed file as a unified diff (patch applies it)");
  command.add_flag("--json", flags.json, "one JSON report at the end instead of lines");
  command.add_option("--skip", flags.skip, "leave out tasks with these tags (comma-separated, repeatable)");
}

}  // namespace

void add_playbook_commands(CLI::App& app, Context& ctx) {
  static ReachFlags reach;
  static PlayFlags flags;
  auto* playbook = app.add_subcommand("playbook", "run provisioning playbooks (YAML) on the inventory's hosts");
  playbook->require_subcommand(1);
  auto* run = playbook->add_subcommand(
      "run", "run a playbook: tasks in order, hosts in parallel (exit 2: a host failed, 4: unreachable)");
  run->add_option("file", flags.file, "playbook YAML file")->required();
  run->add_option("-e,--extra-var", flags.extra_vars, "NAME=VALUE, over the playbook's vars (repeatable)");
  add_play_flags(*run, flags);
  add_reach_flags(*run, reach);
  run->callback([&ctx] { run_playbook_command(ctx, reach, flags); });

  auto* setup = app.add_subcommand("setup", "prepare hosts for xftctl runs");
  setup->require_subcommand(1);
  auto* hosts = setup->add_subcommand(
      "hosts",
      "passwordless SSH between all hosts, known_hosts, /etc/hosts, packages, the shared path "
      "(exit 2: a host failed, 4: unreachable)");
  add_play_flags(*hosts, flags);
  hosts->add_flag("--root-ssh", flags.root_ssh,
                  "also passwordless SSH for root between the hosts, where the login user is not root (sshd's "
                  "PermitRootLogin still decides whether root may log in)");
  add_reach_flags(*hosts, reach);
  hosts->footer(
      "Tags for --skip: packages, nfs, shared. The first run logs in with the inventory's password "
      "(password_env or a prompt);\nafter it, xftctl's own key (~/.config/xftctl/id_ed25519) is authorized on "
      "every host. New host keys are trusted only with --accept-new-host-keys.");
  hosts->callback([&ctx] { run_setup_hosts(ctx, reach, flags); });
}

}  // namespace xft::cli
