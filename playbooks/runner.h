// Runs a playbook on hosts, linearly: every host finishes task N before any
// starts task N+1; hosts work in parallel up to the fan-out. A host that
// fails leaves the play (unless the task ignores errors), an unreachable one
// too; `any_errors_fatal` and `max_fail_percentage` stop every host.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "inventory/inventory.h"
#include "remote/transport.h"
#include "playbooks/playbook.h"
#include "playbooks/tasks.h"

namespace xft::playbooks {

struct RunSettings {
  bool check = false;              // --check: change nothing, say what would change
  bool diff = false;               // --diff
  int fanout = 64;
  std::set<std::string> skip_tags;  // --skip
  std::string templates_dir;
  std::string playbook_dir;        // relative copy/sync sources (default: the playbook's folder)
  nlohmann::json extra_vars = nlohmann::json::object();  // over the playbook's vars
};

struct HostResult {
  std::string host;
  TaskResult result;
};

struct TaskReport {
  std::string name;
  std::string kind;  // "connect" for the connection step
  int line = 0;
  std::vector<HostResult> results;  // in inventory order; hosts no longer in the play are absent
};

struct HostRecap {
  std::string host;
  int ok = 0, changed = 0, failed = 0, unreachable = 0, skipped = 0;
};

struct PlayReport {
  std::string name;
  bool check = false;
  std::vector<TaskReport> tasks;
  std::vector<HostRecap> recap;
  std::string stopped;  // why the play stopped early ("" when it ran to the end)

  bool any_failed() const;
  bool any_unreachable() const;
};

// Told about each step as it goes (for live output and progress): the
// connection, then each task the play tries.
class PlayObserver {
 public:
  virtual ~PlayObserver() = default;
  // `tasks`: those not left out by tag; the play may stop before them all.
  virtual void play_started(size_t /*tasks*/, size_t /*hosts*/) {}
  virtual void task_started(const std::string& /*name*/, size_t /*hosts*/) {}
  // One host finished the current task; called from the fan-out's threads.
  virtual void host_done() {}
  virtual void task_done(const TaskReport& task) = 0;
};

PlayReport run_play(const Playbook& book, const std::vector<inventory::Host>& hosts, remote::Transport& transport,
                    const RunSettings& settings, PlayObserver* observer = nullptr);

// The variables a host starts with: the play's, the extra ones, then the
// host's own facts (inventory_hostname, address, user, port, home, groups,
// shared_path, host_key, ssh_names, check_mode).
nlohmann::json host_facts(const inventory::Host& host, const std::string& host_key, bool check);

// The report for machines (--json); the text one is in report_text.h.
nlohmann::json report_json(const PlayReport& report);

}  // namespace xft::playbooks
