#include "playbooks/extra_vars.h"

#include <cstdio>

#include "inventory/grammar.h"

namespace xft::playbooks {
namespace {

bool is_variable_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (unsigned char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// What is wrong with a value, or "" when it is one line of text.
std::string value_problem(const std::string& value) {
  for (unsigned char c : value) {
    if (c == '\n') return "the value contains a newline (extra variables are one line each)";
    if (c == '\r') return "the value contains a carriage return (extra variables are one line each)";
    if (c < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      return std::string("the value contains the control character ") + (c == '\t' ? "\\t" : escaped) +
             " (remove it; extra variables are printable text)";
    }
  }
  return "";
}

}  // namespace

Expected<nlohmann::json> parse_extra_vars(const std::vector<std::string>& items) {
  using inventory::printable;
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return make_error("-e " + printable(item) + ": give NAME=VALUE");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    if (!is_variable_name(name))
      return make_error("-e " + printable(name) +
                        ": not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
    if (auto problem = value_problem(value); !problem.empty()) return make_error("-e " + name + ": " + problem);
    vars[name] = value;
  }
  return vars;
}

}  // namespace xft::playbooks
