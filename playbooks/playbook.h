// A playbook as read from YAML: a play (hosts, vars, run settings) and its
// tasks in order. Loading checks every field and reports all mistakes of the
// file at once, each as "file:line:col: field: what is wrong; how to fix".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::playbooks {

// The task kinds the runner knows; see tasks.h for what each does.
enum class TaskKind {
  command, shell, package, file, copy, template_file, block, authorized_key, known_hosts, mount, sync
};

// "command", "shell", ..., "template" for TaskKind::template_file.
const char* kind_name(TaskKind kind);

struct Task {
  std::string name;
  TaskKind kind = TaskKind::command;
  nlohmann::json args;            // the kind's own fields; strings are mustache templates (render_task_args)
  std::string when;               // expression; empty: always
  std::string changed_when;       // expression over the result; empty: the kind decides
  std::string failed_when;        // expression over the result; empty: the kind decides
  std::string fail_msg;           // shown instead of the kind's message when failed_when holds
  std::string until;              // retried until this holds (with retries/delay)
  int retries = 0;                // extra attempts after the first
  double delay_s = 1.0;           // between attempts
  std::string register_as;        // stores the result under this name in the host's vars
  bool run_once = false;          // only on the first host still in the play
  bool ignore_errors = false;     // a failure is reported but the host stays in the play
  bool check_mode = true;         // false: runs even under --check (read-only probes)
  bool no_log = false;            // result text (stdout, diff) never printed
  // Needs root: on a host with become: sudo it runs through sudo; elsewhere
  // as the login user (root, or a failure that says the step needs root).
  bool become = false;
  std::vector<std::string> tags;  // --skip TAG leaves out tasks with that tag
  int line = 0;                   // where the task starts in the file
};

struct Playbook {
  std::string path;
  std::string name;
  std::string hosts = "all";      // host pattern (inventory::select_hosts)
  nlohmann::json vars = nlohmann::json::object();
  bool any_errors_fatal = false;  // one failed host stops every host
  int max_fail_percentage = 100;  // stop when more than this share of hosts failed
  std::vector<Task> tasks;
};

// The task's arguments rendered for one host: each field with the escape its
// kind declares for it (shell, config, line or raw; render.h), so a command's
// values are shell-quoted and a path's cannot carry a newline.
Expected<nlohmann::json> render_task_args(const Task& task, const nlohmann::json& vars);

// Reads and checks a playbook file; all errors of the file in one message, a line each.
Expected<Playbook> load_playbook(const std::string& path);
// The same from text (`path` only names it in messages).
Expected<Playbook> parse_playbook(const std::string& text, const std::string& path);

}  // namespace xft::playbooks
