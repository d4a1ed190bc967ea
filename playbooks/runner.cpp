#include "playbooks/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "playbooks/become_session.h"
#include "remote/fanout.h"
#include "playbooks/expression.h"
#include "playbooks/render.h"

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;

enum class HostState { active, failed, unreachable };

struct HostSlot {
  inventory::Host host;
  std::unique_ptr<remote::RemoteSession> session;
  std::unique_ptr<BecomeSession> root;  // over `session`, made by the first become: task
  HostState state = HostState::active;
  Json facts;                          // host_facts + play vars
  Json registered = Json::object();    // register: results
  HostRecap recap;
};

void count(HostRecap& recap, TaskStatus status) {
  switch (status) {
    case TaskStatus::ok: ++recap.ok; break;
    case TaskStatus::changed: ++recap.changed; break;
    case TaskStatus::failed: ++recap.failed; break;
    case TaskStatus::unreachable: ++recap.unreachable; break;
    case TaskStatus::skipped: ++recap.skipped; break;
  }
}

// What a host's templates and conditions see: its facts, its registered
// results, and `hosts`: every host of the play with its address, host key and
// registered results (hostvars).
Json host_scope(const HostSlot& slot, const std::vector<HostSlot>& slots) {
  Json scope = slot.facts;
  for (const auto& [name, value] : slot.registered.items()) scope[name] = value;
  Json all = Json::array();
  for (const auto& other : slots) {
    Json entry = other.registered;
    entry["name"] = other.host.name;
    entry["address"] = other.host.address;
    entry["host_key"] = other.facts["host_key"];
    entry["ssh_names"] = other.facts["ssh_names"];
    entry["reachable"] = other.state != HostState::unreachable;
    entry["slots"] = other.facts["slots"];
    all.push_back(std::move(entry));
  }
  scope["hosts"] = std::move(all);
  return scope;
}

bool skipped_by_tag(const Task& task, const RunSettings& settings) {
  for (const auto& tag : task.tags)
    if (settings.skip_tags.count(tag)) return true;
  return false;
}

TaskResult skipped(std::string why) {
  TaskResult result;
  result.status = TaskStatus::skipped;
  result.msg = std::move(why);
  result.data = {{"changed", false}, {"skipped", true}};
  return result;
}

// A condition over the host's scope plus the result's fields (rc, stdout, ...)
// and, when registered, the result under its name.
Expected<bool> condition(const std::string& text, const Json& scope, const Task& task, const TaskResult& result) {
  Json local = scope;
  for (const auto& [key, value] : result.data.items()) local[key] = value;
  if (!task.register_as.empty()) local[task.register_as] = result.data;
  return evaluate_condition(text, local);
}

// changed_when / failed_when decide the status when given; otherwise the kind did.
TaskResult settle(const Task& task, TaskResult result, const Json& scope) {
  if (result.status == TaskStatus::unreachable || result.status == TaskStatus::skipped) return result;
  bool is_failed = result.status == TaskStatus::failed;
  bool is_changed = result.status == TaskStatus::changed || result.data.value("changed", false);
  if (!task.failed_when.empty()) {
    auto holds = condition(task.failed_when, scope, task, result);
    if (!holds) return (result.msg = "failed_when " + holds.error().message, result.status = TaskStatus::failed, result);
    if (*holds && !task.fail_msg.empty()) {
      auto msg = render_text(task.fail_msg, scope, Escape::raw, "fail_msg");
      result.msg = msg ? *msg : task.fail_msg;
    }
    is_failed = *holds;
  }
  if (!task.changed_when.empty()) {
    auto holds = condition(task.changed_when, scope, task, result);
    if (!holds) return (result.msg = "changed_when " + holds.error().message, result.status = TaskStatus::failed, result);
    is_changed = *holds;
  }
  result.status = is_failed ? TaskStatus::failed : is_changed ? TaskStatus::changed : TaskStatus::ok;
  result.data["changed"] = is_changed;
  result.data["failed"] = is_failed;
  return result;
}

// The session a task runs in: root's through sudo for a become: task on a
// host with become: sudo (made once per host), the login user's otherwise.
Expected<remote::RemoteSession*> session_for(const Task& task, HostSlot& slot) {
  if (!task.become || slot.host.become != inventory::Become::sudo) return slot.session.get();
  if (!slot.root) {
    auto password = become_password(slot.host);
    if (!password) return password.error();
    slot.root = std::make_unique<BecomeSession>(*slot.session, std::move(*password));
  }
  return slot.root.get();
}

// A root step that failed as a non-root login without become says what it needed.
void say_root_is_needed(const Task& task, const HostSlot& slot, TaskResult& result) {
  if (!task.become || result.status != TaskStatus::failed || slot.host.become != inventory::Become::none ||
      slot.host.user == "root")
    return;
  result.msg += " (this step needs root and " + slot.host.name + " logs in as " + slot.host.user +
                ": set become: sudo for it in the inventory, or log in as root)";
}

