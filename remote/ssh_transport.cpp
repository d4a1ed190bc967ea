#include "remote/ssh_transport.h"

#include "remote/ssh_config.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

namespace xft::remote {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 32 * 1024;  // below every SFTP server's packet limit

void init_libssh_once() {
  static std::once_flag once;
  std::call_once(once, [] { ssh_init(); });
}

std::string host_label(const inventory::Host& host) {
  std::string where = host.address + (host.port == 22 ? "" : ":" + std::to_string(host.port));
  return host.name.empty() || host.name == host.address ? where : host.name + " (" + where + ")";
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// libssh reports every connect failure through one string; these are the
// ones where the host (or the network to it) is simply not there.
bool is_unreachable(const std::string& error) {
  for (const char* sign : {"Failed to connect", "Connection refused", "Timeout connecting", "timed out",
                           "Failed to resolve", "No route to host", "Network is unreachable",
                           "Name or service not known", "Host is unreachable"})
    if (contains(error, sign)) return true;
  return false;
}

struct ChannelCloser {
  void operator()(ssh_channel channel) const {
    if (ssh_channel_is_open(channel)) ssh_channel_close(channel);
    ssh_channel_free(channel);
  }
};
using ChannelHandle = std::unique_ptr<ssh_channel_struct, ChannelCloser>;

struct SessionCloser {
  void operator()(ssh_session session) const {
    ssh_disconnect(session);
    ssh_free(session);
  }
};
using SessionHandle = std::unique_ptr<ssh_session_struct, SessionCloser>;

struct SftpFileCloser {
  void operator()(sftp_file file) const { sftp_close(file); }
};
using SftpFileHandle = std::unique_ptr<sftp_file_struct, SftpFileCloser>;

std::string sftp_error_text(int code) {
  switch (code) {
    case SSH_FX_NO_SUCH_FILE: return "no such file or directory";
    case SSH_FX_PERMISSION_DENIED: return "permission denied";
    case SSH_FX_FILE_ALREADY_EXISTS: return "file already exists";
    case SSH_FX_NO_SUCH_PATH: return "no such path";
    case SSH_FX_WRITE_PROTECT: return "read-only file system";
    case SSH_FX_NO_MEDIA: return "no media";
    case SSH_FX_CONNECTION_LOST: return "connection lost";
    case SSH_FX_OP_UNSUPPORTED: return "operation not supported";
    default: return "failure (SFTP status " + std::to_string(code) + ")";
  }
}

std::string random_suffix() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(generator()));
  return text;
}

std::string describe_credential(const inventory::Host& host) {
  if (!host.credentials.password_env.empty()) return "password from $" + host.credentials.password_env;
  return "prompted password";
}

