// command / shell: runs a command; `creates` / `removes` make it idempotent.
#include "playbooks/sync.h"
#include "playbooks/task_args.h"

namespace xft::playbooks {

using namespace detail;

namespace {

std::string strip_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string command_line(const nlohmann::json& args, bool shell) {
  const auto& cmd = args["cmd"];
  std::string line;
  if (cmd.is_array()) {
    for (const auto& word : arg_list(cmd)) line += (line.empty() ? "" : " ") + shell_quote(word);
  } else {
    line = cmd.get<std::string>();
  }
  if (shell) line = "sh -c " + shell_quote(line);
  auto dir = arg(args, "chdir");
  if (!dir.empty()) line = "cd " + shell_quote(dir) + " && " + line;
  return line;
}

// creates: the command already did its work when the path exists; removes: when it does not.
launcher::Remote<std::optional<std::string>> guard_holds(const nlohmann::json& args, TaskEnv& env) {
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
  launcher::RunOptions options;
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
