// file, copy, template, block: files on the host, written only when they differ.
#include <fstream>
#include <sstream>

#include "playbooks/managed_block.h"
#include "playbooks/render.h"
#include "playbooks/sync.h"
#include "playbooks/task_args.h"

namespace xft::playbooks {

using namespace detail;

namespace {

Expected<std::string> read_local(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read (check the path)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string local_path(const std::string& base, const std::string& path) {
  return path.empty() || path[0] == '/' ? path : base + "/" + path;
}

// templates/NAME rendered with the host's variables, escaped for what the file
// is by its name: a shell script (*.sh, *.sh.mustache) or a config file.
Expected<std::string> render_template_file(const TaskEnv& env, const std::string& name) {
  auto text = read_local(local_path(env.templates_dir, name));
  if (!text) return text.error();
  return render_text(*text, env.vars ? *env.vars : nlohmann::json::object(), template_escape(name), "template " + name);
}

TaskResult run_shell_step(TaskEnv& env, const std::string& command, const std::string& what) {
  auto ran = env.session.run(command);
  if (!ran) return from_error(ran.error());
  if (ran->exit_status != 0) return failed(what + ": " + ran->err.substr(0, ran->err.find('\n')));
  return outcome(true, what);
}

TaskResult ensure_directory(const std::string& path, std::optional<mode_t> mode, TaskEnv& env) {
  auto info = env.session.stat(path);
  if (!info) return from_error(info.error());
  if (info->exists && !info->is_directory) return failed(path + " exists and is not a directory (remove it first)");
  mode_t wanted = mode ? *mode : (info->exists ? info->mode : 0755);
  if (info->exists && info->mode == wanted) return outcome(false, path);
  std::string what = info->exists ? "mode " + mode_text(info->mode) + " -> " + mode_text(wanted) : "created";
  if (env.check) return outcome(true, path + ": would be " + what);
  if (!info->exists) {
    auto made = env.session.mkdir(path, wanted);
    if (!made) return from_error(made.error());
  }
  auto result = run_shell_step(env, "chmod " + mode_text(wanted) + " -- " + shell_quote(path), path + ": " + what);
  return result;
}

}  // namespace

TaskResult run_file(const nlohmann::json& args, TaskEnv& env) {
  auto path = arg(args, "path");
  auto state = arg(args, "state", "file");
  bool bad_mode = false;
  auto mode = mode_arg(args, bad_mode);
  if (bad_mode) return failed("mode '" + arg(args, "mode") + "' is not an octal mode like 0644");
  if (state == "directory") return ensure_directory(path, mode, env);
  auto info = env.session.stat(path);
  if (!info) return from_error(info.error());
  if (state == "absent") {
    if (!info->exists) return outcome(false, path + " is absent");
    if (env.check) return outcome(true, path + ": would be removed");
    return run_shell_step(env, "rm -rf -- " + shell_quote(path), path + ": removed");
  }
  if (state == "touch" && !info->exists) {
    if (env.check) return outcome(true, path + ": would be created");
    return file_outcome(ensure_remote_file(env.session, path, "", mode, false), path, false);
  }
  if (state != "file" && state != "touch")
    return failed("state '" + state + "' is not one of file, directory, touch, absent");
  if (!info->exists) return failed(path + " does not exist (use state: touch to create it)");
  if (info->is_directory) return failed(path + " is a directory");
  if (!mode || *mode == info->mode) return outcome(false, path);
  std::string what = path + ": mode " + mode_text(info->mode) + " -> " + mode_text(*mode);
  if (env.check) return outcome(true, what + " (would be set)");
  return run_shell_step(env, "chmod " + mode_text(*mode) + " -- " + shell_quote(path), what);
}

TaskResult run_copy(const nlohmann::json& args, TaskEnv& env) {
  auto dest = arg(args, "dest");
  bool bad_mode = false;
  auto mode = mode_arg(args, bad_mode);
  if (bad_mode) return failed("mode '" + arg(args, "mode") + "' is not an octal mode like 0644");
  std::string content;
  if (args.contains("content")) {
    content = arg(args, "content");
  } else {
    auto local = read_local(local_path(env.playbook_dir, arg(args, "src")));
    if (!local) return failed(local.error().message);
    content = std::move(*local);
  }
  return file_outcome(ensure_remote_file(env.session, dest, content, mode, env.check), dest, env.check);
}

TaskResult run_template(const nlohmann::json& args, TaskEnv& env) {
  auto dest = arg(args, "dest");
  bool bad_mode = false;
  auto mode = mode_arg(args, bad_mode);
  if (bad_mode) return failed("mode '" + arg(args, "mode") + "' is not an octal mode like 0644");
  auto rendered = render_template_file(env, arg(args, "src"));
  if (!rendered) return failed(rendered.error().message);
  return file_outcome(ensure_remote_file(env.session, dest, *rendered, mode, env.check), dest, env.check);
}

TaskResult run_block(const nlohmann::json& args, TaskEnv& env) {
  auto path = arg(args, "path");
  bool bad_mode = false;
  auto mode = mode_arg(args, bad_mode);
  if (bad_mode) return failed("mode '" + arg(args, "mode") + "' is not an octal mode like 0644");
  auto current = read_remote_file(env.session, path);
  if (!current) return from_error(current.error());
  if (!current->exists && !arg_bool(args, "create", true))
    return failed(path + " does not exist (create it, or set create: true)");
  auto body = arg(args, "block");
  if (args.contains("template")) {
    auto rendered = render_template_file(env, arg(args, "template"));
    if (!rendered) return failed(rendered.error().message);
    body = *rendered;
  }
  if (!body.empty() && body.back() != '\n') body += '\n';
  auto wanted = replace_managed_block(current->content, arg(args, "marker"), body);
  if (!wanted) return failed(path + ": " + wanted.error().message);
  return file_outcome(ensure_remote_file(env.session, path, *wanted, mode, env.check), path, env.check);
}

TaskResult run_sync(const nlohmann::json& args, TaskEnv& env) {
  auto source = local_path(env.playbook_dir, arg(args, "src"));
  auto plan = SyncPlan::scan(source);
  if (!plan) return failed(plan.error().message);
  auto dest = arg(args, "dest", source);
  SyncOptions options;
  options.check_only = env.check;
  options.delete_extra = arg_bool(args, "delete");
  auto report = sync_tree(env.session, *plan, dest, options);
  if (!report) return from_error(report.error());
  std::string msg = dest + ": " + (env.check ? "would send " : "sent ") + std::to_string(report->files_sent) +
                    " files, " + std::to_string(report->bytes_sent) + " bytes; " +
                    std::to_string(report->files_unchanged) + " unchanged";
  TaskResult result = outcome(report->changed(), msg);
  if (env.diff)
    for (const auto& change : report->changes) result.diff += describe_change(change) + "\n";
  return result;
}

}  // namespace xft::playbooks
