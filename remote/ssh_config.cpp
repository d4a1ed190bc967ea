#include "remote/ssh_config.h"

#include <libssh/libssh.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>

#include "inventory/grammar.h"
#include "remote/credentials.h"

namespace xft::remote {
namespace {

std::string option(ssh_session session, enum ssh_options_e which) {
  char* value = nullptr;
  if (ssh_options_get(session, which, &value) != SSH_OK || !value) return "";
  std::string text = value;
  ssh_string_free_char(value);
  return text;
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

Expected<inventory::JumpHost> jump_host(const std::string& text) {
  inventory::JumpHost jump;
  if (auto problem = inventory::check_jump_host(text, &jump)) return make_error(*problem);
  return jump;
}

using SessionPtr = std::unique_ptr<ssh_session_struct, void (*)(ssh_session)>;

// A session that has read `config_path` for `host_name` (nothing else: the
// system config and ~/.ssh/config only when they are `config_path`).
Expected<SessionPtr> parsed_session(const std::string& host_name, const std::string& config_path,
                                    const std::string& where) {
  SessionPtr session(ssh_new(), ssh_free);
  if (!session) return make_error(where + "cannot allocate an SSH session");
  bool process_config = false;
  ssh_options_set(session.get(), SSH_OPTIONS_PROCESS_CONFIG, &process_config);
  if (ssh_options_set(session.get(), SSH_OPTIONS_HOST, host_name.c_str()) != SSH_OK ||
      ssh_options_parse_config(session.get(), config_path.c_str()) != SSH_OK)
    return make_error(where + "cannot read the SSH config: " + ssh_get_error(session.get()) +
                      " (fix it, or pass --ssh-config none)");
  return session;
}

constexpr size_t kMaxConfigBytes = 1 << 20;

Expected<std::string> read_config_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read the SSH config (fix it, or pass --ssh-config none)");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    return make_error(path + ": larger than 1 MiB; not an SSH client config (or pass --ssh-config none)");
  return text;
}

bool same_keyword(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

// libssh parses StrictHostKeyChecking into a flag it keeps no getter for (and
// drops accept-new), and keeps every IdentityFile with the last one first,
// where OpenSSH uses the first one first. So `keyword`'s lines are renamed to
// GlobalKnownHostsFile, a string libssh gives back with OpenSSH's first-value
// rule and that xftctl does not use otherwise, and libssh's own Host and
// Match logic picks which line applies. (Lines in Include'd files keep their
// own name: those two keywords are read from the main file only.)
std::string renamed_to_probe(const std::string& text, std::string_view keyword) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    size_t start = line.find_first_not_of(" \t");
    size_t end = start == std::string::npos ? start : line.find_first_of(" \t=", start);
    std::string_view word = start == std::string::npos
                                ? std::string_view()
                                : std::string_view(line).substr(start, end == std::string::npos ? end : end - start);
    if (same_keyword(word, keyword))
      line = line.substr(0, start) + "GlobalKnownHostsFile" + (end == std::string::npos ? "" : line.substr(end));
    else if (same_keyword(word, "GlobalKnownHostsFile"))
      line = "#" + line;
    out += line + "\n";
  }
  return out;
}

// The value of `keyword` that applies to `host_name`; "" when none does.
// The renamed config goes to libssh through a memfd: nothing lands on disk.
Expected<std::string> first_value_of(const std::string& text, std::string_view keyword,
                                     const std::string& host_name, const std::string& where) {
  int fd = ::memfd_create("xftctl-ssh-config", MFD_CLOEXEC);
  if (fd < 0) return make_error(where + "cannot read " + std::string(keyword) + ": memfd_create failed");
  std::string probe = renamed_to_probe(text, keyword);
  bool written = ::write(fd, probe.data(), probe.size()) == static_cast<ssize_t>(probe.size());
  auto session = written ? parsed_session(host_name, "/proc/self/fd/" + std::to_string(fd), where)
                         : Expected<SessionPtr>(make_error(where + "cannot read " + std::string(keyword)));
  ::close(fd);
  if (!session) return session.error();
  return option(session->get(), SSH_OPTIONS_GLOBAL_KNOWNHOSTS);
}

std::string local_user_name() {
  if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_name) return entry->pw_name;
  const char* user = std::getenv("USER");
  return user ? user : "";
}

}  // namespace

