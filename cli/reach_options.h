// What every command that talks to hosts shares (ping, exec, and later
// playbooks and setup): the SSH flags, the transport built from them, the
// --limit (--hosts) selection, and the exit code a set of host failures maps to.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"
#include "remote/fanout.h"
#include "remote/transport.h"

namespace xft::cli {

struct ReachFlags {
  bool accept_new_host_keys = false;
  std::string known_hosts;  // empty: $XFTCTL_KNOWN_HOSTS, else ~/.config/xftctl/known_hosts
  int fanout = remote::kDefaultFanout;
  int connect_timeout_s = 10;
  int timeout_s = 0;  // per command; 0 = none
  std::string hosts;  // -l/--limit/--hosts PATTERN; empty = every host
  std::string ssh_config;  // --ssh-config FILE|none; empty: ~/.ssh/config when it exists
};

// Adds --accept-new-host-keys, --known-hosts, -f/--fanout, --connect-timeout,
// --timeout and -l/--limit/--hosts, each unless the command already has that
// option (a short form is left out where the command uses the letter).
// Set flags.timeout_s first to change its default.
void add_reach_flags(CLI::App& command, ReachFlags& flags);

// libssh transport; passwords from the environment or a prompt; the host keys
// it trusts on first use are told on stderr, folded, when it is destroyed.
std::unique_ptr<remote::Transport> make_ssh_transport(const ReachFlags& flags);
// The OpenSSH client config the flags choose (--ssh-config FILE|none, else
// ~/.ssh/config when it exists); "" for none.
std::string ssh_config_path(const ReachFlags& flags);
// `hosts` with what that config fills in (address, user, bastions, key): for
// decisions made before any session opens, such as where mpirun runs.
Expected<std::vector<inventory::Host>> hosts_as_reached(std::vector<inventory::Host> hosts, const ReachFlags& flags);

// Locates and loads the inventory, then applies --limit (inventory::select_hosts).
Expected<std::vector<inventory::Host>> load_selected_hosts(const std::string& inventory_flag,
                                                           const std::string& pattern);

// 4 when any host was unreachable, else 2 when any failed, else 0.
int reach_exit_code(bool any_unreachable, bool any_failed);

}  // namespace xft::cli
