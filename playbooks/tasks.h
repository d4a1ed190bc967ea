// The task kinds: each makes one thing on one host true, idempotently, and
// says whether it had to change anything. In check mode none of them writes;
// they report what they would change.
//
//   command / shell   run a command; `creates` / `removes` guard it (ok when the guard holds)
//   package           install (or remove) packages with apt, dnf or yum, detected per host
//   file              a directory, an empty file, an absent path; mode
//   copy              a file with the given content (or a local file's), mode
//   template          a file rendered from templates/NAME with the host's variables
//   block             a marked block of lines in a text file (like blockinfile)
//   authorized_key    keys in ~/.ssh/authorized_keys, matched by key blob, never by comment
//   known_hosts       "names keytype key" entries in ~/.ssh/known_hosts; a stale key for those names is replaced
//   mount             an fstab entry and the mount itself
//   sync              a local directory pushed to the host (playbooks/sync.h)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "remote/transport.h"
#include "playbooks/playbook.h"

namespace xft::playbooks {

enum class TaskStatus { ok, changed, failed, unreachable, skipped };
const char* status_name(TaskStatus status);

struct TaskResult {
  TaskStatus status = TaskStatus::ok;
  std::string msg;     // one line; for failures the reason
  std::string diff;    // --diff: what changed in files, as unified diffs
  // Registered under `register:` and seen by changed_when / failed_when /
  // until: rc, stdout, stderr (commands), changed, failed, skipped.
  nlohmann::json data = nlohmann::json::object();
};

struct TaskEnv {
  remote::RemoteSession& session;
  bool check = false;          // change nothing, say what would change
  bool diff = false;           // fill TaskResult::diff
  std::string templates_dir;   // where `template` finds src
  std::string playbook_dir;    // where relative `copy` / `sync` sources are
  const nlohmann::json* vars = nullptr;  // the host's variables, for `template`
};

// Runs one task kind with its (already rendered) arguments.
TaskResult run_task_kind(TaskKind kind, const nlohmann::json& args, TaskEnv& env);

// The kinds, one function each (tasks_*.cpp).
TaskResult run_command(const nlohmann::json& args, TaskEnv& env, bool shell);
TaskResult run_package(const nlohmann::json& args, TaskEnv& env);
TaskResult run_file(const nlohmann::json& args, TaskEnv& env);
TaskResult run_copy(const nlohmann::json& args, TaskEnv& env);
TaskResult run_template(const nlohmann::json& args, TaskEnv& env);
TaskResult run_block(const nlohmann::json& args, TaskEnv& env);
TaskResult run_authorized_key(const nlohmann::json& args, TaskEnv& env);
TaskResult run_known_hosts(const nlohmann::json& args, TaskEnv& env);
TaskResult run_mount(const nlohmann::json& args, TaskEnv& env);
TaskResult run_sync(const nlohmann::json& args, TaskEnv& env);

// Pure parts, exposed for tests.
// authorized_keys content with every wanted key present (matched by blob);
// with `exclusive`, key lines whose blob is not wanted are dropped.
std::string merge_authorized_keys(const std::string& current, const std::string& wanted, bool exclusive);
// known_hosts content where each wanted "names type key" line holds: entries of
// the same key type for any of those names with another key lose those names.
std::string merge_known_hosts(const std::string& current, const std::string& wanted);
// fstab content with the line for `mount_point` (as fstab spells it, escapes
// included) equal to `line` (appended when absent).
std::string merge_fstab(const std::string& current, const std::string& mount_point, const std::string& line);
// One fstab(5) field: space, tab, newline and backslash as \040 \011 \012 \134
// (what getmntent decodes); empty or holding another control character: an
// error naming `what`.
Expected<std::string> fstab_field(const std::string& value, const std::string& what);
// "src path fstype opts 0 0", every field escaped; the path must be absolute.
Expected<std::string> fstab_line(const std::string& source, const std::string& path, const std::string& fstype,
                                 const std::string& options);

}  // namespace xft::playbooks
