// command / shell: runs a command; `creates` / `removes` make it idempotent.
#include "launcher/mpirun.h"
#include "playbooks/task_args.h"

namespace xft::playbooks {

using namespace detail;

namespace {

std::string strip_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// The line the remote login shell parses. A cmd list is an argv whose every
// word is quoted, so the shell hands each one over unchanged; a cmd string was
// rendered with its values quoted already.
std::string command_line(const nlohmann::json& args, bool shell) {
  const auto& cmd = args["cmd"];
  std::string line = cmd.is_array() ? launcher::shell_join(arg_list(cmd)) : cmd.get<std::string>();
  if (shell) line = launcher::shell_join({"sh", "-c", line});
  auto dir = arg(args, "chdir");
  if (!dir.empty()) line = launcher::shell_join({"cd", "--", dir}) + " && " + line;
  return line;
}

// creates: the command already did its work when the path exists; removes: when it does not.
remote::Remote<std::optional<std::string>> guard_holds(const nlohmann::json& args, TaskEnv& env) {
  for (const char* guard : {"creates", "removes"}) {
    auto path = arg(args, guard);
    if (path.empty()) continue;
    auto info = env.session.stat(path);
    if (!info) return info.error();
    bool exists = info->exists;
    if (guard == std::string("creates") && exists) return std::optional<std::string>(path + " exists");
    if (guard == std::string("removes") && !exists) return std::optional<std::string>(path + " does not exist");
  }
  return std::optional<std::string>();
}

}  // namespace

TaskResult run_command(const nlohmann::json& args, TaskEnv& env, bool shell) {
  auto guard = guard_holds(args, env);
  if (!guard) return from_error(guard.error());
  std::string line = command_line(args, shell);
  if (*guard) {
    TaskResult result = outcome(false, **guard);
    result.data.update({{"rc", 0}, {"stdout", ""}, {"stderr", ""}, {"skipped", true}});
    return result;
  }
  if (env.check) {
    TaskResult result = outcome(true, "would run: " + line);
    result.data.update({{"rc", 0}, {"stdout", ""}, {"stderr", ""}, {"skipped", true}});
    return result;
  }
  remote::RunOptions options;
  options.stdin_data = arg(args, "stdin");
  auto timeout = arg(args, "timeout");
  if (!timeout.empty()) options.timeout = std::chrono::seconds(std::stol(timeout));
  auto ran = env.session.run(line, options);
  if (!ran) return from_error(ran.error());
  TaskResult result = outcome(true, "");
  result.data.update({{"rc", ran->exit_status},
                      {"stdout", strip_trailing_newlines(ran->out)},
                      {"stderr", strip_trailing_newlines(ran->err)}});
  if (ran->exit_status != 0) {
    auto first_error = strip_trailing_newlines(ran->err);
    first_error = first_error.substr(0, first_error.find('\n'));
    result.status = TaskStatus::failed;
    result.msg = "exit " + std::to_string(ran->exit_status) + (first_error.empty() ? "" : ": " + first_error);
    result.data["failed"] = true;
  }
  return result;
}

}  // namespace xft::playbooks
