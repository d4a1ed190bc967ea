#include <algorithm>

#include "inventory/load.h"

namespace xft::inventory {
namespace {

// "a,node[1-2,4],b" -> {"a", "node[1-2,4]", "b"}: commas inside brackets belong to the range.
std::vector<std::string> split_targets(const std::string& targets) {
  std::vector<std::string> words;
  std::string current;
  int depth = 0;
  for (char c : targets) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      words.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  words.push_back(current);
  return words;
}

}  // namespace

Expected<std::vector<const Host*>> select_hosts(const Inventory& inventory, const std::string& targets) {
  std::vector<bool> chosen(inventory.hosts.size(), false);
  auto choose_name = [&](const std::string& name) -> bool {
    for (size_t i = 0; i < inventory.hosts.size(); ++i)
      if (inventory.hosts[i].name == name) {
        chosen[i] = true;
        return true;
      }
    return false;
  };
  for (const auto& word : split_targets(targets)) {
    if (word.empty()) return make_error("empty target in `" + targets + "` (write e.g. all, compute or node[01-04])");
    if (word == "all") {
      std::fill(chosen.begin(), chosen.end(), true);
      continue;
    }
    if (auto group = inventory.groups.find(word); group != inventory.groups.end()) {
      for (const auto& name : group->second) choose_name(name);
      continue;
    }
    auto names = expand_range(word);
    if (!names) return names.error();
    for (const auto& name : *names)
      if (!choose_name(name))
        return make_error("no host or group named `" + name + "` in " + inventory.path +
                          " (see xftctl inventory show)");
  }
  std::vector<const Host*> hosts;
  for (size_t i = 0; i < inventory.hosts.size(); ++i)
    if (chosen[i]) hosts.push_back(&inventory.hosts[i]);
  return hosts;
}

}  // namespace xft::inventory
