// Human-readable views of an inventory: the `inventory show` table and the
// labels used in it. No secret is ever part of them.
#pragma once

#include <string>
#include <vector>

#include "inventory/inventory.h"

namespace xft::inventory {

// "key:/root/.ssh/id_ed25519", "env:XFT_SSH_PASSWORD", "prompt", or "auto"
// (no credential given: the SSH agent and ~/.ssh default keys are tried).
std::string auth_label(const Credentials& credentials);
// "2", "per-socket", "per-numa".
std::string ranks_label(const Ranks& ranks);
// Left-aligned columns separated by two spaces; empty cells print as "-".
std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);
// NAME ADDRESS USER PORT RANKS PROVIDER IFACE SHARED AUTH, one host a line.
std::string format_hosts_table(const Inventory& inventory);

}  // namespace xft::inventory
