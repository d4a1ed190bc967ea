#include <fnmatch.h>

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
    if (c == ']' && depth > 0) --depth;
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

bool is_glob(const std::string& word) { return word.find_first_of("*?") != std::string::npos; }

const std::string kSeeShow = " (see xftctl inventory show)";

}  // namespace

Expected<std::vector<Host>> select_hosts(const Inventory& inventory, const std::string& targets) {
  if (targets.empty()) return inventory.hosts;
  std::vector<bool> chosen(inventory.hosts.size(), false);
  auto choose = [&](const std::string& name_or_address) -> bool {
    for (size_t i = 0; i < inventory.hosts.size(); ++i)
      if (inventory.hosts[i].name == name_or_address || inventory.hosts[i].address == name_or_address) {
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
      for (const auto& name : group->second) choose(name);
      continue;
    }
    if (is_glob(word)) {
      bool matched = false;
      for (size_t i = 0; i < inventory.hosts.size(); ++i)
        if (::fnmatch(word.c_str(), inventory.hosts[i].name.c_str(), 0) == 0) chosen[i] = matched = true;
      if (!matched) return make_error(word + " matches no inventory host or group" + kSeeShow);
      continue;
    }
    auto names = expand_range(word);
    if (!names) return names.error();
    for (const auto& name : *names)
      if (!choose(name)) return make_error(name + " is not an inventory host or group" + kSeeShow);
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < inventory.hosts.size(); ++i)
    if (chosen[i]) hosts.push_back(inventory.hosts[i]);
  return hosts;
}

}  // namespace xft::inventory
