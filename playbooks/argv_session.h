// What UserSession and BecomeSession share: every operation is an argv run
// through another session (as another user with runuser, or as root with
// sudo), so reading, writing and making directories are the same commands
// whatever wraps them. A subclass says how an argv is run, who it acts as (for
// error lines), and which script writes a file.
#pragma once

#include <string>
#include <vector>

#include "remote/transport.h"

namespace xft::playbooks {

class ArgvSession : public remote::RemoteSession {
 public:
  // `command` through `sh -c`, as the session's user.
  remote::Remote<remote::CommandResult> run(const std::string& command,
                                            const remote::RunOptions& options = {}) override;
  remote::Remote<void> upload(const std::string& content, const std::string& remote_path, mode_t mode) override;
  remote::Remote<std::string> download(const std::string& remote_path) override;
  remote::Remote<void> mkdir(const std::string& remote_path, mode_t mode = 0755) override;

 protected:
  // upload_script: a shell script run with $1 the target and $2 its mode
  // (octal text), the content on its standard input; exit 0 when written.
  // acting_as: what an error line says after "as" ("alice", "root (sudo)").
  ArgvSession(const char* upload_script, std::string acting_as);

  virtual remote::Remote<remote::CommandResult> run_words(const std::vector<std::string>& words,
                                                          const remote::RunOptions& options = {}) = 0;
  // "<host>: <what> as <acting_as>: <first line of stderr, or the exit status>".
  remote::RemoteError error(const std::string& what, const remote::CommandResult& ran) const;
  static std::string first_line(const std::string& text);
  // What stat says of an existing path: `mode` is st_mode as `stat -c %f` prints it.
  static remote::RemoteFileInfo existing(unsigned long mode, unsigned long long size);
  // stat printed what its format cannot give.
  remote::RemoteError unreadable_stat(const std::string& remote_path, const std::string& answer) const;

 private:
  const char* upload_script_;
  std::string acting_as_;
};

}  // namespace xft::playbooks
