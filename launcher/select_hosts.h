// `--hosts PATTERN`: which inventory hosts a command runs on.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::launcher {

// Hosts selected by PATTERN, in inventory order, each once: comma-separated
// host names, addresses, group names, ClusterShell ranges ("h[01-03]") and
// globs ("h0*"). An item that matches nothing is an error, so a typo cannot
// silently shrink a run. An empty pattern selects every host.
Expected<std::vector<inventory::Host>> select_hosts(const inventory::Inventory& inventory,
                                                    const std::string& pattern);

}  // namespace xft::launcher