Expected<std::string> expand_config_path(const std::string& value, const inventory::Host& host) {
  std::string path;
  size_t i = 0;
  if (value == "~" || value.rfind("~/", 0) == 0) {
    path = home_directory();
    i = 1;
  }
  for (; i < value.size(); ++i) {
    if (value[i] != '%') {
      path += value[i];
      continue;
    }
    char token = i + 1 < value.size() ? value[++i] : '\0';
    switch (token) {
      case '%': path += '%'; break;
      case 'd': path += home_directory(); break;
      case 'u': path += local_user_name(); break;
      case 'h': path += host.address; break;
      case 'r': path += host.user; break;
      case 'p': path += std::to_string(host.port); break;
      default:
        return make_error("`" + inventory::printable(value) + "`: %" + std::string(1, token) +
                          " is not expanded by xftctl (it knows ~, %d, %u, %h, %r, %p and %%; write the path "
                          "without it)");
    }
  }
  return path;
}

Expected<std::optional<bool>> accept_new_from_strict_host_key_checking(const std::string& value) {
  if (value.empty()) return std::optional<bool>();
  for (const char* yes : {"yes", "ask"})
    if (same_keyword(value, yes)) return std::optional<bool>(false);
  for (const char* accept : {"accept-new", "no", "off"})
    if (same_keyword(value, accept)) return std::optional<bool>(true);
  return make_error("`" + inventory::printable(value) + "` is not yes, ask, accept-new, no or off");
}

Expected<inventory::JumpHost> resolve_bastion(const inventory::JumpHost& jump, const std::string& config_path);

std::string default_ssh_config_path() {
  std::string path = home_directory() + "/.ssh/config";
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? path : "";
}