std::string method_names(int methods) {
  std::string names;
  auto add = [&](int bit, const char* name) {
    if (methods & bit) names += (names.empty() ? "" : ",") + std::string(name);
  };
  add(SSH_AUTH_METHOD_PUBLICKEY, "publickey");
  add(SSH_AUTH_METHOD_PASSWORD, "password");
  add(SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive");
  add(SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic");
  add(SSH_AUTH_METHOD_HOSTBASED, "hostbased");
  return names.empty() ? "none" : names;
}

// Answers every hidden prompt of keyboard-interactive with the password (PAM
// setups that disable plain "password" auth ask this way).
int password_by_keyboard_interactive(ssh_session session, const std::string& password) {
  int rc = ssh_userauth_kbdint(session, nullptr, nullptr);
  for (int round = 0; rc == SSH_AUTH_INFO && round < 4; ++round) {
    int prompts = ssh_userauth_kbdint_getnprompts(session);
    for (int i = 0; i < prompts; ++i) {
      char echo = 0;
      ssh_userauth_kbdint_getprompt(session, static_cast<unsigned>(i), &echo);
      ssh_userauth_kbdint_setanswer(session, static_cast<unsigned>(i), echo ? "" : password.c_str());
    }
    rc = ssh_userauth_kbdint(session, nullptr, nullptr);
  }
  return rc;
}

// One hop through a bastion: a direct-tcpip channel of the bastion's session
// to the next host, joined to one end of a socket pair whose other end is
// the next session's socket (SSH_OPTIONS_FD). libssh 0.10 has no native jump
// host; its ProxyJump runs the OpenSSH client, which would check the
// bastion's key against another known_hosts. A thread pumps bytes both ways;
// it alone touches the bastion's session after the channel is open.
class Tunnel {
 public:
  static Remote<std::unique_ptr<Tunnel>> open(SessionHandle bastion, const std::string& bastion_label,
                                              const std::string& address, int port) {
    ChannelHandle channel(ssh_channel_new(bastion.get()));
    if (!channel ||
        ssh_channel_open_forward(channel.get(), address.c_str(), port, "127.0.0.1", 22) != SSH_OK) {
      std::string error = ssh_get_error(bastion.get());
      return RemoteError{Failure::unreachable, bastion_label + ": the bastion cannot reach " + address + ":" +
                                                   std::to_string(port) + ": " + error};
    }
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      return RemoteError{Failure::other, bastion_label + ": socketpair: " + std::strerror(errno)};
    return std::unique_ptr<Tunnel>(new Tunnel(std::move(bastion), std::move(channel), fds[0], fds[1]));
  }

  ~Tunnel() {
    stop_ = true;
    if (pump_.joinable()) pump_.join();
    ::close(local_);
    if (!handed_out_) ::close(remote_);
  }

  // The socket for the next session; libssh closes it with that session.
  int take_socket() {
    handed_out_ = true;
    return remote_;
  }

 private:
  Tunnel(SessionHandle bastion, ChannelHandle channel, int local, int remote)
      : bastion_(std::move(bastion)), channel_(std::move(channel)), local_(local), remote_(remote) {
    pump_ = std::thread([this] { pump(); });
  }

  void pump() {
    char buffer[kChunk];
    ssh_channel channel = channel_.get();
    while (!stop_) {
      pollfd fds[2] = {{local_, POLLIN, 0}, {ssh_get_fd(bastion_.get()), POLLIN, 0}};
      if (::poll(fds, 2, 100) < 0 && errno != EINTR) break;
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::read(local_, buffer, sizeof buffer);
        if (n <= 0) {
          ssh_channel_send_eof(channel);
          break;
        }
        for (ssize_t done = 0; done < n;) {
          int sent = ssh_channel_write(channel, buffer + done, static_cast<uint32_t>(n - done));
          if (sent < 0) return;
          done += sent;
        }
      }
      for (;;) {
        int n = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, 0);
        if (n == SSH_ERROR) return close_local();
        if (n <= 0) break;
        if (!write_local(buffer, static_cast<size_t>(n))) return;
      }
      if (ssh_channel_is_eof(channel) || ssh_channel_is_closed(channel)) return close_local();
    }
  }

  // The next session sees the bastion's side end as a closed connection.
  void close_local() { ::shutdown(local_, SHUT_WR); }

  bool write_local(const char* data, size_t size) {
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(local_, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  SessionHandle bastion_;
  ChannelHandle channel_;
  int local_, remote_;
  bool handed_out_ = false;
  std::atomic<bool> stop_{false};
  std::thread pump_;
};

class SshSession : public RemoteSession {
 public:
  SshSession(std::vector<std::unique_ptr<Tunnel>> tunnels, SessionHandle session, inventory::Host host,
             std::string host_key, int default_timeout_s)
      : tunnels_(std::move(tunnels)),
        session_(std::move(session)),
        host_(std::move(host)),
        label_(host_label(host_)),
        host_key_(std::move(host_key)),
        default_timeout_s_(default_timeout_s) {}

  ~SshSession() override {
    if (sftp_) sftp_free(sftp_);
  }

  const inventory::Host& host() const override { return host_; }
  std::string host_key() const override { return host_key_; }

  Remote<CommandResult> run(const std::string& command, const RunOptions& options) override {
    ChannelHandle channel(ssh_channel_new(session_.get()));
    if (!channel) return failure("cannot create a channel");
    if (ssh_channel_open_session(channel.get()) != SSH_OK) return failure("cannot open a session channel");
    if (ssh_channel_request_exec(channel.get(), command.c_str()) != SSH_OK)
      return failure("cannot start the command");
    if (!options.stdin_data.empty() && !write_all(channel.get(), options.stdin_data))
      return failure("cannot send the command's input");
    ssh_channel_send_eof(channel.get());

    int timeout_s = options.timeout.count() > 0 ? static_cast<int>(options.timeout.count()) : default_timeout_s_;
    auto deadline = timeout_s > 0 ? Clock::now() + std::chrono::seconds(timeout_s) : Clock::time_point::max();
    CommandResult result;
    auto drained = read_until_eof(channel.get(), deadline, result, options.on_output);
    if (!drained) {
      if (drained.error().kind == Failure::timeout) {
        ssh_channel_request_send_signal(channel.get(), "TERM");
        return RemoteError{Failure::timeout, label_ + ": command timed out after " +
                                                 std::to_string(timeout_s) + "s: " + abbreviate(command)};
      }
      return drained.error();
    }
    int status = ssh_channel_get_exit_status(channel.get());
    result.exit_status = status < 0 ? 255 : status;
    return result;
  }

  Remote<void> upload(const std::string& content, const std::string& remote_path, mode_t mode) override {
    size_t offset = 0;
    return upload_stream(remote_path, mode, [&](char* buffer, size_t size) -> Expected<size_t> {
      size_t n = std::min(size, content.size() - offset);
      std::memcpy(buffer, content.data() + offset, n);
      offset += n;
      return n;
    });
  }

  Remote<void> upload_file(const std::string& local_path, const std::string& remote_path) override {
    return upload_file_reporting(local_path, remote_path, {});
  }

  Remote<void> upload_file_reporting(const std::string& local_path, const std::string& remote_path,
                                     const UploadProgress& progress) override {
    uint64_t sent = 0;
    int fd = ::open(local_path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat info;
    if (fd < 0 || ::fstat(fd, &info) != 0) {
      std::string reason = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return RemoteError{Failure::other, label_ + ": cannot read " + local_path + ": " + reason};
    }
    auto uploaded = upload_stream(remote_path, info.st_mode & 07777,
                                  [&](char* buffer, size_t size) -> Expected<size_t> {
                                    for (;;) {
                                      // The bytes read last were written when the next chunk is asked for.
                                      if (progress && sent > 0) progress(sent);
                                      ssize_t n = ::read(fd, buffer, size);
                                      if (n >= 0) {
                                        sent += static_cast<uint64_t>(n);
                                        return static_cast<size_t>(n);
                                      }
                                      if (errno != EINTR)
                                        return make_error("cannot read " + local_path + ": " + std::strerror(errno));
                                    }
                                  });
    ::close(fd);
    return uploaded;
  }

  Remote<std::string> download(const std::string& remote_path) override {
    auto sftp = open_sftp();
    if (!sftp) return sftp.error();
    SftpFileHandle file(sftp_open(*sftp, remote_path.c_str(), O_RDONLY, 0));
    if (!file) return sftp_failure("cannot open " + remote_path);
    std::string content;
    char buffer[kChunk];
    for (;;) {
      ssize_t n = sftp_read(file.get(), buffer, sizeof buffer);
      if (n < 0) return sftp_failure("cannot read " + remote_path);
      if (n == 0) return content;
      content.append(buffer, static_cast<size_t>(n));
    }
  }

  Remote<RemoteFileInfo> stat(const std::string& remote_path) override {
    auto sftp = open_sftp();
    if (!sftp) return sftp.error();
    sftp_attributes attributes = sftp_stat(*sftp, remote_path.c_str());
    if (!attributes) {
      if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE) return RemoteFileInfo{};
      return sftp_failure("cannot stat " + remote_path);
    }
    RemoteFileInfo info;
    info.exists = true;
    info.is_directory = attributes->type == SSH_FILEXFER_TYPE_DIRECTORY;
    info.mode = attributes->permissions & 07777;
    info.size = attributes->size;
    sftp_attributes_free(attributes);
    return info;
  }

  Remote<void> mkdir(const std::string& remote_path, mode_t mode) override {
    auto sftp = open_sftp();
    if (!sftp) return sftp.error();
    for (size_t end = remote_path.find('/', 1);; end = remote_path.find('/', end + 1)) {
      std::string prefix = remote_path.substr(0, end);
      if (!prefix.empty() && prefix.back() != '/') {
        auto info = stat(prefix);
        if (!info) return info.error();
        if (!info->exists) {
          if (sftp_mkdir(*sftp, prefix.c_str(), mode) != SSH_OK &&
              sftp_get_error(*sftp) != SSH_FX_FILE_ALREADY_EXISTS)  // lost a race: fine
            return sftp_failure("cannot create directory " + prefix);
        } else if (!info->is_directory) {
          return RemoteError{Failure::other, label_ + ": cannot create directory " + remote_path + ": " +
                                                 prefix + " exists and is not a directory"};
        }
      }
      if (end == std::string::npos) return {};
    }
  }

 private:
  RemoteError failure(const std::string& what) const {
    return RemoteError{Failure::other, label_ + ": " + what + ": " + ssh_get_error(session_.get())};
  }

  RemoteError sftp_failure(const std::string& what) const {
    return RemoteError{Failure::other, label_ + ": " + what + ": " + sftp_error_text(sftp_get_error(sftp_))};
  }

  static std::string abbreviate(const std::string& command) {
    std::string line = command.substr(0, command.find('\n'));
    return line.size() > 80 || line.size() < command.size() ? line.substr(0, 80) + "..." : line;
  }

  static bool write_all(ssh_channel channel, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      int n = ssh_channel_write(channel, data.data() + done,
                                static_cast<uint32_t>(std::min(data.size() - done, kChunk)));
      if (n < 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads stdout and stderr as they come (either can fill up while we wait
  // on the other) until the remote side sends EOF or the deadline passes.
  // The event loop wakes on any packet, whichever stream it carries.
  using OnOutput = std::function<void(bool, std::string_view)>;
  Remote<void> read_until_eof(ssh_channel channel, Clock::time_point deadline, CommandResult& result,
                              const OnOutput& on_output = {}) {
    std::unique_ptr<ssh_event_struct, void (*)(ssh_event)> event(ssh_event_new(), ssh_event_free);
    if (!event || ssh_event_add_session(event.get(), session_.get()) != SSH_OK)
      return failure("cannot wait for the command's output");
    auto drained = drain(channel, event.get(), deadline, result, on_output);
    ssh_event_remove_session(event.get(), session_.get());
    return drained;
  }

  Remote<void> drain(ssh_channel channel, ssh_event event, Clock::time_point deadline, CommandResult& result,
                     const OnOutput& on_output) {
    char buffer[kChunk];
    for (;;) {
      bool progress = false;
      for (int is_stderr = 0; is_stderr <= 1; ++is_stderr) {
        int n = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, is_stderr);
        if (n == SSH_ERROR) return failure("connection lost while reading the command's output");
        if (n > 0) {
          (is_stderr ? result.err : result.out).append(buffer, static_cast<size_t>(n));
          if (on_output) on_output(is_stderr != 0, std::string_view(buffer, static_cast<size_t>(n)));
          progress = true;
        }
      }
      if (progress) continue;
      if (ssh_channel_is_eof(channel) || ssh_channel_is_closed(channel)) return {};
      auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return RemoteError{Failure::timeout, ""};
      auto wait = std::min<Clock::duration>(left, std::chrono::seconds(1));
      int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) + 1;
      if (ssh_event_dopoll(event, wait_ms) == SSH_ERROR && !ssh_is_connected(session_.get()))
        return failure("connection lost while waiting for the command");
    }
  }

  Remote<sftp_session> open_sftp() {
    if (sftp_) return sftp_;
    sftp_session sftp = sftp_new(session_.get());
    if (!sftp) return failure("cannot start SFTP");
    if (sftp_init(sftp) != SSH_OK) {
      auto error = failure("the host has no SFTP subsystem (install openssh-sftp-server)");
      sftp_free(sftp);
      return error;
    }
    sftp_ = sftp;
    return sftp_;
  }

  // A temp file beside the target with the exact mode, then renamed over it.
  Remote<void> upload_stream(const std::string& remote_path, mode_t mode,
                             const std::function<Expected<size_t>(char*, size_t)>& read_chunk) {
    auto sftp = open_sftp();
    if (!sftp) return sftp.error();
    std::string temp = remote_path + ".xftctl-tmp-" + random_suffix();
    auto written = write_temp(*sftp, temp, mode, read_chunk);
    if (written) written = replace(*sftp, temp, remote_path);
    if (!written) sftp_unlink(*sftp, temp.c_str());
    return written;
  }

  // SFTPv3 rename refuses an existing target and libssh 0.10 cannot send
  // posix-rename@openssh.com, so replacing goes through mv (rename(2), atomic).
  Remote<void> replace(sftp_session sftp, const std::string& from, const std::string& to) {
    if (sftp_rename(sftp, from.c_str(), to.c_str()) == SSH_OK) return {};
    auto moved = run("mv -f -- " + shell_quote(from) + " " + shell_quote(to), {});
    if (!moved) return moved.error();
    // A bind-mounted target (a container's /etc/hosts, our test hosts') cannot
    // be replaced by rename (EBUSY): rewrite it in place, then drop the temp.
    if (moved->exit_status != 0 && moved->err.find("busy") != std::string::npos)
      moved = run("test ! -L " + shell_quote(to) + " && cat -- " + shell_quote(from) + " > " + shell_quote(to) +
                      " && rm -f -- " + shell_quote(from),
                  {});
    if (!moved) return moved.error();
    if (moved->exit_status != 0)
      return RemoteError{Failure::other, label_ + ": cannot rename " + from + " onto " + to + ": " +
                                             moved->err.substr(0, moved->err.find('\n'))};
    return {};
  }

  static std::string shell_quote(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
  }

  Remote<void> write_temp(sftp_session sftp, const std::string& temp, mode_t mode,
                          const std::function<Expected<size_t>(char*, size_t)>& read_chunk) {
    SftpFileHandle file(sftp_open(sftp, temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0600));
    if (!file) return sftp_failure("cannot create " + temp);
    char buffer[kChunk];
    for (;;) {
      auto n = read_chunk(buffer, sizeof buffer);
      if (!n) return RemoteError{Failure::other, label_ + ": " + n.error().message};
      if (*n == 0) break;
      for (size_t done = 0; done < *n;) {
        ssize_t sent = sftp_write(file.get(), buffer + done, *n - done);
        if (sent < 0) return sftp_failure("cannot write " + temp);
        done += static_cast<size_t>(sent);
      }
    }
    file.reset();
    // chmod after writing: the open mode is filtered by the server's umask.
    if (sftp_chmod(sftp, temp.c_str(), mode) != SSH_OK) return sftp_failure("cannot chmod " + temp);
    return {};
  }

  std::vector<std::unique_ptr<Tunnel>> tunnels_;  // outlive session_, whose socket they carry
  SessionHandle session_;
  sftp_session sftp_ = nullptr;
  inventory::Host host_;
  std::string label_;
  std::string host_key_;
  int default_timeout_s_;
};

}  // namespace

std::string default_known_hosts_path() {
  if (const char* path = std::getenv("XFTCTL_KNOWN_HOSTS"); path && *path) return path;
  return xftctl_config_dir() + "/known_hosts";
}

SshTransport::SshTransport(SshOptions options, std::shared_ptr<PasswordSource> passwords, Notice notice)
    : options_(std::move(options)), passwords_(std::move(passwords)), notice_(std::move(notice)) {
  known_hosts_explicit_ = known_hosts_named(options_);
  if (options_.known_hosts_path.empty()) options_.known_hosts_path = default_known_hosts_path();
}

bool known_hosts_named(const SshOptions& options) {
  const char* from_environment = std::getenv("XFTCTL_KNOWN_HOSTS");
  return !options.known_hosts_path.empty() || (from_environment && *from_environment);
}

HostKeyCheck host_key_check_for(const inventory::Host& host, const SshOptions& options, bool known_hosts_explicit) {
  HostKeyCheck check;
  check.known_hosts = known_hosts_explicit || host.host_keys.known_hosts.empty() ? options.known_hosts_path
                                                                                 : host.host_keys.known_hosts;
  check.accept_new = options.accept_new_host_keys || host.host_keys.accept_new.value_or(false);
  return check;
}

KnownHostsStore& SshTransport::known_hosts_for(const HostKeyCheck& check) {
  std::lock_guard lock(stores_mutex_);
  auto& store = stores_[{check.known_hosts, check.accept_new}];
  if (!store) store = std::make_unique<KnownHostsStore>(check.known_hosts, check.accept_new, notice_);
  return *store;
}

SshTransport::~SshTransport() = default;

namespace {

Remote<void> set_session_options(ssh_session session, const inventory::Host& host, const SshOptions& options,
                                 const std::string& known_hosts_path, const std::string& label, int socket) {
  bool process_config = false;
  int nodelay = 1;
  long timeout = std::max(options.connect_timeout_s, 1);
  unsigned port = static_cast<unsigned>(host.port);
  // Our own file for the host key algorithm preference too: libssh then asks
  // for the key type already recorded instead of tripping a "changed" check.
  const char* known_hosts = known_hosts_path.c_str();
  bool ok = ssh_options_set(session, SSH_OPTIONS_PROCESS_CONFIG, &process_config) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_HOST, host.address.c_str()) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_PORT, &port) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_USER, host.user.c_str()) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &timeout) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_NODELAY, &nodelay) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_KNOWNHOSTS, known_hosts) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, known_hosts) == SSH_OK;
  if (ok && socket >= 0) {
    socket_t fd = socket;
    ok = ssh_options_set(session, SSH_OPTIONS_FD, &fd) == SSH_OK;
  }
  if (!ok) return RemoteError{Failure::other, label + ": bad SSH option: " + ssh_get_error(session)};
  return {};
}

