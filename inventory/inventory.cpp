#include "inventory/inventory.h"

namespace xft::inventory {

const Host* Inventory::find(const std::string& name_or_address) const {
  for (const auto& host : hosts)
    if (host.name == name_or_address || host.address == name_or_address) return &host;
  return nullptr;
}

}  // namespace xft::inventory
