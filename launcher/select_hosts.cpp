#include "launcher/select_hosts.h"

#include <fnmatch.h>

#include <set>

#include "inventory/load.h"

namespace xft::launcher {
namespace {

// Commas inside brackets belong to a range ("h[01-02,05]"), not to the list.
std::vector<std::string> split_items(const std::string& pattern) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : pattern) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  items.push_back(current);
  return items;
}

bool is_glob(const std::string& item) { return item.find_first_of("*?") != std::string::npos; }

// Names (or addresses) the item stands for; a group or glob is resolved by the caller.
Expected<std::vector<std::string>> literal_names(const std::string& item) {
  if (item.find('[') == std::string::npos) return std::vector<std::string>{item};
  return inventory::expand_range(item);
}

}  // namespace

Expected<std::vector<inventory::Host>> select_hosts(const inventory::Inventory& inventory,
                                                    const std::string& pattern) {
  if (pattern.empty()) return inventory.hosts;
  std::set<std::string> chosen;  // host names
  for (const auto& item : split_items(pattern)) {
    if (item.empty()) continue;
    bool matched = false;
    if (auto group = inventory.groups.find(item); group != inventory.groups.end()) {
      chosen.insert(group->second.begin(), group->second.end());
      matched = true;
    } else if (is_glob(item)) {
      for (const auto& host : inventory.hosts)
        if (::fnmatch(item.c_str(), host.name.c_str(), 0) == 0) chosen.insert(host.name), matched = true;
    } else {
      auto names = literal_names(item);
      if (!names) return make_error("--hosts: " + item + ": " + names.error().message);
      for (const auto& name : *names) {
        const inventory::Host* host = inventory.find(name);
        if (!host) return make_error("--hosts: " + name + " is not an inventory host or group (see xftctl inventory show)");
        chosen.insert(host->name);
      }
      matched = true;
    }
    if (!matched)
      return make_error("--hosts: " + item + " matches no inventory host or group (see xftctl inventory show)");
  }
  std::vector<inventory::Host> selected;
  for (const auto& host : inventory.hosts)
    if (chosen.count(host.name)) selected.push_back(host);
  return selected;
}

}  // namespace xft::launcher
