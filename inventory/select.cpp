#include <arpa/inet.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>

#include "inventory/grammar.h"
#include "inventory/load.h"
#include "inventory/yaml_errors.h"

namespace xft::inventory {
namespace {

const std::string kSeeShow = " (see xftctl inventory show)";

// Splits at `separator` outside brackets: commas and colons inside a range
// (node[1-2,4]) belong to it. Spaces are dropped.
std::vector<std::string> split_outside_brackets(const std::string& text, char separator) {
  std::vector<std::string> words;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == separator && depth == 0) {
      words.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  words.push_back(current);
  return words;
}

bool is_ipv6(const std::string& text) {
  unsigned char buffer[16];
  return inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

// Ansible separates patterns with ',' or ':'; an IPv6 address keeps its colons.
std::vector<std::string> split_targets(const std::string& targets) {
  std::vector<std::string> words;
  for (const auto& word : split_outside_brackets(targets, ',')) {
    std::string body = word.substr(std::min(word.find_first_not_of("!&@"), word.size()));
    if (is_ipv6(body)) {
      words.push_back(word);
      continue;
    }
    for (auto& part : split_outside_brackets(word, ':')) words.push_back(std::move(part));
  }
  return words;
}

bool is_glob(const std::string& word) { return word.find_first_of("*?") != std::string::npos; }

// Numbered hosts differ in digits only; node05 beside node01..node04 is a
// host that does not exist, not a typo of node01, so it gets no suggestion.
bool differs_only_in_digits(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && !(std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[i]))))
      return false;
  return true;
}

// How one pattern word combines with the others (Ansible's order: the plain
// words are joined first, then each & intersects, then each ! removes).
enum class Role { add, intersect, exclude };

struct Term {
  Role role = Role::add;
  bool group_only = false;  // @name: a group, never a host (clush)
  std::string body;         // the word without its ! & @ prefixes
};

Term parse_term(const std::string& word) {
  Term term;
  std::string_view rest = word;
  if (!rest.empty() && (rest[0] == '!' || rest[0] == '&')) {
    term.role = rest[0] == '!' ? Role::exclude : Role::intersect;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest[0] == '@') {
    term.group_only = true;
    rest.remove_prefix(1);
  }
  term.body = rest;
  return term;
}

using Mask = std::vector<bool>;

class Selector {
 public:
  explicit Selector(const Inventory& inventory) : inventory_(inventory) {}

  // The hosts one word names, or why it names none.
  Expected<Mask> resolve(const Term& term) const {
    Mask mask(inventory_.hosts.size(), false);
    if (term.body == "all") return Mask(inventory_.hosts.size(), true);
    if (term.group_only) return resolve_groups(term.body, mask);
    if (add_group(term.body, mask)) return mask;
    if (is_glob(term.body)) {
      bool matched = add_glob_groups(term.body, mask);
      for (size_t i = 0; i < inventory_.hosts.size(); ++i)
        if (::fnmatch(term.body.c_str(), inventory_.hosts[i].name.c_str(), 0) == 0) mask[i] = matched = true;
      if (!matched) return make_error(printable(term.body) + " matches no inventory host or group" + kSeeShow);
      return mask;
    }
    auto names = expand_range(term.body);
    if (!names) return make_error(one_line(names.error().message));
    for (const auto& name : *names)
      if (!add_group(name, mask) && !add_host(name, mask))
        return make_error(printable(name) + " is not an inventory host or group" + suggestion(name, false));
    return mask;
  }

 private:
  Expected<Mask> resolve_groups(const std::string& body, Mask& mask) const {
    if (is_glob(body)) {
      if (!add_glob_groups(body, mask))
        return make_error("@" + printable(body) + " matches no inventory group" + kSeeShow);
      return mask;
    }
    auto names = expand_range(body);
    if (!names) return make_error(one_line(names.error().message));
    for (const auto& name : *names)
      if (!add_group(name, mask))
        return make_error("@" + printable(name) + " is not an inventory group" + suggestion(name, true));
    return mask;
  }

  bool add_host(const std::string& name_or_address, Mask& mask) const {
    for (size_t i = 0; i < inventory_.hosts.size(); ++i)
      if (inventory_.hosts[i].name == name_or_address || inventory_.hosts[i].address == name_or_address) {
        mask[i] = true;
        return true;
      }
    return false;
  }

  bool add_group(const std::string& name, Mask& mask) const {
    auto group = inventory_.groups.find(name);
    if (group == inventory_.groups.end()) return false;
    for (const auto& member : group->second) add_host(member, mask);
    return true;
  }

  bool add_glob_groups(const std::string& glob, Mask& mask) const {
    bool matched = false;
    for (const auto& [name, members] : inventory_.groups)
      if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) matched = add_group(name, mask) || matched;
    return matched;
  }

  std::string suggestion(const std::string& word, bool groups_only) const {
    std::vector<std::string> candidates;
    if (!groups_only)
      for (const auto& host : inventory_.hosts) candidates.push_back(host.name);
    for (const auto& [name, members] : inventory_.groups) candidates.push_back(name);
    std::erase_if(candidates, [&](const std::string& c) { return differs_only_in_digits(word, c); });
    std::string guess = closest_match(word, candidates);
    if (guess.empty()) return kSeeShow;
    return " (did you mean `" + std::string(groups_only ? "@" : "") + guess + "`?)";
  }

  const Inventory& inventory_;
};

}  // namespace

Expected<std::vector<Host>> select_hosts(const Inventory& inventory, const std::string& targets) {
  if (targets.empty()) return inventory.hosts;
  Selector selector(inventory);
  std::vector<Term> terms;
  for (const auto& word : split_targets(targets)) {
    Term term = parse_term(word);
    if (term.body.empty())
      return make_error("empty target in `" + printable(targets) + "` (write e.g. all, compute or node[01-04])");
    terms.push_back(std::move(term));
  }
  bool any_add = std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.role == Role::add; });
  // Only ! and & words: they apply to every host, as in Ansible.
  Mask chosen(inventory.hosts.size(), !any_add);
  for (Role role : {Role::add, Role::intersect, Role::exclude}) {
    for (const auto& term : terms) {
      if (term.role != role) continue;
      auto mask = selector.resolve(term);
      if (!mask) return mask.error();
      for (size_t i = 0; i < chosen.size(); ++i) {
        if (role == Role::add) chosen[i] = chosen[i] || (*mask)[i];
        if (role == Role::intersect) chosen[i] = chosen[i] && (*mask)[i];
        if (role == Role::exclude) chosen[i] = chosen[i] && !(*mask)[i];
      }
    }
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < inventory.hosts.size(); ++i)
    if (chosen[i]) hosts.push_back(inventory.hosts[i]);
  if (hosts.empty() && !inventory.hosts.empty()) {
    bool narrowed = std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.role != Role::add; });
    return make_error("`" + printable(targets) + "` selects no host" +
                      (narrowed ? " (the ! and & words remove every host the others name)" : " (its groups are empty)"));
  }
  return hosts;
}

}  // namespace xft::inventory
