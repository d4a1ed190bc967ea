// Writing an inventory back as YAML (used by `inventory import`).
#pragma once

#include <string>

#include "inventory/inventory.h"

namespace xft::inventory {

// Compact YAML that parse_inventory reads back to the same hosts, in the same
// order: values shared by the hosts go to defaults, consecutive hosts that
// differ only by number fold into one ranged entry (node[1-4] with
// 192.168.0.[1-4]), and groups are listed as folded patterns.
std::string to_yaml(const Inventory& inventory);

}  // namespace xft::inventory
