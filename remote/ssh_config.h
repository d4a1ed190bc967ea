// An OpenSSH client config (~/.ssh/config) read through libssh's own parser
// (ssh_options_parse_config: Host and Match blocks, HostName, User, Port,
// ProxyJump, IdentityFile, UserKnownHostsFile, StrictHostKeyChecking), for an
// inventory that names host aliases. Inventory values win: the config fills
// in only what the inventory left unset (Host::given, a key of its own); the
// host-key settings go to Host::host_keys, which only the command line's
// --known-hosts and --accept-new-host-keys outrank.
//
// libssh 0.10 turns ProxyJump into the ProxyCommand `ssh [-l U] [-p P] [-J
// NEXT] -W '[%h]:%p' HOST` for the OpenSSH client to run; xftctl runs no
// ProxyCommand (it would check the bastion's key elsewhere, and a command
// from a config file is not a bastion), so that exact form is read back as
// the bastion chain and any other ProxyCommand is refused with the fix.
//
// libssh 0.10 matches the Host blocks after a HostName against the new name,
// not the alias (OpenSSH keeps the alias): a HostName belongs in the last
// block that matches its alias.
#pragma once

#include <optional>
#include <string>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::remote {

// ~/.ssh/config when it exists, else "" (none).
std::string default_ssh_config_path();

// `host` with what `config_path` says for its name filled in; `config_path`
// empty: `host` as is. An error is one line naming the file and the host.
Expected<inventory::Host> apply_ssh_config(const inventory::Host& host, const std::string& config_path);

// The bastion chain of libssh's ProxyJump command (see above); an error
// when `command` is any other ProxyCommand.
Expected<std::vector<inventory::JumpHost>> jump_chain_from_proxy_command(const std::string& command);

// An IdentityFile or UserKnownHostsFile value as OpenSSH expands it: a
// leading ~, %d (home), %u (local user), %h, %r, %p (the host's address,
// login user and port) and %%; any other %-token is an error naming it.
Expected<std::string> expand_config_path(const std::string& value, const inventory::Host& host);

// StrictHostKeyChecking's value: accept-new, no and off trust a new key
// (true; a changed key is still refused), yes and ask do not (false: xftctl
// never asks), "" leaves it to the command line (nullopt).
Expected<std::optional<bool>> accept_new_from_strict_host_key_checking(const std::string& value);

}  // namespace xft::remote
