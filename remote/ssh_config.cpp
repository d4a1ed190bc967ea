#include "remote/ssh_config.h"

#include <libssh/libssh.h>
#include <sys/stat.h>

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

}  // namespace

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

Expected<inventory::Host> apply_ssh_config(const inventory::Host& host, const std::string& config_path) {
  if (config_path.empty()) return host;
  struct stat info;
  if (::stat(config_path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return make_error(config_path + ": no such file (give an OpenSSH client config, or --ssh-config none)");
  std::unique_ptr<ssh_session_struct, void (*)(ssh_session)> session(ssh_new(), ssh_free);
  const std::string where = config_path + ": " + host.name + ": ";
  if (!session) return make_error(where + "cannot allocate an SSH session");
  bool process_config = false;
  ssh_options_set(session.get(), SSH_OPTIONS_PROCESS_CONFIG, &process_config);
  if (ssh_options_set(session.get(), SSH_OPTIONS_HOST, host.name.c_str()) != SSH_OK ||
      ssh_options_parse_config(session.get(), config_path.c_str()) != SSH_OK)
    return make_error(where + "cannot read the SSH config: " + ssh_get_error(session.get()) +
                      " (fix it, or pass --ssh-config none)");
  inventory::Host resolved = host;
  auto checked = [&](const std::string& value, inventory::Problem (*check)(std::string_view),
                     const char* keyword) -> Expected<std::string> {
    if (auto problem = check(value)) return make_error(where + keyword + ": " + *problem);
    return value;
  };
  if (!host.given.address) {
    auto address = checked(option(session.get(), SSH_OPTIONS_HOST), inventory::check_address, "HostName");
    if (!address) return address.error();
    resolved.address = *address;
  }
  if (!host.given.user) {
    if (std::string user = option(session.get(), SSH_OPTIONS_USER); !user.empty()) {
      auto valid = checked(user, inventory::check_user_name, "User");
      if (!valid) return valid.error();
      resolved.user = *valid;
    }
  }
  if (!host.given.port) {
    unsigned int port = 22;
    if (ssh_options_get_port(session.get(), &port) == SSH_OK && port > 0 && port < 65536)
      resolved.port = static_cast<int>(port);
  }
  if (!host.given.jump) {
    if (std::string command = option(session.get(), SSH_OPTIONS_PROXYCOMMAND); !command.empty()) {
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
  return resolved;
}

}  // namespace xft::remote