TaskResult run_on_host(const Task& task, HostSlot& slot, const Json& scope, const RunSettings& settings) {
  if (!task.when.empty()) {
    auto holds = evaluate_condition(task.when, scope);
    if (!holds) {
      TaskResult result;
      result.status = TaskStatus::failed;
      result.msg = "when " + holds.error().message;
      return result;
    }
    if (!*holds) return skipped("when: " + task.when);
  }
  auto args = render_task_args(task, scope);
  if (!args) {
    TaskResult result;
    result.status = TaskStatus::failed;
    result.msg = args.error().message;
    return result;
  }
  auto session = session_for(task, slot);
  if (!session) {
    TaskResult result;
    result.status = TaskStatus::failed;
    result.msg = session.error().message;
    return result;
  }
  TaskEnv env{**session, false, false, {}, {}, nullptr};
  env.check = settings.check && task.check_mode;
  env.diff = settings.diff && !task.no_log;
  env.templates_dir = settings.templates_dir;
  env.playbook_dir = settings.playbook_dir;
  env.vars = &scope;
  TaskResult result;
  for (int attempt = 0;; ++attempt) {
    result = settle(task, run_task_kind(task.kind, *args, env), scope);
    if (result.status == TaskStatus::unreachable) break;
    bool done = true;
    if (!task.until.empty()) {
      auto holds = condition(task.until, scope, task, result);
      done = holds && *holds;
      if (!holds) result.msg = "until " + holds.error().message;
    }
    if (done) break;
    if (attempt >= task.retries) {
      if (!task.until.empty()) {
        result.status = TaskStatus::failed;
        if (result.msg.empty()) result.msg = "until '" + task.until + "' never held";
        result.msg += " (after " + std::to_string(attempt + 1) + " attempts)";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(task.delay_s));
  }
  say_root_is_needed(task, slot, result);
  result.data["attempts"] = 1;
  if (task.no_log) {
    result.diff.clear();
    if (result.status != TaskStatus::failed) result.msg.clear();
  }
  return result;
}

void connect_all(std::vector<HostSlot>& slots, remote::Transport& transport, const RunSettings& settings,
                 PlayReport& report, PlayObserver* observer) {
  TaskReport connect{"connect", "connect", 0, {}};
  if (observer) observer->task_started("connect", slots.size());
  auto sessions = remote::fan_out(slots, settings.fanout, [&](const HostSlot& slot) {
    auto session = transport.connect(slot.host);
    if (observer) observer->host_done();
    return session;
  });
  for (size_t i = 0; i < slots.size(); ++i) {
    auto& slot = slots[i];
    TaskResult result;
    if (sessions[i]) {
      slot.session = std::move(*sessions[i]);
      // The session's host: what ~/.ssh/config filled in (address, user) is
      // what the host's facts ({{home}}, /etc/hosts, known_hosts) must say.
      slot.host = slot.session->host();
      slot.facts.update(host_facts(slot.host, slot.session->host_key(), settings.check));
      result.msg = slot.session->host_key().substr(0, slot.session->host_key().find(' '));
    } else {
      const auto& error = sessions[i].error();
      result.status = error.kind == remote::Failure::unreachable || error.kind == remote::Failure::timeout
                          ? TaskStatus::unreachable
                          : TaskStatus::failed;
      result.msg = error.message;
      slot.state = result.status == TaskStatus::unreachable ? HostState::unreachable : HostState::failed;
      count(slot.recap, result.status);
    }
    connect.results.push_back({slot.host.name, std::move(result)});
  }
  if (observer) observer->task_done(connect);
  report.tasks.push_back(std::move(connect));
}

std::string stop_reason(const Playbook& book, const std::vector<HostSlot>& slots, bool task_failed) {
  if (book.any_errors_fatal && task_failed) return "a host failed and the play has any_errors_fatal";
  size_t out = 0;
  for (const auto& slot : slots) out += slot.state != HostState::active;
  if (!slots.empty() && out * 100 > static_cast<size_t>(book.max_fail_percentage) * slots.size())
    return std::to_string(out) + " of " + std::to_string(slots.size()) + " hosts failed, more than max_fail_percentage " +
           std::to_string(book.max_fail_percentage);
  size_t active = slots.size() - out;
  if (active == 0) return "no host is left in the play";
  return "";
}

}  // namespace

bool PlayReport::any_failed() const {
  for (const auto& host : recap)
    if (host.failed) return true;
  return false;
}

bool PlayReport::any_unreachable() const {
  for (const auto& host : recap)
    if (host.unreachable) return true;
  return false;
}

