#include "inventory/ansible.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "inventory/checks.h"
#include "inventory/grammar.h"
#include "inventory/load.h"
#include "inventory/yaml_errors.h"

namespace xft::inventory {
namespace {

// Sections that mean "every host" rather than a group worth keeping.
const std::set<std::string> whole_inventory_sections = {"all", "all_hosts", "ungrouped"};
// The SSH login password, and the one for sudo/become after login.
const std::set<std::string> ssh_password_variables = {"ansible_ssh_pass", "ansible_password"};
const std::set<std::string> become_password_variables = {"ansible_become_pass", "ansible_become_password",
                                                         "ansible_sudo_pass"};

bool is_password_variable(const std::string& key) {
  return ssh_password_variables.count(key) || become_password_variables.count(key);
}

// "ansible_ssh_pass: x" or "ansible_ssh_pass x" (no '='): the text may hold the secret.
bool begins_with_password_variable(const std::string& text) {
  for (const auto* names : {&ssh_password_variables, &become_password_variables})
    for (const auto& name : *names)
      if (text.rfind(name, 0) == 0) return true;
  return false;
}
// Variables that only steer Ansible itself; dropping them loses nothing.
const std::set<std::string> ansible_only_variables = {
    "ansible_python_interpreter", "ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_become",
    "ansible_become_method",      "ansible_become_user",     "ansible_connection",     "ansible_shell_type",
    "ansible_host_key_checking"};

struct Variable {
  std::string value;
  int line;    // 0-based, as ErrorList takes it
  int column;  // 0-based column of the variable name
};
using Variables = std::map<std::string, Variable>;

struct IniHost {
  std::string name;
  int line = 0;
  Variables variables;
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::string unquote(const std::string& text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
    return text.substr(1, text.size() - 2);
  return text;
}

// Whitespace-separated words; quotes keep spaces inside one word. Each word
// comes with its column.
std::vector<std::pair<std::string, int>> split_words(const std::string& line) {
  std::vector<std::pair<std::string, int>> words;
  std::string current;
  int start = -1;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (!quote && (c == ' ' || c == '\t' || c == '\r')) {
      if (start >= 0) words.push_back({current, start});
      current.clear();
      start = -1;
      continue;
    }
    if (start < 0) start = static_cast<int>(i);
    if (!quote && (c == '"' || c == '\'')) quote = c;
    else if (quote && c == quote) quote = 0;
    current += c;
  }
  if (start >= 0) words.push_back({current, start});
  return words;
}

// Ansible writes ranges as node[01:04]; ClusterShell as node[01-04].
std::string to_clustershell(const std::string& pattern) {
  std::string out = pattern;
  int depth = 0;
  for (char& c : out) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ':' && depth > 0) c = '-';
  }
  return out;
}

class Importer {
 public:
  Importer(const std::string& path, const ImportOptions& options) : path_(path), options_(options), errors_(path) {}

