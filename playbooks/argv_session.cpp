#include "playbooks/argv_session.h"

#include <sys/stat.h>

#include "playbooks/remote_file.h"

namespace xft::playbooks {

using remote::CommandResult;
using remote::Failure;
using remote::Remote;
using remote::RemoteError;

std::string ArgvSession::first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

ArgvSession::ArgvSession(const char* upload_script, std::string acting_as)
    : upload_script_(upload_script), acting_as_(std::move(acting_as)) {}

RemoteError ArgvSession::error(const std::string& what, const CommandResult& ran) const {
  auto reason = first_line(ran.err);
  return RemoteError{Failure::other, host().name + ": " + what + " as " + acting_as_ + ": " +
                                         (reason.empty() ? "exit " + std::to_string(ran.exit_status) : reason)};
}

remote::RemoteFileInfo ArgvSession::existing(unsigned long mode, unsigned long long size) {
  remote::RemoteFileInfo info;
  info.exists = true;
  info.is_directory = S_ISDIR(mode);
  info.mode = static_cast<mode_t>(mode & 07777);
  info.size = size;
  return info;
}

RemoteError ArgvSession::unreadable_stat(const std::string& remote_path, const std::string& answer) const {
  return RemoteError{Failure::other,
                     host().name + ": stat " + remote_path + ": unreadable answer '" + first_line(answer) + "'"};
}

Remote<CommandResult> ArgvSession::run(const std::string& command, const remote::RunOptions& options) {
  return run_words({"sh", "-c", command}, options);
}

Remote<std::string> ArgvSession::download(const std::string& remote_path) {
  auto ran = run_words({"cat", "--", remote_path});
  if (!ran) return ran.error();
  if (ran->exit_status != 0) return error("cannot read " + remote_path, *ran);
  return ran->out;
}

Remote<void> ArgvSession::upload(const std::string& content, const std::string& remote_path, mode_t mode) {
  remote::RunOptions options;
  options.stdin_data = content;
  auto ran = run_words({"sh", "-c", upload_script_, "sh", remote_path, mode_text(mode)}, options);
  if (!ran) return ran.error();
  if (ran->exit_status != 0) return error("cannot write " + remote_path, *ran);
  return {};
}

Remote<void> ArgvSession::mkdir(const std::string& remote_path, mode_t mode) {
  auto ran = run_words({"mkdir", "-p", "-m", mode_text(mode), "--", remote_path});
  if (!ran) return ran.error();
  if (ran->exit_status != 0) return error("cannot create directory " + remote_path, *ran);
  return {};
}

}  // namespace xft::playbooks
