#include "inventory/write.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "inventory/load.h"
#include "inventory/show.h"

namespace xft::inventory {
namespace {

// Plain YAML scalars stay unquoted for readability; anything YAML could read
// as syntax or as null is double-quoted.
std::string scalar(const std::string& text) {
  bool plain = !text.empty() && text != "~" && text != "null" && text != "Null" && text != "NULL";
  for (unsigned char c : text)
    if (!std::isalnum(c) && std::string("_./~@+-").find(c) == std::string::npos) plain = false;
  if (plain && (text[0] == '-' || text[0] == '@')) plain = false;
  if (plain) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool same_credentials(const Credentials& a, const Credentials& b) {
  return a.key == b.key && a.password_env == b.password_env && a.password_prompt == b.password_prompt;
}

bool has_credentials(const Credentials& c) { return !c.key.empty() || !c.password_env.empty() || c.password_prompt; }

// The value most hosts share, first seen winning ties.
template <class T, class Get, class Equal>
T most_common(const std::vector<Host>& hosts, Get get, Equal equal) {
  std::vector<std::pair<T, size_t>> counts;
  for (const auto& host : hosts) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](auto& entry) { return equal(entry.first, get(host)); });
    if (it == counts.end())
      counts.push_back({get(host), 1});
    else
      ++it->second;
  }
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it->second > best->second) best = it;
  return best->first;
}

// The base every host starts from in the written file: built-in defaults
// plus the common values. A value can only move to defaults when every host
// that lacks it can say so (an empty iface or shared cannot be written).
Host choose_defaults(const std::vector<Host>& hosts) {
  Host base;
  if (hosts.empty()) return base;
  auto eq = [](const auto& a, const auto& b) { return a == b; };
  base.user = most_common<std::string>(hosts, [](const Host& h) { return h.user; }, eq);
  base.port = most_common<int>(hosts, [](const Host& h) { return h.port; }, eq);
  base.ranks = most_common<Ranks>(
      hosts, [](const Host& h) { return h.ranks; },
      [](const Ranks& a, const Ranks& b) { return a.kind == b.kind && a.count == b.count; });
  base.fabric.provider = most_common<std::string>(hosts, [](const Host& h) { return h.fabric.provider; }, eq);
  bool every_iface = std::all_of(hosts.begin(), hosts.end(), [](const Host& h) { return !h.fabric.iface.empty(); });
  if (every_iface)
    base.fabric.iface = most_common<std::string>(hosts, [](const Host& h) { return h.fabric.iface; }, eq);
  bool every_shared = std::all_of(hosts.begin(), hosts.end(), [](const Host& h) { return !h.shared.empty(); });
  if (every_shared) base.shared = most_common<std::string>(hosts, [](const Host& h) { return h.shared; }, eq);
  bool every_auth = std::all_of(hosts.begin(), hosts.end(), [](const Host& h) { return has_credentials(h.credentials); });
  if (every_auth)
    base.credentials = most_common<Credentials>(
        hosts, [](const Host& h) { return h.credentials; }, same_credentials);
  return base;
}

// "key: value" lines of the settings where `host` differs from `base`.
std::vector<std::string> setting_lines(const Host& host, const Host& base) {
  std::vector<std::string> lines;
  if (host.user != base.user) lines.push_back("user: " + scalar(host.user));
  if (host.port != base.port) lines.push_back("port: " + std::to_string(host.port));
  if (!same_credentials(host.credentials, base.credentials)) {
    if (!host.credentials.key.empty()) lines.push_back("key: " + scalar(host.credentials.key));
    if (!host.credentials.password_env.empty())
      lines.push_back("password_env: " + scalar(host.credentials.password_env));
    if (host.credentials.password_prompt) lines.push_back("password_prompt: true");
  }
  if (host.ranks.kind != base.ranks.kind || host.ranks.count != base.ranks.count)
    lines.push_back("ranks: " + ranks_label(host.ranks));
  std::vector<std::string> fabric;
  if (host.fabric.provider != base.fabric.provider) fabric.push_back("provider: " + scalar(host.fabric.provider));
  if (host.fabric.iface != base.fabric.iface) fabric.push_back("iface: " + scalar(host.fabric.iface));
  if (!fabric.empty()) {
    std::string joined;
    for (const auto& item : fabric) joined += (joined.empty() ? "" : ", ") + item;
    lines.push_back("fabric: {" + joined + "}");
  }
  if (host.shared != base.shared) lines.push_back("shared: " + scalar(host.shared));
  return lines;
}

