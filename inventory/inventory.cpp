#include "inventory/inventory.h"

namespace xft::inventory {

std::string JumpHost::text() const {
  std::string host = address.find(':') == std::string::npos ? address : "[" + address + "]";
  return (user.empty() ? "" : user + "@") + host + (port == 22 ? "" : ":" + std::to_string(port));
}

const Host* Inventory::find(const std::string& name_or_address) const {
  for (const auto& host : hosts)
    if (host.name == name_or_address || host.address == name_or_address) return &host;
  return nullptr;
}

}  // namespace xft::inventory