  Expected<ImportResult> run(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 0; std::getline(lines, line); ++number) read_line(line, number);
    build_hosts();
    if (!errors_.empty()) return errors_.to_error();
    return ImportResult{std::move(inventory_), std::move(warnings_)};
  }

 private:
  enum class Kind { hosts, vars, children };

  void read_line(const std::string& raw, int number) {
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') return;
    int indent = static_cast<int>(raw.find_first_not_of(" \t"));
    if (line[0] == '[') {
      read_section_header(line, number, indent);
      return;
    }
    if (section_.empty()) section_ = "ungrouped", kind_ = Kind::hosts;
    switch (kind_) {
      case Kind::hosts: read_host_line(line, number, indent); break;
      case Kind::vars: read_variable(line, number, indent, group_variables_[section_]); break;
      case Kind::children: read_child(line, number, indent); break;
    }
  }

  void read_section_header(const std::string& line, int number, int indent) {
    if (line.back() != ']') {
      errors_.add(number, indent, "section", "`" + line + "` is missing its closing `]`");
      return;
    }
    std::string name = line.substr(1, line.size() - 2);
    kind_ = Kind::hosts;
    if (auto colon = name.find(':'); colon != std::string::npos) {
      std::string suffix = name.substr(colon + 1);
      name = name.substr(0, colon);
      if (suffix == "vars") {
        kind_ = Kind::vars;
      } else if (suffix == "children") {
        kind_ = Kind::children;
      } else {
        errors_.add(number, indent, "section", "unknown section kind `:" + suffix + "` (use :vars or :children)");
      }
    }
    if (!is_inventory_name(name)) {
      errors_.add(number, indent, "section", "`" + name + "` is not a valid group name");
      return;
    }
    section_ = name;
    note_group(name);
  }

  void note_group(const std::string& name) {
    if (std::find(group_order_.begin(), group_order_.end(), name) == group_order_.end())
      group_order_.push_back(name);
  }

  void read_host_line(const std::string& line, int number, int indent) {
    auto words = split_words(line);
    if (auto equals = words[0].first.find('='); equals != std::string::npos) {
      // Only the name: the value may be a password written in the wrong section.
      errors_.add(number, indent, words[0].first.substr(0, equals),
                  "a variable among the hosts of [" + section_ + "] (move it under [" + section_ + ":vars])");
      return;
    }
    std::string pattern = to_clustershell(words[0].first);
    auto names = expand_range(pattern);
    if (!names) {
      errors_.add(number, indent, "host", names.error().message);
      return;
    }
    Variables variables;
    bool hide = false;
    for (size_t i = 1; i < words.size(); ++i) {
      hide = hide || begins_with_password_variable(words[i].first);
      read_variable(words[i].first, number, indent + words[i].second, variables, hide);
    }
    for (const auto& name : *names) {
      if (!is_inventory_name(name)) {
        errors_.add(number, indent, "host", "`" + name + "` is not a valid host name");
        return;
      }
      auto [it, fresh] = hosts_.emplace(name, IniHost{name, number, {}});
      if (fresh) host_order_.push_back(name);
      for (const auto& [key, variable] : variables) it->second.variables[key] = variable;
      auto& members = group_hosts_[section_];
      if (std::find(members.begin(), members.end(), name) == members.end()) members.push_back(name);
    }
  }

  // `hide`: the text follows a password variable on its line and may be the secret.
  void read_variable(const std::string& text, int number, int column, Variables& into, bool hide = false) {
    auto equals = text.find('=');
    if (equals == std::string::npos) {
      errors_.add(number, column, "variable",
                  hide || begins_with_password_variable(text)
                      ? "not name=value (write name=value; the text is not shown, it may be a password)"
                      : "`" + text + "` is not name=value");
      return;
    }
    std::string key = trim(text.substr(0, equals));
    if (is_password_variable(key)) {
      // Never keep or echo the value: it is the secret.
      if (options_.password_env.empty())
        errors_.add(number, column, key,
                    "passwords are not copied into the inventory (pass --password-env XFT_SSH_PASSWORD to import: "
                    "the YAML then says password_env: XFT_SSH_PASSWORD, and you export XFT_SSH_PASSWORD=... "
                    "before running xftctl)");
      else
        into[key] = Variable{"", number, column};
      return;
    }
    into[key] = Variable{unquote(trim(text.substr(equals + 1))), number, column};
  }

  void read_child(const std::string& line, int number, int indent) {
    if (!is_inventory_name(line)) {
      errors_.add(number, indent, "children", "`" + line + "` is not a valid group name");
      return;
    }
    children_[section_].push_back({line, number});
  }

  // Every group a host belongs to, directly or through :children, each with
  // its distance from the host (0 = listed directly).
  std::map<std::string, int> groups_of(const std::string& host) {
    std::map<std::string, int> distance;
    for (const auto& [group, members] : group_hosts_)
      if (std::find(members.begin(), members.end(), host) != members.end()) distance[group] = 0;
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [parent, children] : children_) {
        for (const auto& child : children) {
          auto it = distance.find(child.first);
          if (it == distance.end()) continue;
          int through = it->second + 1;
          // The bound stops a :children cycle from growing forever.
          if ((!distance.count(parent) || distance[parent] > through) && through <= 64) {
            distance[parent] = through;
            grew = true;
          }
        }
      }
    }
    return distance;
  }

  // Ansible's order: [all:vars] first, then groups from the farthest parent
  // to the host's own groups (by name within a level), then the host line.
  Variables effective_variables(const IniHost& host, const std::map<std::string, int>& groups) {
    Variables result;
    auto merge = [&](const Variables& variables) {
      for (const auto& [key, variable] : variables) result[key] = variable;
    };
    if (group_variables_.count("all")) merge(group_variables_["all"]);
    std::vector<std::pair<std::string, int>> ordered(groups.begin(), groups.end());
    std::stable_sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) { return a.second > b.second; });
    for (const auto& [group, distance] : ordered)
      if (group != "all" && group_variables_.count(group)) merge(group_variables_[group]);
    merge(host.variables);
    return result;
  }

  // The value when it passes `check`; otherwise an error at the variable.
  std::optional<std::string> checked(const std::string& key, const Variable& variable, const std::string& value,
                                     Problem (*check)(std::string_view)) {
    if (auto problem = check(value)) {
      errors_.add(variable.line, variable.column, key, *problem);
      return std::nullopt;
    }
    return value;
  }

  // Imported values obey the YAML inventory's grammar (inventory/grammar.h).
  void apply_variable(const std::string& key, const Variable& variable, Host& host) {
    const std::string& value = variable.value;
    if (key == "ansible_host" || key == "ansible_ssh_host") {
      // Kept even when refused, so the host is not also reported as having no address.
      checked(key, variable, value, check_address);
      host.address = value;
    } else if (key == "ansible_user" || key == "ansible_ssh_user") {
      if (auto user = checked(key, variable, value, check_user_name)) host.user = *user;
    } else if (key == "ansible_port" || key == "ansible_ssh_port") {
      if (auto port = checked(key, variable, value, check_port)) host.port = std::stoi(*port);
    } else if (key == "ansible_ssh_private_key_file" || key == "ansible_private_key_file") {
      if (auto path = checked(key, variable, expand_home(value), check_key_path)) host.credentials.key = *path;
    } else if (become_password_variables.count(key)) {
      warn(key, variable, "ignored (xftctl logs in as the user itself and has no use for a become password)");
    } else if (!ansible_only_variables.count(key) && !ssh_password_variables.count(key)) {
      warn(key, variable, "ignored (no inventory field corresponds to it)");
    }
  }

  // An SSH password stands for password_env, unless the host logs in with a key.
  void apply_password(const Variables& variables, Host& host) {
    for (const auto& key : ssh_password_variables) {
      auto found = variables.find(key);
      if (found == variables.end()) continue;
      if (!host.credentials.key.empty()) warn(key, found->second, "ignored (the host logs in with its key file)");
    }
  }

  void warn(const std::string& key, const Variable& variable, const std::string& what) {
    std::string warning = one_line(path_ + ":" + std::to_string(variable.line + 1) + ":" +
                                   std::to_string(variable.column + 1) + ": " + key + ": " + what);
    if (std::find(warnings_.begin(), warnings_.end(), warning) == warnings_.end()) warnings_.push_back(warning);
  }

  void build_hosts() {
    for (const auto& name : host_order_) {
      const IniHost& ini = hosts_[name];
      Host host;
      host.name = name;
      host.address = name;
      host.line = ini.line + 1;
      auto groups = groups_of(name);
      auto variables = effective_variables(ini, groups);
      for (const auto& [key, variable] : variables) apply_variable(key, variable, host);
      apply_password(variables, host);
      if (host.address == name && !is_valid_address(name))
        errors_.add(ini.line, 0, "host",
                    "`" + name + "` is not an IP address or DNS name and has no ansible_host= (add one)");
      for (const auto& group : group_order_)
        if (groups.count(group) && !whole_inventory_sections.count(group)) host.groups.push_back(group);
      for (const auto& group : host.groups) inventory_.groups[group].push_back(name);
      inventory_.hosts.push_back(std::move(host));
    }
    check_duplicate_addresses();
    check_children();
    if (inventory_.hosts.empty() && errors_.empty()) errors_.add(0, 0, "hosts", "the file lists no hosts (add them under [all_hosts])");
    inventory_.path = path_;
    apply_password_env(inventory_, options_);
  }

  void check_duplicate_addresses() {
    std::map<std::string, const Host*> seen;
    for (const auto& host : inventory_.hosts) {
      auto [it, fresh] = seen.emplace(host.address, &host);
      if (!fresh)
        errors_.add(host.line - 1, 0, "host",
                    host.name + " has the same address " + host.address + " as " + it->second->name +
                        " (line " + std::to_string(it->second->line) + "; each host needs its own address)");
    }
  }

  void check_children() {
    for (const auto& [parent, children] : children_)
      for (const auto& [child, line] : children)
        if (!group_hosts_.count(child) && !children_.count(child))
          errors_.add(line, 0, "children", "group `" + child + "` is not defined in this file");
  }

  std::string path_;
  ImportOptions options_;
  ErrorList errors_;
  std::string section_;
  Kind kind_ = Kind::hosts;
  std::map<std::string, IniHost> hosts_;
  std::vector<std::string> host_order_;
  std::vector<std::string> group_order_;
  std::map<std::string, std::vector<std::string>> group_hosts_;
  std::map<std::string, std::vector<std::pair<std::string, int>>> children_;
  std::map<std::string, Variables> group_variables_;
  Inventory inventory_;
  std::vector<std::string> warnings_;
};

}  // namespace

Expected<ImportResult> import_ansible(const std::string& ini_text, const std::string& path,
                                      const ImportOptions& options) {
  return Importer(path, options).run(ini_text);
}

}  // namespace xft::inventory