struct Numbered {
  std::string prefix, digits, suffix;
};

std::optional<Numbered> split_number(const std::string& name) {
  size_t end = name.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  if (end == 0) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (end - begin > 9) return std::nullopt;
  return Numbered{name.substr(0, begin), name.substr(begin, end - begin), name.substr(end)};
}

// Whether `next` is `previous` + 1 printed with the same padding as `first`.
bool follows(const std::string& first, const std::string& previous, const std::string& next) {
  auto a = split_number(previous), b = split_number(next), f = split_number(first);
  if (!a || !b || !f || a->prefix != b->prefix || a->suffix != b->suffix) return false;
  long expected = std::stol(a->digits) + 1;
  size_t width = f->digits.size() > 1 && f->digits[0] == '0' ? f->digits.size() : 0;
  std::string printed = std::to_string(expected);
  if (printed.size() < width) printed.insert(0, width - printed.size(), '0');
  return printed == b->digits;
}

std::string ranged(const std::string& first, const std::string& last) {
  auto a = split_number(first), b = split_number(last);
  return a->prefix + "[" + a->digits + "-" + b->digits + "]" + a->suffix;
}

// Splits "a,node[1-4,7]" at the commas outside brackets.
std::vector<std::string> split_folded(const std::string& folded) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : folded) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

void write_hosts(const std::vector<Host>& hosts, const Host& base, std::string& out) {
  out += "hosts:\n";
  for (size_t i = 0; i < hosts.size();) {
    const Host& first = hosts[i];
    const auto settings = setting_lines(first, base);
    const bool address_is_name = first.address == first.name;
    // Extend the run while names and addresses both count up by one and the
    // settings are the same, so one entry stands for all of them.
    size_t j = i + 1;
    while (j < hosts.size() && setting_lines(hosts[j], base) == settings &&
           (hosts[j].address == hosts[j].name) == address_is_name &&
           follows(first.name, hosts[j - 1].name, hosts[j].name) &&
           (address_is_name || follows(first.address, hosts[j - 1].address, hosts[j].address)))
      ++j;
    const Host& last = hosts[j - 1];
    bool is_run = j - i > 1;
    out += "  - name: " + scalar(is_run ? ranged(first.name, last.name) : first.name) + "\n";
    if (!address_is_name)
      out += "    address: " + scalar(is_run ? ranged(first.address, last.address) : first.address) + "\n";
    for (const auto& line : settings) out += "    " + line + "\n";
    i = j;
  }
}

}  // namespace

std::string to_yaml(const Inventory& inventory) {
  std::string out;
  const Host base = choose_defaults(inventory.hosts);
  auto defaults = setting_lines(base, Host{});
  if (!defaults.empty()) {
    out += "defaults:\n";
    for (const auto& line : defaults) out += "  " + line + "\n";
  }
  write_hosts(inventory.hosts, base, out);
  if (!inventory.groups.empty()) {
    out += "groups:\n";
    for (const auto& [group, members] : inventory.groups) {
      std::string list;
      for (const auto& pattern : split_folded(fold_names(members)))
        list += (list.empty() ? "" : ", ") + scalar(pattern);
      out += "  " + scalar(group) + ": [" + list + "]\n";
    }
  }
  if (inventory.nfs) {
    out += "nfs:\n";
    out += "  server: " + scalar(inventory.nfs->server) + "\n";
    out += "  export: " + scalar(inventory.nfs->export_path) + "\n";
    if (inventory.nfs->options != Nfs{}.options) out += "  options: " + scalar(inventory.nfs->options) + "\n";
  }
  return out;
}

}  // namespace xft::inventory
