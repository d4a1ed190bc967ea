#include "playbooks/become_session.h"

#include <string.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "launcher/mpirun.h"

namespace xft::playbooks {

using remote::CommandResult;
using remote::Failure;
using remote::Remote;
using remote::RemoteError;

namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// Run by root: a temp file beside the target (mktemp: 0600, never an existing
// name), its mode, then renamed over the target; -T makes a directory at the
// target an error. A bind-mounted target (a container's /etc/hosts) cannot be
// replaced by rename (EBUSY): it is rewritten in place, unless it is a link.
constexpr const char* kRootUploadScript =
    "umask 077\n"
    "t=$(mktemp -- \"$1.xftctl-tmp-XXXXXX\") || exit 1\n"
    "if cat > \"$t\" && chmod \"$2\" -- \"$t\"; then\n"
    "  mv -fT -- \"$t\" \"$1\" 2>/dev/null && exit 0\n"
    "  [ ! -L \"$1\" ] && [ -f \"$1\" ] && cat -- \"$t\" > \"$1\" && rm -f -- \"$t\" && exit 0\n"
    "fi\n"
    "rm -f -- \"$t\"\n"
    "exit 1\n";

}  // namespace

// sudo's own complaints are lines that start with "sudo: "; the command's
// stderr is left alone.
bool sudo_said(const std::string& err, const char* what) {
  for (size_t start = 0; start < err.size();) {
    size_t end = err.find('\n', start);
    std::string line = err.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.rfind("sudo: ", 0) == 0 && contains(line, what)) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::optional<std::string> sudo_refusal(const inventory::Host& host, const CommandResult& ran) {
  if (ran.exit_status == 0) return std::nullopt;
  const std::string& err = ran.err;
  const std::string who = host.name + ": sudo as " + host.user + ": ";
  if (sudo_said(err, "a password is required") || sudo_said(err, "a terminal is required"))
    return who + "sudo asks for a password and the inventory gives none (export it and name the variable with " +
           "become_password_env: VAR for this host, or allow " + host.user + " passwordless sudo)";
  if (sudo_said(err, "incorrect password") || sudo_said(err, "no password was provided"))
    return who + "sudo refused the password from $" + host.become_password_env + " (export the right password in " +
           host.become_password_env + ")";
  if (sudo_said(err, "is not in the sudoers file") || sudo_said(err, "is not allowed to") ||
      sudo_said(err, "may not run sudo"))
    return who + host.user + " may not run commands as root with sudo here (add it to sudoers, or log in as root)";
  if (ran.exit_status == 127 && contains(err, "sudo") && contains(err, "not found"))
    return who + "sudo is not installed (install it, or log in as root)";
  return std::nullopt;
}

Expected<std::string> become_password(const inventory::Host& host) {
  if (host.become_password_env.empty()) return std::string();
  const char* value = std::getenv(host.become_password_env.c_str());
  if (!value)
    return make_error(host.name + ": $" + host.become_password_env +
                      " is not set (export the sudo password in it; the inventory names it with become_password_env)");
  return std::string(value);
}

BecomeSession::BecomeSession(remote::RemoteSession& login, std::string password)
    : ArgvSession(kRootUploadScript, "root (sudo)"), login_(login), password_(std::move(password)) {}

BecomeSession::~BecomeSession() { ::explicit_bzero(password_.data(), password_.size()); }

std::string BecomeSession::as_root(const std::vector<std::string>& words) const {
  std::vector<std::string> argv = password_.empty() ? std::vector<std::string>{"sudo", "-n", "--"}
                                                    : std::vector<std::string>{"sudo", "-k", "-S", "-p", "", "--"};
  argv.insert(argv.end(), words.begin(), words.end());
  return launcher::shell_join(argv);
}

// A host whose sudo does not ask (NOPASSWD, or a root login) would hand the
// password line to the command: asked once, such a host gets sudo -n.
Remote<void> BecomeSession::drop_password_unless_asked() {
  if (password_.empty() || probed_) return {};
  probed_ = true;
  auto ran = login_.run(launcher::shell_join({"sudo", "-n", "--", "true"}), {});
  if (!ran) return ran.error();
  if (ran->exit_status == 0) ::explicit_bzero(password_.data(), password_.size()), password_.clear();
  return {};
}

Remote<CommandResult> BecomeSession::run_words(const std::vector<std::string>& words,
                                               const remote::RunOptions& options) {
  if (auto probed = drop_password_unless_asked(); !probed) return probed.error();
  remote::RunOptions sent = options;
  if (!password_.empty()) sent.stdin_data = password_ + "\n" + options.stdin_data;
  auto ran = login_.run(as_root(words), sent);
  if (!password_.empty()) ::explicit_bzero(sent.stdin_data.data(), sent.stdin_data.size());
  if (!ran) return ran.error();
  if (auto refused = sudo_refusal(host(), *ran))
    return RemoteError{Failure::auth_failed, *refused};
  return ran;
}

Remote<remote::RemoteFileInfo> BecomeSession::stat(const std::string& remote_path) {
  auto ran = run_words({"stat", "-L", "-c", "%f %s", "--", remote_path});
  if (!ran) return ran.error();
  if (ran->exit_status != 0) {
    if (contains(ran->err, "No such file or directory")) return remote::RemoteFileInfo{};
    return error("cannot stat " + remote_path, *ran);
  }
  unsigned long mode = 0;
  unsigned long long size = 0;
  if (std::sscanf(ran->out.c_str(), "%lx %llu", &mode, &size) != 2)
    return unreadable_stat(remote_path, ran->out);
  return existing(mode, size);
}

Remote<void> BecomeSession::upload_file(const std::string& local_path, const std::string& remote_path) {
  std::ifstream file(local_path, std::ios::binary);
  struct stat info;
  if (!file || ::stat(local_path.c_str(), &info) != 0)
    return RemoteError{Failure::other, host().name + ": cannot read " + local_path};
  std::ostringstream content;
  content << file.rdbuf();
  return upload(content.str(), remote_path, info.st_mode & 07777);
}

}  // namespace xft::playbooks