Expected<std::vector<inventory::JumpHost>> jump_chain_from_proxy_command(const std::string& command) {
  const std::string refused = "ProxyCommand `" + inventory::printable(command) +
                              "` is not run by xftctl (write the bastion as ProxyJump [user@]host[:port], or "
                              "jump: in the inventory)";
  auto words = words_of(command);
  size_t i = 0;
  if (words.empty() || words[i++] != "ssh") return make_error(refused);
  std::string user, port, next;
  for (; i + 1 < words.size() && words[i] != "-W"; i += 2) {
    if (words[i] == "-l" && user.empty()) user = words[i + 1];
    else if (words[i] == "-p" && port.empty()) port = words[i + 1];
    else if (words[i] == "-J" && next.empty()) next = words[i + 1];
    else return make_error(refused);
  }
  if (i + 3 != words.size() || words[i] != "-W" || words[i + 1] != "'[%h]:%p'") return make_error(refused);
  std::string first = (user.empty() ? "" : user + "@") + words[i + 2] + (port.empty() ? "" : ":" + port);
  std::vector<inventory::JumpHost> chain;
  for (const auto& text : {first}) {
    auto jump = jump_host(text);
    if (!jump) return jump.error();
    chain.push_back(*jump);
  }
  for (size_t start = 0; !next.empty();) {
    size_t comma = next.find(',', start);
    auto jump = jump_host(next.substr(start, comma - start));
    if (!jump) return jump.error();
    chain.push_back(*jump);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (chain.size() > inventory::kMaxJumpHosts)
    return make_error(std::to_string(chain.size()) + " bastions in a row in ProxyJump (at most " +
                      std::to_string(inventory::kMaxJumpHosts) + ")");
  return chain;
}

// A ProxyJump hop is a config alias too ("ProxyJump bastion" with its own
// Host bastion block), as OpenSSH reads it; its own ProxyJump is not followed.
Expected<inventory::JumpHost> resolve_bastion(const inventory::JumpHost& jump, const std::string& config_path) {
  inventory::Host hop;
  hop.name = jump.address;
  hop.address = jump.address;
  hop.user = jump.user;
  hop.port = jump.port;
  hop.given.user = !jump.user.empty();
  hop.given.port = jump.port != 22;
  hop.given.jump = true;
  auto resolved = apply_ssh_config(hop, config_path);
  if (!resolved) return resolved.error();
  return inventory::JumpHost{resolved->user, resolved->address, resolved->port};
}

namespace {

// IdentityFile, UserKnownHostsFile and StrictHostKeyChecking into `host`
// (already resolved: their %h, %r and %p are its address, user and port).
// The inventory's key wins over IdentityFile.
Expected<void> apply_host_key_and_identity(inventory::Host& host, ssh_session session, const std::string& config_path,
                                           const std::string& where) {
  auto text = read_config_text(config_path);
  if (!text) return text.error();
  if (host.credentials.key.empty()) {
    auto identity = first_value_of(*text, "IdentityFile", host.name, where);
    if (!identity) return identity.error();
    if (!identity->empty()) {
      auto path = expand_config_path(*identity, host);
      if (!path) return make_error(where + "IdentityFile " + path.error().message);
      if (auto problem = inventory::check_key_path(*path)) return make_error(where + "IdentityFile: " + *problem);
      host.credentials.key = *path;
    }
  }
  if (std::string known_hosts = option(session, SSH_OPTIONS_KNOWNHOSTS); !known_hosts.empty()) {
    auto path = expand_config_path(known_hosts, host);
    if (!path) return make_error(where + "UserKnownHostsFile " + path.error().message);
    if (auto problem = inventory::check_key_path(*path))
      return make_error(where + "UserKnownHostsFile: " + *problem);
    host.host_keys.known_hosts = *path;
  }
  auto strict = first_value_of(*text, "StrictHostKeyChecking", host.name, where);
  if (!strict) return strict.error();
  auto accept_new = accept_new_from_strict_host_key_checking(*strict);
  if (!accept_new) return make_error(where + "StrictHostKeyChecking " + accept_new.error().message);
  host.host_keys.accept_new = *accept_new;
  return {};
}

}  // namespace

Expected<inventory::Host> apply_ssh_config(const inventory::Host& host, const std::string& config_path) {
  if (config_path.empty()) return host;
  struct stat info;
  if (::stat(config_path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return make_error(config_path + ": no such file (give an OpenSSH client config, or --ssh-config none)");
  const std::string where = config_path + ": " + host.name + ": ";
  auto parsed = parsed_session(host.name, config_path, where);
  if (!parsed) return parsed.error();
  ssh_session session = parsed->get();
  inventory::Host resolved = host;
  auto checked = [&](const std::string& value, inventory::Problem (*check)(std::string_view),
                     const char* keyword) -> Expected<std::string> {
    if (auto problem = check(value)) return make_error(where + keyword + ": " + *problem);
    return value;
  };
  if (!host.given.address) {
    auto address = checked(option(session, SSH_OPTIONS_HOST), inventory::check_address, "HostName");
    if (!address) return address.error();
    resolved.address = *address;
  }
  if (!host.given.user) {
    if (std::string user = option(session, SSH_OPTIONS_USER); !user.empty()) {
      auto valid = checked(user, inventory::check_user_name, "User");
      if (!valid) return valid.error();
      resolved.user = *valid;
    }
  }
  if (!host.given.port) {
    unsigned int port = 22;
    if (ssh_options_get_port(session, &port) == SSH_OK && port > 0 && port < 65536)
      resolved.port = static_cast<int>(port);
  }
  if (!host.given.jump) {
    if (std::string command = option(session, SSH_OPTIONS_PROXYCOMMAND); !command.empty()) {
      auto chain = jump_chain_from_proxy_command(command);
      if (!chain) return make_error(where + chain.error().message);
      for (auto& jump : *chain) {
        auto hop = resolve_bastion(jump, config_path);
        if (!hop) return hop.error();
        jump = *hop;
        if (jump.user.empty()) jump.user = resolved.user;
      }
      resolved.jump = std::move(*chain);
    }
  }
  if (auto keys = apply_host_key_and_identity(resolved, session, config_path, where); !keys) return keys.error();
  return resolved;
}

}  // namespace xft::remote
