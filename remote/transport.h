// The one door to remote hosts: connect to an inventory host, run commands,
// move files. Everything that touches a host (ping, exec, playbooks, facts,
// the launcher) goes through these interfaces, so tests swap in fakes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::remote {

// Why a remote operation failed; commands map these to exit codes and status
// words, so the classes are coarse on purpose.
enum class Failure {
  unreachable,       // connect refused, timed out, name did not resolve
  auth_failed,       // the server refused every credential we had
  host_key_unknown,  // not in known_hosts and not asked to trust new keys
  host_key_changed,  // known_hosts holds a different key: never overridden
  timeout,           // a command or transfer ran past its deadline
  other,             // protocol, SFTP or local errors
};

// A short word for tables and JSON: "unreachable", "auth failed", ...
const char* failure_name(Failure failure);

struct RemoteError {
  Failure kind = Failure::other;
  std::string message;  // one line, names the host; never holds a secret

  Error to_error() const { return Error{message}; }
};

// Expected<T> with a classified error.
template <class T>
using Remote = Expected<T, RemoteError>;

struct CommandResult {
  int exit_status = 0;  // 255 when the remote side reported none (killed by a signal)
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string stdin_data;              // sent, then EOF; empty sends only EOF
  std::chrono::seconds timeout{0};     // 0: the transport's default command timeout
  // Called with each chunk of output as it arrives (exec --stream), besides
  // collecting it into the result; from the thread that called run().
  std::function<void(bool is_stderr, std::string_view chunk)> on_output;
};

struct RemoteFileInfo {
  bool exists = false;
  bool is_directory = false;
  mode_t mode = 0;  // permission bits only
  uint64_t size = 0;
};

// One authenticated connection to one host. Not thread-safe: one thread per session.
class RemoteSession {
 public:
  virtual ~RemoteSession() = default;

  virtual const inventory::Host& host() const = 0;
  // The server's host key as a known_hosts key string: "ssh-ed25519 AAAA...".
  virtual std::string host_key() const = 0;

  // Runs `command` through the remote user's shell. A non-zero exit status is
  // a successful run; only transport trouble and timeouts are errors.
  virtual Remote<CommandResult> run(const std::string& command, const RunOptions& options = {}) = 0;

  // Writes `content` to a temp file beside `remote_path`, sets `mode`, then
  // renames it over the target, so readers never see a half-written file.
  virtual Remote<void> upload(const std::string& content, const std::string& remote_path,
                              mode_t mode) = 0;
  // The same from a local file, streamed; the local file's mode is kept.
  virtual Remote<void> upload_file(const std::string& local_path, const std::string& remote_path) = 0;
  // upload_file that calls `progress` with the bytes sent so far after each
  // chunk (xftctl sync's progress line). The default sends and reports nothing.
  using UploadProgress = std::function<void(uint64_t bytes_sent)>;
  virtual Remote<void> upload_file_reporting(const std::string& local_path, const std::string& remote_path,
                                             const UploadProgress& progress) {
    return upload_file(local_path, remote_path);
  }
  virtual Remote<std::string> download(const std::string& remote_path) = 0;
  // A missing path is not an error: exists == false.
  virtual Remote<RemoteFileInfo> stat(const std::string& remote_path) = 0;
  // Creates the directory and its missing parents (mkdir -p); existing ones are fine.
  virtual Remote<void> mkdir(const std::string& remote_path, mode_t mode = 0755) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Safe to call from several threads at once (one per host).
  virtual Remote<std::unique_ptr<RemoteSession>> connect(const inventory::Host& host) = 0;
};

}  // namespace xft::remote
