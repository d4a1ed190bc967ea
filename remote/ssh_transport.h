// The libssh Transport: one SSH session per host, host keys checked against
// xftctl's own known_hosts, key then password authentication; a host behind
// bastions (inventory jump:) is reached through direct-tcpip channels of each
// bastion's own session, whose key is checked the same way. Reads an OpenSSH
// client config only when given one (SshOptions::ssh_config), and then only
// for what the inventory leaves unset; never logs a password.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "remote/credentials.h"
#include "remote/known_hosts.h"
#include "remote/transport.h"

namespace xft::remote {

struct SshOptions {
  std::string known_hosts_path;  // empty: default_known_hosts_path()
  bool accept_new_host_keys = false;
  int connect_timeout_s = 10;
  int command_timeout_s = 0;  // default for RunOptions::timeout; 0 = none
  // An OpenSSH client config whose Host blocks fill in what the inventory
  // leaves unset (ssh_config.h); empty: none.
  std::string ssh_config;
};

// $XFTCTL_KNOWN_HOSTS, else ~/.config/xftctl/known_hosts.
std::string default_known_hosts_path();

// Which known_hosts file checks a host's key, and whether a new key is
// trusted: --known-hosts or $XFTCTL_KNOWN_HOSTS (`known_hosts_explicit`), else
// the host's UserKnownHostsFile, else xftctl's own file; --accept-new-host-keys,
// else the host's StrictHostKeyChecking, else no.
struct HostKeyCheck {
  std::string known_hosts;
  bool accept_new = false;
  bool operator==(const HostKeyCheck&) const = default;
};
HostKeyCheck host_key_check_for(const inventory::Host& host, const SshOptions& options, bool known_hosts_explicit);
// Whether the command line or $XFTCTL_KNOWN_HOSTS names the known_hosts file
// (`options` as given, before the default is filled in).
bool known_hosts_named(const SshOptions& options);

class SshTransport : public Transport {
 public:
  using Notice = KnownHostsStore::Notice;
  // `notice` hears of each host key trusted on first use.
  SshTransport(SshOptions options, std::shared_ptr<PasswordSource> passwords, Notice notice);
  ~SshTransport() override;

  // Through the host's bastions (inventory jump:) when it has any.
  Remote<std::unique_ptr<RemoteSession>> connect(const inventory::Host& host) override;
  const SshOptions& options() const { return options_; }

 private:
  // One store per file and policy, made when a host first needs it.
  KnownHostsStore& known_hosts_for(const HostKeyCheck& check);

  SshOptions options_;
  bool known_hosts_explicit_ = false;
  std::shared_ptr<PasswordSource> passwords_;
  Notice notice_;
  std::mutex stores_mutex_;
  std::map<std::pair<std::string, bool>, std::unique_ptr<KnownHostsStore>> stores_;
};

}  // namespace xft::remote