Json host_facts(const inventory::Host& host, const std::string& host_key, bool check) {
  Json facts;
  facts["inventory_hostname"] = host.name;
  facts["address"] = host.address;
  facts["user"] = host.user;
  facts["port"] = host.port;
  facts["home"] = host.user == "root" ? std::string("/root") : "/home/" + host.user;
  facts["groups"] = host.groups;
  // Empty text is false, so that templates' {{#shared_path}} sections skip it.
  facts["shared_path"] = host.shared.empty() ? Json(false) : Json(host.shared);
  facts["check_mode"] = check;
  facts["fi_provider"] = host.fabric.provider;
  facts["fi_iface"] = host.fabric.iface.empty() ? Json(false) : Json(host.fabric.iface);
  facts["slots"] = host.ranks.kind == inventory::RanksKind::count ? Json(host.ranks.count) : Json(false);
  facts["host_key"] = host_key.empty() ? Json(false) : Json(host_key);
  // known_hosts spells a non-standard port as [name]:port.
  auto name_for = [&](const std::string& name) {
    return host.port == 22 ? name : "[" + name + "]:" + std::to_string(host.port);
  };
  facts["ssh_names"] = host.address == host.name ? name_for(host.name)
                                                 : name_for(host.name) + "," + name_for(host.address);
  return facts;
}

PlayReport run_play(const Playbook& book, const std::vector<inventory::Host>& hosts, remote::Transport& transport,
                    const RunSettings& settings, PlayObserver* observer) {
  PlayReport report;
  report.name = book.name;
  report.check = settings.check;
  std::vector<HostSlot> slots(hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    slots[i].host = hosts[i];
    slots[i].recap.host = hosts[i].name;
    slots[i].facts = book.vars;
    slots[i].facts.update(settings.extra_vars);
    slots[i].facts.update(host_facts(hosts[i], "", settings.check));
  }
  if (observer) {
    size_t tasks = std::count_if(book.tasks.begin(), book.tasks.end(),
                                 [&](const Task& task) { return !skipped_by_tag(task, settings); });
    observer->play_started(tasks, slots.size());
  }
  connect_all(slots, transport, settings, report, observer);
  report.stopped = stop_reason(book, slots, false);

  for (const auto& task : book.tasks) {
    if (!report.stopped.empty()) break;
    if (skipped_by_tag(task, settings)) continue;
    std::vector<size_t> targets;
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].state == HostState::active) targets.push_back(i);
    if (targets.empty()) break;
    if (task.run_once) targets.resize(1);
    std::vector<Json> scopes;
    for (size_t i : targets) scopes.push_back(host_scope(slots[i], slots));
    std::vector<size_t> order(targets.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    if (observer) observer->task_started(task.name, targets.size());
    auto results = remote::fan_out(order, settings.fanout, [&](size_t k) {
      auto result = run_on_host(task, slots[targets[k]], scopes[k], settings);
      if (observer) observer->host_done();
      return result;
    });

    TaskReport done{task.name, kind_name(task.kind), task.line, {}};
    bool task_failed = false;
    for (size_t k = 0; k < targets.size(); ++k) {
      auto& slot = slots[targets[k]];
      auto& result = results[k];
      count(slot.recap, result.status);
      if (result.status == TaskStatus::unreachable) slot.state = HostState::unreachable;
      if (result.status == TaskStatus::failed && !task.ignore_errors) {
        slot.state = HostState::failed;
        task_failed = true;
      }
      done.results.push_back({slot.host.name, result});
    }
    if (!task.register_as.empty()) {
      // run_once: every host of the play sees the one result, as Ansible does.
      for (size_t i = 0; i < slots.size(); ++i) {
        if (task.run_once) slots[i].registered[task.register_as] = results.front().data;
      }
      if (!task.run_once)
        for (size_t k = 0; k < targets.size(); ++k) slots[targets[k]].registered[task.register_as] = results[k].data;
    }
    if (observer) observer->task_done(done);
    report.tasks.push_back(std::move(done));
    report.stopped = stop_reason(book, slots, task_failed);
    if (report.stopped == "no host is left in the play" && &task == &book.tasks.back()) report.stopped.clear();
  }
  for (const auto& slot : slots) report.recap.push_back(slot.recap);
  return report;
}

Json report_json(const PlayReport& report) {
  Json out;
  out["play"] = report.name;
  out["check"] = report.check;
  out["tasks"] = Json::array();
  for (const auto& task : report.tasks) {
    Json entry{{"name", task.name}, {"kind", task.kind}, {"line", task.line}, {"results", Json::array()}};
    for (const auto& [host, result] : task.results) {
      Json item{{"host", host}, {"status", status_name(result.status)}, {"msg", result.msg}};
      if (!result.diff.empty()) item["diff"] = result.diff;
      entry["results"].push_back(std::move(item));
    }
    out["tasks"].push_back(std::move(entry));
  }
  out["recap"] = Json::object();
  for (const auto& host : report.recap)
    out["recap"][host.host] = {{"ok", host.ok},           {"changed", host.changed},         {"failed", host.failed},
                               {"unreachable", host.unreachable}, {"skipped", host.skipped}};
  out["stopped"] = report.stopped;
  return out;
}

}  // namespace xft::playbooks
