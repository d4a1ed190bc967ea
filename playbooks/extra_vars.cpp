#include "playbooks/extra_vars.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <map>

#include "common/atomic_file.h"
#include "inventory/grammar.h"

namespace xft::playbooks {
namespace {

using inventory::printable;
using Json = nlohmann::json;

const char* const kNameFix = "not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)";
const char* const kNoValue = "has no value (write one, or \"\" for an empty text)";
// Deep or alias-multiplied documents ("billion laughs") are refused before
// they cost memory; real variable files are far below both.
constexpr int kMaxDepth = 16;
constexpr size_t kMaxValues = 10000;

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

Expected<void> add_assignment(const std::string& item, Json& vars) {
  auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) return make_error("-e " + printable(item) + ": give NAME=VALUE");
  std::string name = item.substr(0, eq), value = item.substr(eq + 1);
  if (!is_variable_name(name)) return make_error("-e " + printable(name) + ": " + kNameFix);
  if (auto problem = value_problem(value); !problem.empty()) return make_error("-e " + name + ": " + problem);
  vars[name] = value;
  return {};
}

const char* kind_of(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  if (node.IsNull()) return "nothing";
  return "a value";
}

// A mapping of variables from YAML or JSON text, each checked as NAME=VALUE is.
class MappingReader {
 public:
  explicit MappingReader(std::string path) : path_(std::move(path)) {}

  Expected<Json> read(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return make_error(at(e.mark) + "yaml: " + e.msg + " (fix the YAML or JSON syntax)");
    }
    if (root.IsNull()) return Json::object();  // an empty file: no variables
    if (!root.IsMap())
      return make_error(at(root.Mark()) + "variables: expected a mapping of names to values, got " + kind_of(root) +
                        " (e.g. {\"run_id\": \"7\"}, or run_id: 7 in a file)");
    Json vars = Json::object();
    if (!read_map(root, "", 0, vars)) return make_error(error_);
    return vars;
  }

 private:
  std::string at(const YAML::Mark& mark) const {
    int line = mark.line < 0 ? 0 : mark.line, column = mark.column < 0 ? 0 : mark.column;
    return printable(path_) + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
  }

  bool fail(const YAML::Node& node, const std::string& name, const std::string& what) {
    error_ = at(node.Mark()) + name + ": " + what;
    return false;
  }

  bool read_map(const YAML::Node& map, const std::string& prefix, int depth, Json& into) {
    std::map<std::string, int> seen;  // key -> 1-based line
    for (const auto& pair : map) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar()) return fail(key, prefix.empty() ? "variables" : prefix, std::string("a key is ") +
                                                                                     kind_of(key) + " (write a name)");
      std::string name = key.Scalar();
      std::string dotted = prefix.empty() ? name : prefix + "." + name;
      if (!is_variable_name(name)) return fail(key, prefix.empty() ? printable(name) : printable(dotted), kNameFix);
      if (auto [it, fresh] = seen.emplace(name, key.Mark().line + 1); !fresh)
        return fail(key, dotted, "duplicate variable (also at line " + std::to_string(it->second) + "; keep one)");
      // An empty value's own position is wherever the parser went next; the key is where to look.
      if (pair.second.IsNull()) return fail(key, dotted, kNoValue);
      if (!read_value(pair.second, dotted, depth + 1, into[name])) return false;
    }
    return true;
  }

  bool read_value(const YAML::Node& node, const std::string& name, int depth, Json& into) {
    if (++values_ > kMaxValues)
      return fail(node, name, "more than " + std::to_string(kMaxValues) + " values (split the file)");
    if (depth > kMaxDepth)
      return fail(node, name, "nested deeper than " + std::to_string(kMaxDepth) + " levels (flatten it)");
    if (node.IsMap()) {
      into = Json::object();
      return read_map(node, name, depth, into);
    }
    if (node.IsSequence()) {
      into = Json::array();
      for (size_t i = 0; i < node.size(); ++i)
        if (!read_value(node[i], name + "[" + std::to_string(i) + "]", depth + 1, into.emplace_back()))
          return false;
      return true;
    }
    if (node.IsScalar()) {
      const std::string& value = node.Scalar();
      if (auto problem = value_problem(value); !problem.empty()) return fail(node, name, problem);
      into = value;
      return true;
    }
    return fail(node, name, kNoValue);
  }

  std::string path_;
  std::string error_;
  size_t values_ = 0;
};

Expected<Json> read_mapping_file(const std::string& path) {
  if (path.empty()) return make_error("-e @: give a file after @ (e.g. -e @vars.yaml)");
  auto text = read_file(path);
  if (!text) return make_error("-e @" + printable(path) + ": " + text.error().message);
  return MappingReader(path).read(*text);
}

bool is_inline_mapping(const std::string& item) {
  size_t first = item.find_first_not_of(" \t");
  return first != std::string::npos && item[first] == '{';
}

}  // namespace

Expected<Json> parse_extra_vars(const std::vector<std::string>& items) {
  Json vars = Json::object();
  for (const auto& item : items) {
    if (!item.empty() && item[0] == '@') {
      auto read = read_mapping_file(item.substr(1));
      if (!read) return read.error();
      vars.update(*read);
    } else if (is_inline_mapping(item)) {
      auto read = MappingReader("-e").read(item);
      if (!read) return read.error();
      vars.update(*read);
    } else if (auto added = add_assignment(item, vars); !added) {
      return added.error();
    }
  }
  return vars;
}

}  // namespace xft::playbooks