Remote<std::string> server_key(ssh_session session, const std::string& label, std::string& type) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK)
    return RemoteError{Failure::other, label + ": the server sent no host key: " + ssh_get_error(session)};
  char* base64 = nullptr;
  int rc = ssh_pki_export_pubkey_base64(key, &base64);
  type = ssh_key_type_to_char(ssh_key_type(key));
  ssh_key_free(key);
  if (rc != SSH_OK) return RemoteError{Failure::other, label + ": cannot encode the server's host key"};
  std::string text = base64;
  ssh_string_free_char(base64);
  return text;
}

Remote<void> authenticate(ssh_session session, const inventory::Host& host, const std::string& label,
                          PasswordSource* passwords);

}  // namespace

namespace {

// A bastion as a host of its own: its key checked in the same known_hosts,
// its login by key (the host's key when the inventory names one), never by
// the host's password.
inventory::Host bastion_host(const inventory::JumpHost& jump, const inventory::Host& behind) {
  inventory::Host bastion;
  bastion.name = "bastion " + jump.text();
  bastion.address = jump.address;
  bastion.port = jump.port;
  bastion.user = jump.user.empty() ? behind.user : jump.user;
  bastion.credentials.key = behind.credentials.key;
  bastion.host_keys = behind.host_keys;
  return bastion;
}

// Connected, host key verified, authenticated; over `socket` (a tunnel's end,
// which the session then owns) when >= 0. Sets `host_key`.
Remote<SessionHandle> open_session(const SshOptions& options, KnownHostsStore& known_hosts, PasswordSource* passwords,
                                   const inventory::Host& host, const std::string& label, int socket,
                                   std::string& host_key) {
  SessionHandle session(ssh_new());
  if (!session) {
    if (socket >= 0) ::close(socket);
    return RemoteError{Failure::other, label + ": cannot allocate an SSH session"};
  }
  if (auto set = set_session_options(session.get(), host, options, known_hosts.path(), label, socket); !set) {
    if (socket >= 0) ::close(socket);
    return set.error();
  }

  spdlog::debug("{}: connecting as {}", label, host.user);
  if (ssh_connect(session.get()) != SSH_OK) {
    std::string error = ssh_get_error(session.get());
    return RemoteError{is_unreachable(error) ? Failure::unreachable : Failure::other,
                       label + ": " + (is_unreachable(error) ? "unreachable: " : "SSH handshake failed: ") + error};
  }

  std::string key_type;
  auto key = server_key(session.get(), label, key_type);
  if (!key) return key.error();
  if (auto trusted = known_hosts.verify(host.name, label, host.address, host.port, key_type, *key); !trusted)
    return trusted.error();

  if (auto authenticated = authenticate(session.get(), host, label, passwords); !authenticated)
    return authenticated.error();
  spdlog::debug("{}: authenticated", label);
  host_key = key_type + " " + *key;
  return session;
}

}  // namespace

