// Root's rights for the steps that need them when the login user is not root
// (inventory `become: sudo`): every operation runs as an argv behind
// `sudo -n --`, or, when the inventory names become_password_env, behind
// `sudo -k -S -p '' --` with the password as the first line of sudo's
// standard input: never on a command line, in a file or in a message. (-k
// makes sudo ask every time, so the password line is always read by sudo and
// never reaches the command; a host whose sudo does not ask at all, found by
// one `sudo -n -- true`, gets sudo -n instead.)
//
// Files are written as UserSession writes them, by root: a temp file beside
// the target (mktemp, 0600), its mode set, then renamed over it, so the file
// ends up root's with the asked mode and readers never see half of it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "playbooks/argv_session.h"
#include "remote/transport.h"

namespace xft::playbooks {

class BecomeSession : public ArgvSession {
 public:
  // `login` is the login user's session; it outlives this one. `password`
  // empty: sudo must not ask (sudo -n).
  BecomeSession(remote::RemoteSession& login, std::string password);
  ~BecomeSession() override;

  const inventory::Host& host() const override { return login_.host(); }
  std::string host_key() const override { return login_.host_key(); }

  remote::Remote<void> upload_file(const std::string& local_path, const std::string& remote_path) override;
  remote::Remote<remote::RemoteFileInfo> stat(const std::string& remote_path) override;

  // The command line that runs `words` as root; what goes on the wire (and
  // in `ps` on the host): it never holds the password.
  std::string as_root(const std::vector<std::string>& words) const;

 private:
  remote::Remote<remote::CommandResult> run_words(const std::vector<std::string>& words,
                                                  const remote::RunOptions& options = {}) override;
  remote::Remote<void> drop_password_unless_asked();

  remote::RemoteSession& login_;
  std::string password_;
  bool probed_ = false;
};

// The one line for a run that sudo itself refused, naming the fix; nullopt
// when sudo let the command run (its exit status is then the command's).
std::optional<std::string> sudo_refusal(const inventory::Host& host, const remote::CommandResult& ran);

// The password for a host with become: sudo, from $become_password_env; ""
// when the inventory names none; an error naming the variable when it is unset.
Expected<std::string> become_password(const inventory::Host& host);

}  // namespace xft::playbooks
