// The YAML inventory: typed reading of defaults, hosts, groups and nfs, with
// every problem of the file collected as "path:line:col: field: what (fix)".
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "inventory/checks.h"
#include "inventory/grammar.h"
#include "inventory/load.h"
#include "inventory/yaml_errors.h"

namespace xft::inventory {
namespace {

const std::vector<std::string> top_keys = {"defaults", "groups", "hosts", "nfs"};
const std::vector<std::string> setting_keys = {"user",   "port",  "key",    "password_env",
                                               "password_prompt", "ranks", "fabric", "shared",
                                               "become", "become_password_env", "jump"};
// What a group may set for its members (a host's own value wins).
const std::vector<std::string> group_keys = {"hosts", "become", "become_password_env", "jump"};
const std::vector<std::string> host_only_keys = {"name", "address", "groups"};
const std::vector<std::string> fabric_keys = {"provider", "iface", "env"};
const std::vector<std::string> nfs_keys = {"server", "export", "options"};
// Keys people reach for when they want to store a password; all refused.
const std::set<std::string> password_keys = {"password",         "passwd",          "pass",
                                             "ssh_password",     "ssh_pass",        "ansible_ssh_pass",
                                             "ansible_password", "ansible_become_pass", "become_password",
                                             "become_pass",      "sudo_password",   "sudo_pass"};

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string ticked(const std::string& text) { return quoted_value(text); }

std::string list_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "the value " + ticked(node.Scalar());
    default: return "nothing";
  }
}

// The fields a host may set and defaults may provide; unset ones stay empty
// so that a host's value overrides the default field by field.
struct Settings {
  std::optional<std::string> user;
  std::optional<int> port;
  std::optional<Credentials> credentials;
  std::optional<Ranks> ranks;
  std::optional<std::string> provider;
  std::optional<std::string> iface;
  std::vector<std::pair<std::string, std::string>> fabric_env;
  std::optional<std::string> shared;
  std::optional<Become> become;
  std::optional<std::string> become_password_env;
  std::optional<std::vector<JumpHost>> jump;  // empty for jump: none
};

// The reach settings a group gives its members where they set none themselves.
void apply_reach(const Settings& settings, Host& host) {
  if (settings.become) host.become = *settings.become;
  if (settings.become_password_env) host.become_password_env = *settings.become_password_env;
  if (settings.jump) host.jump = *settings.jump, host.given.jump = true;
}

void apply(const Settings& settings, Host& host) {
  if (settings.user) host.user = *settings.user, host.given.user = true;
  if (settings.port) host.port = *settings.port, host.given.port = true;
  if (settings.credentials) host.credentials = *settings.credentials;
  if (settings.ranks) host.ranks = *settings.ranks;
  if (settings.provider) host.fabric.provider = *settings.provider;
  if (settings.iface) host.fabric.iface = *settings.iface;
  for (const auto& [name, value] : settings.fabric_env) {  // a host's value replaces the default's, name by name
    auto same = std::find_if(host.fabric.env.begin(), host.fabric.env.end(), [&](auto& e) { return e.first == name; });
    if (same != host.fabric.env.end()) same->second = value;
    else host.fabric.env.emplace_back(name, value);
  }
  if (settings.shared) host.shared = *settings.shared;
  apply_reach(settings, host);
}

// Where each expanded host came from, to point duplicates at their lines.
struct HostOrigin {
  std::string prefix;  // "hosts[3]"
  YAML::Mark name_mark;
  YAML::Mark address_mark;
  Settings own;  // what the entry itself set, which a group's settings do not override
};

class Parser {
 public:
  explicit Parser(const std::string& path) : path_(path), errors_(path) {}

