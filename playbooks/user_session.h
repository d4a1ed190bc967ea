// Editing another user's files from a root session without lending root's
// rights: every operation runs as that user (`runuser -u USER --`), so the
// kernel checks each path with the user's own permissions. A link the user
// planted (~/.ssh/authorized_keys -> /etc/shadow) then leads only where the
// user could already write, whatever happens between a check and a write;
// checks made with root's rights (lstat, then write) always leave that race.
//
// On top, stat() refuses what sshd or a careful admin would not want edited:
// a symbolic link, or an entry owned by neither the user nor root; the task
// then fails naming the path. upload() writes a temp file in the same
// directory and renames it, which replaces a link instead of following it.
#pragma once

#include <string>
#include <vector>

#include "playbooks/argv_session.h"
#include "remote/transport.h"

namespace xft::playbooks {

class UserSession : public ArgvSession {
 public:
  // `root` must be a root session; it outlives this one.
  UserSession(remote::RemoteSession& root, std::string user);

  const inventory::Host& host() const override { return root_.host(); }
  std::string host_key() const override { return root_.host_key(); }

  remote::Remote<void> upload_file(const std::string& local_path, const std::string& remote_path) override;
  // lstat: a link or a foreign owner is an error naming the path.
  remote::Remote<remote::RemoteFileInfo> stat(const std::string& remote_path) override;

  // The argv that runs `words` as the user, joined for the root session's shell.
  std::string as_user(const std::vector<std::string>& words) const;

 private:
  remote::Remote<remote::CommandResult> run_words(const std::vector<std::string>& words,
                                                  const remote::RunOptions& options = {}) override;
  remote::Remote<std::string> uid();

  remote::RemoteSession& root_;
  std::string user_;
  std::string uid_;  // the user's numeric id, asked once
};

}  // namespace xft::playbooks
