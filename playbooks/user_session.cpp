#include "playbooks/user_session.h"

#include <sys/stat.h>

#include <cstdio>

#include "launcher/mpirun.h"

namespace xft::playbooks {

using remote::CommandResult;
using remote::Failure;
using remote::Remote;
using remote::RemoteError;

namespace {

// Written as the user: a temp file beside the target (mktemp: 0600, never an
// existing name), then renamed over it; -T makes a directory or a link to one
// at the target an error instead of a place to move into.
constexpr const char* kUploadScript =
    "umask 077\n"
    "t=$(mktemp -- \"$1.xftctl-tmp-XXXXXX\") || exit 1\n"
    "if cat > \"$t\" && chmod \"$2\" -- \"$t\" && mv -fT -- \"$t\" \"$1\"; then exit 0; fi\n"
    "rm -f -- \"$t\"\n"
    "exit 1\n";

}  // namespace

UserSession::UserSession(remote::RemoteSession& root, std::string user)
    : ArgvSession(kUploadScript, user), root_(root), user_(std::move(user)) {}

std::string UserSession::as_user(const std::vector<std::string>& words) const {
  std::vector<std::string> argv = {"runuser", "-u", user_, "--"};
  argv.insert(argv.end(), words.begin(), words.end());
  return launcher::shell_join(argv);
}

Remote<CommandResult> UserSession::run_words(const std::vector<std::string>& words,
                                             const remote::RunOptions& options) {
  return root_.run(as_user(words), options);
}

Remote<std::string> UserSession::uid() {
  if (!uid_.empty()) return uid_;
  auto ran = run_words({"id", "-u"});
  if (!ran) return ran.error();
  if (ran->exit_status != 0) {
    auto failure = error("cannot act", *ran);
    failure.message += " (another user's files are edited as that user with runuser, which needs a root login)";
    return failure;
  }
  uid_ = first_line(ran->out);
  return uid_;
}

Remote<remote::RemoteFileInfo> UserSession::stat(const std::string& remote_path) {
  auto owner_ok = uid();
  if (!owner_ok) return owner_ok.error();
  auto ran = run_words({"stat", "-c", "%f %u %s", "--", remote_path});
  if (!ran) return ran.error();
  if (ran->exit_status != 0) {
    if (ran->err.find("No such file or directory") != std::string::npos) return remote::RemoteFileInfo{};
    return error("cannot stat " + remote_path, *ran);
  }
  unsigned long mode = 0, size = 0;
  char owner[32] = {0};
  if (std::sscanf(ran->out.c_str(), "%lx %31s %lu", &mode, owner, &size) != 3)
    return unreadable_stat(remote_path, ran->out);
  if (S_ISLNK(mode))
    return RemoteError{Failure::other, host().name + ": " + remote_path + " is a symbolic link; xftctl never follows links in " +
                                           user_ + "'s files (replace it with a real file or directory)"};
  if (owner != *owner_ok && std::string(owner) != "0")
    return RemoteError{Failure::other, host().name + ": " + remote_path + " is owned by uid " + owner + ", not " +
                                           user_ + " or root (chown it to " + user_ + ")"};
  return existing(mode, size);
}

Remote<void> UserSession::upload_file(const std::string& local_path, const std::string& remote_path) {
  return RemoteError{Failure::other, host().name + ": cannot send " + local_path + " to " + remote_path + " as " + user_ +
                                         " (not supported)"};
}

}  // namespace xft::playbooks