Remote<std::unique_ptr<RemoteSession>> SshTransport::connect(const inventory::Host& inventory_host) {
  init_libssh_once();
  auto configured = apply_ssh_config(inventory_host, options_.ssh_config);
  if (!configured) return RemoteError{Failure::other, configured.error().message};
  const inventory::Host& host = *configured;
  std::string label = host_label(host);
  // Through each bastion in turn: the first one directly, every next hop
  // (the second bastion, then the host) over a channel of the one before.
  KnownHostsStore& known_hosts = known_hosts_for(host_key_check_for(host, options_, known_hosts_explicit_));
  std::vector<std::unique_ptr<Tunnel>> tunnels;
  int socket = -1;
  for (size_t i = 0; i < host.jump.size(); ++i) {
    inventory::Host bastion = bastion_host(host.jump[i], host);
    std::string bastion_label = label + " via " + bastion.name;
    std::string ignored_key;
    auto session = open_session(options_, known_hosts, passwords_.get(), bastion, bastion_label, socket, ignored_key);
    if (!session) return session.error();
    bool last = i + 1 == host.jump.size();
    const std::string& next_address = last ? host.address : host.jump[i + 1].address;
    int next_port = last ? host.port : host.jump[i + 1].port;
    auto tunnel = Tunnel::open(std::move(*session), bastion_label, next_address, next_port);
    if (!tunnel) return tunnel.error();
    socket = (*tunnel)->take_socket();
    tunnels.push_back(std::move(*tunnel));
  }
  std::string host_key;
  auto session = open_session(options_, known_hosts, passwords_.get(), host, label, socket, host_key);
  if (!session) return session.error();
  return std::unique_ptr<RemoteSession>(new SshSession(std::move(tunnels), std::move(*session), host, host_key,
                                                       options_.command_timeout_s));
}