  Expected<Inventory> parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      errors_.add(e.mark.line, e.mark.column, "syntax",
                  e.msg + " (fix the YAML: check indentation, quoting and colons)");
      return errors_.to_error();
    }
    read_root(root);
    if (!errors_.empty()) return errors_.to_error();
    return std::move(inventory_);
  }

 private:
  void error(const YAML::Mark& mark, const std::string& field, const std::string& what) {
    errors_.add(mark.line, mark.column, field, what);
  }
  void error(const YAML::Node& node, const std::string& field, const std::string& what) {
    error(node.Mark(), field, what);
  }

  void read_root(const YAML::Node& root) {
    if (root.IsNull()) {
      error(YAML::Mark(), "hosts", "the inventory is empty (add a hosts: list, see docs/inventory.md)");
      return;
    }
    if (!root.IsMap()) {
      error(root, "", "expected a map with hosts: (and optionally defaults:, groups:, nfs:), got " +
                          describe(root));
      return;
    }
    check_keys(root, "", top_keys, {});
    Settings defaults;
    if (const YAML::Node node = root["defaults"]) {
      if (expect_map(node, "defaults", "user: root"))
        defaults = read_settings(node, "defaults", true);
    }
    const YAML::Node hosts = root["hosts"];
    if (!hosts) {
      error(root, "hosts", "missing (add a hosts: list, e.g. hosts: [{name: node01, address: 10.0.0.1}])");
    } else if (!hosts.IsSequence()) {
      error(hosts, "hosts", "expected a list of hosts (- name: node01 ...), got " + describe(hosts));
    } else {
      for (size_t i = 0; i < hosts.size(); ++i)
        read_host_entry(hosts[i], "hosts[" + std::to_string(i) + "]", defaults);
      if (hosts.size() == 0) error(hosts, "hosts", "the list is empty (add at least one host)");
      check_duplicates();
    }
    if (const YAML::Node node = root["groups"]) read_groups(node);
    collect_groups();
    give_group_settings();
    check_become_passwords();
    if (const YAML::Node node = root["nfs"]) read_nfs(node);
    inventory_.path = path_;
  }

  // Unknown keys get a "did you mean"; password keys are refused outright.
  void check_keys(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& allowed,
                  const std::vector<std::string>& allowed_elsewhere) {
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key_node = it->first;  // a copy: the iterator yields temporaries
      if (!key_node.IsScalar()) {
        error(key_node, prefix.empty() ? "key" : prefix, "keys must be plain words, got " + describe(key_node));
        continue;
      }
      const std::string key = key_node.Scalar();
      const std::string field = join(prefix, key);
      if (!seen.insert(key).second) {
        error(key_node, field, "duplicate key (keep only one)");
      } else if (password_keys.count(key)) {
        error(key_node, field,
              "passwords must not be stored in the inventory (remove it; export the password in an "
              "environment variable and name it with password_env: VAR, or set password_prompt: true)");
      } else if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        if (std::find(allowed_elsewhere.begin(), allowed_elsewhere.end(), key) != allowed_elsewhere.end()) {
          error(key_node, field, "only allowed on a host entry under hosts:, not here");
        } else if (auto guess = closest_match(key, allowed); !guess.empty()) {
          error(key_node, field, "unknown key (did you mean " + ticked(guess) + "?)");
        } else if (auto elsewhere = closest_match(key, allowed_elsewhere); !elsewhere.empty()) {
          error(key_node, field,
                "unknown key (did you mean " + ticked(elsewhere) + "? it belongs on a host entry under hosts:)");
        } else {
          error(key_node, field, "unknown key (allowed here: " + list_words(allowed) + ")");
        }
      }
    }
  }

  bool expect_map(const YAML::Node& node, const std::string& field, const std::string& example) {
    if (node.IsMap()) return true;
    error(node, field, "expected a map (like " + example + "), got " + describe(node));
    return false;
  }

  std::optional<std::string> read_string(const YAML::Node& node, const std::string& field) {
    if (node.IsNull()) {
      error(node, field, "has no value (give one or remove the key)");
      return std::nullopt;
    }
    if (!node.IsScalar()) {
      error(node, field, "expected a single value, got " + describe(node));
      return std::nullopt;
    }
    if (node.Scalar().empty()) {
      error(node, field, "is empty (give a value or remove the key)");
      return std::nullopt;
    }
    return node.Scalar();
  }

  // A string that must also pass one of the grammar checks.
  std::optional<std::string> read_checked(const YAML::Node& node, const std::string& field,
                                          Problem (*check)(std::string_view)) {
    auto text = read_string(node, field);
    if (!text) return std::nullopt;
    if (auto problem = check(*text)) {
      error(node, field, *problem);
      return std::nullopt;
    }
    return text;
  }

  std::optional<int> read_port(const YAML::Node& node, const std::string& field) {
    auto text = read_checked(node, field, check_port);
    if (!text) return std::nullopt;
    return std::stoi(*text);
  }

  std::optional<Ranks> read_ranks(const YAML::Node& node, const std::string& field) {
    auto text = read_string(node, field);
    if (!text) return std::nullopt;
    if (*text == "per-socket") return Ranks{RanksKind::per_socket, 1};
    if (*text == "per-numa") return Ranks{RanksKind::per_numa, 1};
    std::string digits = (*text)[0] == '-' || (*text)[0] == '+' ? text->substr(1) : *text;
    bool numeric = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric) {
      error(node, field, ticked(*text) + " is not a number, per-socket or per-numa (e.g. ranks: 2)");
      return std::nullopt;
    }
    if ((*text)[0] == '-' || std::stoll(digits.substr(0, 12)) < 1) {
      error(node, field, *text + " is below 1 (use a count of at least 1, per-socket or per-numa)");
      return std::nullopt;
    }
    if (digits.size() > 6) {
      error(node, field, *text + " is too large (use the number of ranks for this host, e.g. 2)");
      return std::nullopt;
    }
    return Ranks{RanksKind::count, std::stoi(digits)};
  }

  std::optional<bool> read_bool(const YAML::Node& node, const std::string& field) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      error(node, field, "expected true or false, got " + describe(node));
      return std::nullopt;
    }
    return value;
  }

  std::optional<std::string> read_absolute_path(const YAML::Node& node, const std::string& field) {
    return read_checked(node, field, check_absolute_path);
  }

  std::optional<Credentials> read_credentials(const YAML::Node& map, const std::string& prefix) {
    Credentials credentials;
    int methods = 0;
    if (const YAML::Node node = map["key"]) {
      const std::string field = join(prefix, "key");
      if (auto key = read_string(node, field)) {
        // Checked as it will be used: a $HOME with a quote is as dangerous as a typed one.
        credentials.key = expand_home(*key);
        if (auto problem = check_key_path(credentials.key)) error(node, field, *problem);
        ++methods;
      }
    }
    if (const YAML::Node node = map["password_env"]) {
      const std::string field = join(prefix, "password_env");
      if (auto name = read_checked(node, field, check_env_var_name)) {
        credentials.password_env = *name;
        ++methods;
      }
    }
    if (const YAML::Node node = map["password_prompt"]) {
      if (auto prompt = read_bool(node, join(prefix, "password_prompt")); prompt && *prompt) {
        credentials.password_prompt = true;
        ++methods;
      }
    }
    if (methods > 1) {
      error(map, prefix.empty() ? "credentials" : prefix,
            "sets more than one of key, password_env, password_prompt (keep exactly one)");
      return std::nullopt;
    }
    if (methods == 0) return std::nullopt;
    return credentials;
  }

  void read_fabric(const YAML::Node& node, const std::string& field, Settings& settings) {
    if (!expect_map(node, field, "{provider: \"tcp;ofi_rxm\", iface: eth0}")) return;
    check_keys(node, field, fabric_keys, {});
    if (const YAML::Node provider = node["provider"])
      settings.provider = read_checked(provider, join(field, "provider"), check_provider);
    if (const YAML::Node iface = node["iface"])
      settings.iface = read_checked(iface, join(field, "iface"), check_interface_name);
    if (const YAML::Node env = node["env"]) read_fabric_env(env, join(field, "env"), settings);
  }

  void read_fabric_env(const YAML::Node& node, const std::string& field, Settings& settings) {
    if (!expect_map(node, field, "{PSM3_IDENTIFY: 1, FI_EFA_USE_DEVICE_RDMA: 1}")) return;
    for (const auto& entry : node) {
      const std::string name = entry.first.Scalar();
      if (auto problem = check_env_var_name(name)) {
        error(entry.first, join(field, printable(name)), *problem);
        continue;
      }
      auto value = read_string(entry.second, join(field, name));
      if (!value) continue;
      bool control = std::any_of(value->begin(), value->end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
      if (control) {
        error(entry.second, join(field, name), quoted_value(*value) + " has a control character (give one line of printable text)");
        continue;
      }
      settings.fabric_env.emplace_back(name, *value);
    }
  }

  Settings read_settings(const YAML::Node& map, const std::string& prefix, bool is_defaults) {
    if (is_defaults) check_keys(map, prefix, setting_keys, host_only_keys);
    Settings settings;
    if (const YAML::Node node = map["user"]) settings.user = read_checked(node, join(prefix, "user"), check_user_name);
    if (const YAML::Node node = map["port"]) settings.port = read_port(node, join(prefix, "port"));
    if (const YAML::Node node = map["ranks"]) settings.ranks = read_ranks(node, join(prefix, "ranks"));
    if (const YAML::Node node = map["shared"]) settings.shared = read_absolute_path(node, join(prefix, "shared"));
    if (const YAML::Node node = map["fabric"]) read_fabric(node, join(prefix, "fabric"), settings);
    settings.credentials = read_credentials(map, prefix);
    read_reach(map, prefix, settings);
    return settings;
  }

  // become, become_password_env and jump: the keys defaults, groups and hosts share.
  void read_reach(const YAML::Node& map, const std::string& prefix, Settings& settings) {
    if (const YAML::Node node = map["become"]) {
      if (auto text = read_checked(node, join(prefix, "become"), check_become))
        settings.become = *text == "sudo" ? Become::sudo : Become::none;
    }
    if (const YAML::Node node = map["become_password_env"])
      settings.become_password_env = read_checked(node, join(prefix, "become_password_env"), check_env_var_name);
    if (const YAML::Node node = map["jump"]) settings.jump = read_jump(node, join(prefix, "jump"));
  }

  // One bastion, a list of at most two (outermost first), "a,b" as in
  // ProxyJump, or none.
  std::optional<std::vector<JumpHost>> read_jump(const YAML::Node& node, const std::string& field) {
    std::vector<std::pair<YAML::Node, std::string>> items;
    if (node.IsSequence()) {
      for (const auto& item : node) {
        auto text = read_string(item, field);
        if (!text) return std::nullopt;
        items.emplace_back(item, *text);
      }
      if (items.empty()) {
        error(node, field, "the list is empty (name a bastion, [user@]host[:port], or write jump: none)");
        return std::nullopt;
      }
    } else {
      auto text = read_string(node, field);
      if (!text) return std::nullopt;
      if (*text == "none") return std::vector<JumpHost>{};
      for (size_t start = 0;;) {
        size_t comma = text->find(',', start);
        items.emplace_back(node, text->substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (items.size() > kMaxJumpHosts) {
      error(node, field,
            std::to_string(items.size()) + " bastions in a row (at most " + std::to_string(kMaxJumpHosts) +
                "; reach the inner ones from the cluster network instead)");
      return std::nullopt;
    }
    std::vector<JumpHost> chain;
    for (const auto& [item, text] : items) {
      JumpHost jump;
      if (auto problem = check_jump_host(text, &jump)) {
        error(item, field, *problem);
        return std::nullopt;
      }
      chain.push_back(std::move(jump));
    }
    return chain;
  }

  std::vector<std::string> expand(const YAML::Node& node, const std::string& field, const std::string& text) {
    auto expanded = expand_range(text);
    if (!expanded) {
      error(node, field, expanded.error().message);
      return {};
    }
    return std::move(*expanded);
  }

  std::vector<std::string> read_names(const YAML::Node& entry, const std::string& prefix) {
    const YAML::Node node = entry["name"];
    const std::string field = join(prefix, "name");
    if (!node) {
      error(entry, prefix, "missing name (every host entry needs name:, e.g. name: node[01-04])");
      return {};
    }
    auto text = read_string(node, field);
    if (!text) return {};
    auto names = expand(node, field, *text);
    for (const auto& name : names) {
      if (auto problem = check_host_name(name)) {
        error(node, field, *problem);
        return {};
      }
    }
    return names;
  }

  std::vector<std::string> read_addresses(const YAML::Node& entry, const std::string& prefix,
                                          const std::vector<std::string>& names) {
    const YAML::Node node = entry["address"];
    const std::string field = join(prefix, "address");
    if (!node) {
      // Without address: the name is what we connect to, so it must be one.
      for (const auto& name : names) {
        if (!is_valid_address(name)) {
          error(entry["name"], join(prefix, "name"),
                ticked(name) + " is not an IP address or DNS name, so it cannot be used without address: "
                               "(add address: with the host's IP)");
          return {};
        }
      }
      return names;
    }
    auto text = read_string(node, field);
    if (!text) return {};
    // An IPv6 literal is taken whole: its colons and brackets are not ranges.
    std::vector<std::string> addresses;
    if (text->find(':') != std::string::npos) {
      std::string literal = *text;
      if (literal.size() > 2 && literal.front() == '[' && literal.back() == ']')
        literal = literal.substr(1, literal.size() - 2);
      addresses = {literal};
    } else {
      addresses = expand(node, field, *text);
      if (addresses.empty()) return {};
    }
    for (const auto& address : addresses) {
      if (auto problem = check_address(address)) {
        error(node, field, *problem);
        return {};
      }
    }
    if (addresses.size() != names.size()) {
      error(node, field,
            ticked(*text) + " expands to " + std::to_string(addresses.size()) + " address" +
                (addresses.size() == 1 ? "" : "es") + " but name " + ticked(entry["name"].Scalar()) +
                " to " + std::to_string(names.size()) + " host" + (names.size() == 1 ? "" : "s") +
                " (make both ranges the same length)");
      return {};
    }
    return addresses;
  }

  std::vector<std::string> read_group_names(const YAML::Node& node, const std::string& field) {
    std::vector<std::string> groups;
    auto add = [&](const YAML::Node& item) {
      auto name = read_string(item, field);
      if (!name) return;
      if (!is_inventory_name(*name))
        error(item, field, ticked(*name) + " is not a valid group name (use letters, digits, '.', '-', '_')");
      else if (std::find(groups.begin(), groups.end(), *name) == groups.end())
        groups.push_back(*name);
    };
    if (node.IsSequence()) {
      for (const auto& item : node) add(item);
    } else if (node.IsScalar()) {
      add(node);
    } else {
      error(node, field, "expected a list of group names (like [compute, head]), got " + describe(node));
    }
    return groups;
  }

  void read_host_entry(const YAML::Node& entry, const std::string& prefix, const Settings& defaults) {
    if (!entry.IsMap()) {
      error(entry, prefix, "expected a map (like - name: node01), got " + describe(entry));
      return;
    }
    std::vector<std::string> all_host_keys = setting_keys;
    all_host_keys.insert(all_host_keys.end(), host_only_keys.begin(), host_only_keys.end());
    check_keys(entry, prefix, all_host_keys, {});
    Settings settings = read_settings(entry, prefix, false);
    std::vector<std::string> groups;
    if (const YAML::Node node = entry["groups"]) groups = read_group_names(node, join(prefix, "groups"));
    auto names = read_names(entry, prefix);
    if (names.empty()) return;
    auto addresses = read_addresses(entry, prefix, names);
    if (addresses.empty()) return;
    for (size_t i = 0; i < names.size(); ++i) {
      Host host;
      apply(defaults, host);
      apply(settings, host);
      host.name = names[i];
      host.address = addresses[i];
      host.given.address = static_cast<bool>(entry["address"]);
      host.groups = groups;
      host.line = entry.Mark().line + 1;
      inventory_.hosts.push_back(std::move(host));
      origins_.push_back({prefix, entry["name"].Mark(),
                          entry["address"] ? entry["address"].Mark() : entry["name"].Mark(), settings});
    }
  }

  void check_duplicates() {
    std::map<std::string, size_t> by_name, by_address;
    for (size_t i = 0; i < inventory_.hosts.size(); ++i) {
      const Host& host = inventory_.hosts[i];
      if (auto [it, fresh] = by_name.emplace(host.name, i); !fresh) {
        error(origins_[i].name_mark, origins_[i].prefix + ".name",
              "duplicate host name " + ticked(host.name) + " (also declared at line " +
                  std::to_string(inventory_.hosts[it->second].line) + "; names must be unique)");
      }
      if (auto [it, fresh] = by_address.emplace(host.address, i); !fresh) {
        const Host& first = inventory_.hosts[it->second];
        error(origins_[i].address_mark, origins_[i].prefix + ".address",
              "duplicate address " + ticked(host.address) + " (also used by " + first.name + " at line " +
                  std::to_string(first.line) + "; each host needs its own address)");
      }
    }
  }

  void read_groups(const YAML::Node& node) {
    if (!expect_map(node, "groups", "{compute: [\"node[01-04]\"]}")) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar() || !is_inventory_name(key.Scalar())) {
        error(key, "groups", describe(key) + " is not a valid group name (use letters, digits, '.', '-', '_')");
        continue;
      }
      const std::string group = key.Scalar();
      const std::string field = "groups." + group;
      if (inventory_.find(group) && inventory_.find(group)->name == group) {
        error(key, field, "a host has the same name (rename the group so targets are unambiguous)");
        continue;
      }
      YAML::Node members = it->second;
      Settings group_settings;
      if (members.IsMap()) {
        check_keys(members, field, group_keys, {});
        read_reach(members, field, group_settings);
        if (!members["hosts"]) {
          error(members, field + ".hosts", "missing (list the group's hosts, e.g. hosts: [\"node[01-04]\"])");
          continue;
        }
        members = members["hosts"];
        group_settings_order_.emplace_back(group, group_settings);
      }
      if (!members.IsSequence() && !members.IsScalar()) {
        error(members, field, "expected a list of host names or patterns (like [\"node[01-04]\", head]), got " +
                                  describe(members));
        continue;
      }
      auto add_member = [&](const YAML::Node& item) {
        auto pattern = read_string(item, field);
        if (!pattern) return;
        for (const auto& name : expand(item, field, *pattern)) {
          Host* host = find_by_name(name);
          if (!host) {
            error(item, field, ticked(name) + " is not a host of this inventory (declare it under hosts: "
                                              "or fix the name)");
            return;
          }
          if (std::find(host->groups.begin(), host->groups.end(), group) == host->groups.end())
            host->groups.push_back(group);

        }
      };
      if (members.IsScalar()) {
        add_member(members);
      } else {
        for (const auto& item : members) add_member(item);
      }
    }
  }

  // A group's become/jump reach its members (however they joined it) unless
  // their own entry set them; of two groups, the one declared later wins.
  void give_group_settings() {
    for (const auto& [group, settings] : group_settings_order_) {
      for (size_t i = 0; i < inventory_.hosts.size(); ++i) {
        Host& host = inventory_.hosts[i];
        if (std::find(host.groups.begin(), host.groups.end(), group) == host.groups.end()) continue;
        const Settings& own = origins_[i].own;
        if (settings.become && !own.become) host.become = *settings.become;
        if (settings.become_password_env && !own.become_password_env)
          host.become_password_env = *settings.become_password_env;
        if (settings.jump && !own.jump) host.jump = *settings.jump, host.given.jump = true;
      }
    }
  }

  // A sudo password for a host that does not use sudo is a mistake in the file.
  void check_become_passwords() {
    for (size_t i = 0; i < inventory_.hosts.size(); ++i) {
      const Host& host = inventory_.hosts[i];
      if (host.become == Become::none && !host.become_password_env.empty())
        error(origins_[i].name_mark, origins_[i].prefix + ".become_password_env",
              "set for " + host.name + " but become is not sudo there (add become: sudo or remove it)");
    }
  }

  Host* find_by_name(const std::string& name) {
    for (auto& host : inventory_.hosts)
      if (host.name == name) return &host;
    return nullptr;
  }

  // Inventory.groups lists members in host order whichever way they joined.
  void collect_groups() {
    for (const auto& host : inventory_.hosts)
      for (const auto& group : host.groups) inventory_.groups[group].push_back(host.name);
  }

  // export and options are checked even when the server is wrong, so one
  // run shows every problem of the section.
  void read_nfs(const YAML::Node& node) {
    if (!expect_map(node, "nfs", "{server: head, export: /mnt}")) return;
    check_keys(node, "nfs", nfs_keys, {});
    Nfs nfs;
    bool valid = true;
    std::optional<std::string> export_path;
    if (const YAML::Node path = node["export"]) {
      export_path = read_absolute_path(path, "nfs.export");
      valid = valid && export_path;
    }
    if (const YAML::Node options = node["options"]) {
      auto text = read_checked(options, "nfs.options", check_nfs_options);
      if (text) nfs.options = *text;
      valid = valid && text;
    }
    const Host* host = read_nfs_server(node);
    if (!host || !valid) return;
    nfs.server = host->name;
    if (export_path) {
      nfs.export_path = *export_path;
    } else if (!host->shared.empty()) {
      nfs.export_path = host->shared;
    } else {
      error(node, "nfs.export", "missing and " + host->name + " has no shared path (set nfs.export or shared)");
      return;
    }
    inventory_.nfs = nfs;
  }

  const Host* read_nfs_server(const YAML::Node& node) {
    const YAML::Node server = node["server"];
    if (!server) {
      error(node, "nfs.server", "missing (name the inventory host that exports the shared path)");
      return nullptr;
    }
    auto server_name = read_string(server, "nfs.server");
    if (!server_name) return nullptr;
    const Host* host = find_by_name(*server_name);
    if (!host)
      error(server, "nfs.server", ticked(*server_name) + " is not a host of this inventory (use a name from hosts:)");
    return host;
  }

  std::string path_;
  ErrorList errors_;
  Inventory inventory_;
  std::vector<HostOrigin> origins_;
  std::vector<std::pair<std::string, Settings>> group_settings_order_;  // groups that set become/jump
};

}  // namespace

Expected<Inventory> parse_inventory(const std::string& yaml_text, const std::string& path) {
  return Parser(path).parse(yaml_text);
}

Expected<Inventory> load_inventory(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_inventory(*text, path);
}

Expected<std::string> locate_inventory(const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!flag.empty()) {
    if (fs::is_regular_file(flag, ec)) return flag;
    return make_error("inventory " + flag + " (from -i) does not exist or is not a file");
  }
  if (const char* env = std::getenv("XFTCTL_INVENTORY"); env && *env) {
    if (fs::is_regular_file(env, ec)) return std::string(env);
    return make_error("inventory " + std::string(env) + " (from $XFTCTL_INVENTORY) does not exist or is not a file");
  }
  if (fs::is_regular_file("inventory.yaml", ec)) return std::string("inventory.yaml");
  return make_error(
      "no inventory found: tried -i (not given), $XFTCTL_INVENTORY (not set) and ./inventory.yaml (missing); "
      "pass -i FILE or write inventory.yaml (see docs/inventory.md)");
}

}  // namespace xft::inventory
