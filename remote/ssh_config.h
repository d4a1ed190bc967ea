// An OpenSSH client config (~/.ssh/config) read through libssh's own parser
// (ssh_options_parse_config: Host and Match blocks, HostName, User, Port,
// ProxyJump), for an inventory that names host aliases. Inventory values win:
// the config fills in only what the inventory left unset (Host::given).
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

}  // namespace xft::remote