namespace {

Remote<void> authenticate(ssh_session session, const inventory::Host& host, const std::string& label,
                          PasswordSource* passwords) {
  int rc = ssh_userauth_none(session, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return {};
  if (rc == SSH_AUTH_ERROR)
    return RemoteError{Failure::other, label + ": authentication error: " + ssh_get_error(session)};
  int methods = ssh_userauth_list(session, nullptr);
  std::vector<std::string> tried;

  for (const auto& path : key_candidates(host)) {
    if (!(methods & SSH_AUTH_METHOD_PUBLICKEY)) {
      tried.push_back("key " + path + " (the server does not accept keys)");
      break;
    }
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) {
      tried.push_back("key " + path + " (" + std::strerror(errno) + ")");
      continue;
    }
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(path.c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK) {
      tried.push_back("key " + path + " (unreadable or passphrase-protected; passphrases are not supported)");
      continue;
    }
    rc = ssh_userauth_publickey(session, nullptr, key);
    ssh_key_free(key);
    if (rc == SSH_AUTH_SUCCESS) return {};
    if (rc == SSH_AUTH_ERROR)
      return RemoteError{Failure::other, label + ": authentication error: " + ssh_get_error(session)};
    tried.push_back("key " + path + " (rejected)");
  }

  if (PasswordSource::has_password(host)) {
    auto password = passwords ? passwords->password_for(host)
                              : Expected<std::string>(make_error(label + ": no password source"));
    if (!password)
      return RemoteError{Failure::auth_failed, label + ": authentication failed: " + password.error().message};
    if (methods & SSH_AUTH_METHOD_PASSWORD)
      rc = ssh_userauth_password(session, nullptr, password->c_str());
    else if (methods & SSH_AUTH_METHOD_INTERACTIVE)
      rc = password_by_keyboard_interactive(session, *password);
    else
      rc = SSH_AUTH_DENIED;
    ::explicit_bzero(password->data(), password->size());
    if (rc == SSH_AUTH_SUCCESS) return {};
    if (rc == SSH_AUTH_ERROR)
      return RemoteError{Failure::other, label + ": authentication error: " + ssh_get_error(session)};
    tried.push_back(describe_credential(host) + " (rejected)");
  }

  if (tried.empty())
    return RemoteError{Failure::auth_failed,
                       label + ": no credentials: the inventory gives this host no key, password_env or "
                               "password_prompt, and neither " + xftctl_config_dir() +
                           "/id_ed25519 nor ~/.ssh/id_ed25519 exists"};
  std::string list;
  for (const auto& attempt : tried) list += (list.empty() ? "" : ", ") + attempt;
  return RemoteError{Failure::auth_failed, label + ": authentication failed for user " + host.user +
                                               ": tried " + list + "; the server accepts " +
                                               method_names(methods)};
}

}  // namespace

}  // namespace xft::remote
