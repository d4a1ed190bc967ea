#include "engine/constrain/json_schema.h"

#include <algorithm>
#include <set>

namespace xft::engine::constrain {

namespace {

using json = nlohmann::json;

const std::set<std::string>& supported_keywords() {
  static const std::set<std::string> keywords = {
      "type",     "properties", "required", "additionalProperties", "enum",    "const",    "items",
      "anyOf",    "minItems",   "maxItems", "minLength",            "maxLength", "$ref",   "$defs",
      "definitions", "title",   "description", "default",           "examples", "$schema", "$id",
      "$comment"};
  return keywords;
}

std::string where(const std::string& path) { return path.empty() ? "the schema's root" : path; }

bool type_matches(const std::string& type, const json& value) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer() || (value.is_number_float() && value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>())));
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  return false;
}

std::string byte_name(int byte) {
  if (byte >= 0x21 && byte < 0x7f) return std::string("'") + static_cast<char>(byte) + "'";
  return "byte " + std::to_string(byte);
}

class Compiler {
 public:
  Compiler(Grammar& grammar, const SchemaLimits& limits) : g_(grammar), limits_(limits) {}

  Expected<int32_t> compile_root(const json& schema, const std::string& path) {
    const json* saved = root_;
    root_ = &schema;
    auto node = compile(schema, path, 0);
    root_ = saved;
    return node;
  }

 private:
  Expected<int32_t> compile(const json& s, const std::string& path, int depth) {
    if (depth > limits_.max_depth)
      return make_error("schemas nested deeper than " + std::to_string(limits_.max_depth) + " levels at " + where(path));
    if (g_.nodes.size() > limits_.max_nodes)
      return make_error("the schema is too large: more than " + std::to_string(limits_.max_nodes) +
                        " parts once its $refs are expanded");
    if (s.is_boolean()) {
      if (s.get<bool>()) return g_.any;
      return make_error("the schema 'false' at " + where(path) + " accepts no value");
    }
    if (!s.is_object()) return make_error("the schema at " + where(path) + " must be an object");
    for (const auto& [key, value] : s.items()) {
      if (!supported_keywords().count(key))
        return make_error("keyword '" + key + "' at " + where(path) +
                          " is not supported (supported: type, properties, required, additionalProperties, enum, "
                          "const, items, anyOf, minItems, maxItems, minLength, maxLength, $ref to $defs)");
    }
    if (s.contains("$ref")) return compile_ref(s, path, depth);
    if (s.contains("anyOf")) return compile_any_of(s, path, depth);
    if (s.contains("const")) return compile_literals(s, json::array({s["const"]}), path + "/const");
    if (s.contains("enum")) return compile_literals(s, s["enum"], path + "/enum");
    if (!s.contains("type")) return compile_type(s, inferred_type(s), path, depth);
    const json& type = s["type"];
    if (type.is_string()) return compile_type(s, type.get<std::string>(), path, depth);
    if (!type.is_array() || type.empty() || type.size() > 7)
      return make_error("'type' at " + where(path) + " must be a type name or a list of them");
    std::set<std::string> names;
    for (const json& t : type) {
      if (!t.is_string()) return make_error("'type' at " + where(path) + " must list type names");
      names.insert(t.get<std::string>());
    }
    if (names.count("number")) names.erase("integer");  // every integer is a number; both would start alike
    std::vector<int32_t> alternatives;
    for (const std::string& name : names) {
      auto node = compile_type(s, name, path, depth);
      if (!node) return node;
      alternatives.push_back(*node);
    }
    return any_of(std::move(alternatives), path);
  }

  static std::string inferred_type(const json& s) {
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) return "object";
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return "array";
    if (s.contains("minLength") || s.contains("maxLength")) return "string";
    return "";
  }

  Expected<int32_t> compile_ref(const json& s, const std::string& path, int depth) {
    const json& ref = s["$ref"];
    if (!ref.is_string()) return make_error("'$ref' at " + where(path) + " must be a string");
    const std::string target = ref.get<std::string>();
    const json* schema = resolve_ref(target);
    if (!schema)
      return make_error("'$ref' \"" + target + "\" at " + where(path) +
                        " does not name a schema of this document's $defs (\"#/$defs/Name\")");
    if (std::find(refs_.begin(), refs_.end(), target) != refs_.end())
      return make_error("'$ref' \"" + target + "\" at " + where(path) +
                        " refers back to itself: recursive schemas are not supported");
    refs_.push_back(target);
    auto node = compile(*schema, target.substr(1), depth + 1);
    refs_.pop_back();
    return node;
  }

  const json* resolve_ref(const std::string& target) const {
    if (target == "#") return root_;
    for (const char* section : {"#/$defs/", "#/definitions/"}) {
      const std::string prefix = section;
      if (target.rfind(prefix, 0) != 0) continue;
      const std::string name = target.substr(prefix.size());
      const std::string key = prefix.substr(2, prefix.size() - 3);
      if (!root_->is_object() || !root_->contains(key) || !(*root_)[key].is_object()) return nullptr;
      const json& defs = (*root_)[key];
      if (name.empty() || name.find('/') != std::string::npos || !defs.contains(name)) return nullptr;
      return &defs[name];
    }
    return nullptr;
  }

  Expected<int32_t> compile_any_of(const json& s, const std::string& path, int depth) {
    const json& list = s["anyOf"];
    if (!list.is_array() || list.empty() || list.size() > limits_.max_any_of)
      return make_error("'anyOf' at " + where(path) + " must list 1 to " + std::to_string(limits_.max_any_of) +
                        " schemas");
    for (const char* other : {"type", "properties", "items", "enum", "const"}) {
      if (s.contains(other))
        return make_error("'anyOf' beside '" + std::string(other) + "' at " + where(path) +
                          " is not supported (move it into each alternative)");
    }
    std::vector<int32_t> alternatives;
    for (size_t i = 0; i < list.size(); ++i) {
      auto node = compile(list[i], path + "/anyOf/" + std::to_string(i), depth + 1);
      if (!node) return node;
      alternatives.push_back(*node);
    }
    return any_of(std::move(alternatives), path);
  }

  Expected<int32_t> any_of(std::vector<int32_t> alternatives, const std::string& path) {
    if (alternatives.size() == 1) return alternatives[0];
    for (size_t i = 0; i < alternatives.size(); ++i) {
      for (size_t j = i + 1; j < alternatives.size(); ++j) {
        const auto both = g_.nodes[alternatives[i]].first_bytes & g_.nodes[alternatives[j]].first_bytes;
        if (both.none()) continue;
        int byte = 0;
        while (!both.test(byte)) ++byte;
        return make_error("the alternatives of 'anyOf' (or 'type') at " + where(path) + " can both start with " +
                          byte_name(byte) +
                          ": only alternatives of different JSON types (or enums that start differently) are supported");
      }
    }
    Node node;
    node.kind = NodeKind::AnyOf;
    node.children = std::move(alternatives);
    return add(std::move(node));
  }

  Expected<int32_t> compile_literals(const json& s, const json& values, const std::string& path) {
    if (!values.is_array() || values.empty() || values.size() > limits_.max_enum)
      return make_error("'enum' at " + where(path) + " must list 1 to " + std::to_string(limits_.max_enum) + " values");
    std::vector<std::string> literals;
    for (const json& value : values) {
      if (s.contains("type") && s["type"].is_string() && !type_matches(s["type"].get<std::string>(), value)) continue;
      std::string literal = value.dump(-1, ' ', false, json::error_handler_t::strict);
      if (literal.size() > limits_.max_literal_bytes)
        return make_error("a value of " + where(path) + " is longer than " +
                          std::to_string(limits_.max_literal_bytes) + " bytes");
      literals.push_back(std::move(literal));
    }
    if (literals.empty()) return make_error("no value of " + where(path) + " has the schema's 'type'");
    return add_literals(g_, std::move(literals));
  }

  Expected<uint32_t> bound(const json& s, const char* key, uint32_t fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > limits_.max_bound)
      return make_error("'" + std::string(key) + "' at " + where(path) + " must be an integer from 0 to " +
                        std::to_string(limits_.max_bound));
    return static_cast<uint32_t>(v.get<int64_t>());
  }

  Expected<int32_t> compile_type(const json& s, const std::string& type, const std::string& path, int depth) {
    if (type.empty()) return g_.any;
    if (type == "object") return compile_object(s, path, depth);
    if (type == "array") return compile_array(s, path, depth);
    if (type == "string") return compile_string(s, path);
    if (type == "boolean") return add_literals(g_, {"true", "false"});
    if (type == "null") return add_literals(g_, {"null"});
    if (type == "integer" || type == "number") {
      Node node;
      node.kind = type == "integer" ? NodeKind::Integer : NodeKind::Number;
      return add(std::move(node));
    }
    return make_error("'type' \"" + type + "\" at " + where(path) +
                      " is not a JSON type (object, array, string, number, integer, boolean, null)");
  }

  Expected<int32_t> compile_string(const json& s, const std::string& path) {
    Node node;
    node.kind = NodeKind::String;
    auto low = bound(s, "minLength", 0, path);
    if (!low) return low.error();
    auto high = bound(s, "maxLength", UINT32_MAX, path);
    if (!high) return high.error();
    if (*low > *high) return make_error("'minLength' exceeds 'maxLength' at " + where(path));
    node.min_length = *low;
    node.max_length = *high;
    return add(std::move(node));
  }

  Expected<int32_t> compile_array(const json& s, const std::string& path, int depth) {
    Node node;
    node.kind = NodeKind::Array;
    auto low = bound(s, "minItems", 0, path);
    if (!low) return low.error();
    auto high = bound(s, "maxItems", UINT32_MAX, path);
    if (!high) return high.error();
    if (*low > *high) return make_error("'minItems' exceeds 'maxItems' at " + where(path));
    node.min_items = *low;
    node.max_items = *high;
    node.items = g_.any;
    if (s.contains("items")) {
      if (s["items"].is_array()) return make_error("'items' as a list (tuples) at " + where(path) + " is not supported");
      auto items = compile(s["items"], path + "/items", depth + 1);
      if (!items) return items;
      node.items = *items;
    }
    return add(std::move(node));
  }

  Expected<int32_t> compile_object(const json& s, const std::string& path, int depth) {
    Node node;
    node.kind = NodeKind::Object;
    bool closed = false;
    if (s.contains("additionalProperties")) {
      const json& extra = s["additionalProperties"];
      if (!extra.is_boolean())
        return make_error("'additionalProperties' at " + where(path) +
                          " as a schema is not supported (true or false)");
      closed = !extra.get<bool>();
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return make_error("'required' at " + where(path) + " must list property names");
      for (const json& name : s["required"]) {
        if (!name.is_string()) return make_error("'required' at " + where(path) + " must list property names");
        required.insert(name.get<std::string>());
      }
    }
    if (s.contains("properties")) {
      const json& properties = s["properties"];
      if (!properties.is_object()) return make_error("'properties' at " + where(path) + " must be an object");
      if (properties.size() > limits_.max_properties)
        return make_error("'properties' at " + where(path) + " has more than " +
                          std::to_string(limits_.max_properties) + " entries");
      for (const auto& [name, schema] : properties.items()) {
        auto value = compile(schema, path + "/properties/" + name, depth + 1);
        if (!value) return value;
        node.properties.push_back(Property{json(name).dump(), *value, required.count(name) > 0});
      }
    }
    for (const std::string& name : required) {
      const std::string key = json(name).dump();
      if (std::none_of(node.properties.begin(), node.properties.end(), [&](const Property& p) { return p.key == key; }))
        return make_error("required property \"" + name + "\" at " + where(path) + " is not among its 'properties'");
    }
    std::sort(node.properties.begin(), node.properties.end(),
              [](const Property& a, const Property& b) { return a.key < b.key; });
    for (size_t i = 0; i < node.properties.size(); ++i) {
      if (node.properties[i].required) node.required_mask |= uint64_t{1} << i;
    }
    node.any_keys = node.properties.empty() && !closed;
    return add(std::move(node));
  }

  int32_t add(Node node) {
    g_.nodes.push_back(std::move(node));
    const auto id = static_cast<int32_t>(g_.nodes.size() - 1);
    finish_node(g_, id);
    return id;
  }

  Grammar& g_;
  const SchemaLimits& limits_;
  const json* root_ = nullptr;
  std::vector<std::string> refs_;  // $refs being expanded, outermost first
};

Expected<Grammar> checked(Grammar grammar) {
  constexpr uint32_t kMaxSmallestAnswer = 1 << 20;
  if (grammar.nodes[grammar.root].min_bytes >= kMaxSmallestAnswer)
    return make_error("the smallest answer the schema allows is over " + std::to_string(kMaxSmallestAnswer) + " bytes");
  return grammar;
}

}  // namespace

Expected<Grammar> compile_json_schema(const nlohmann::json& schema, const SchemaLimits& limits) {
  Grammar grammar;
  add_any_nodes(grammar);
  Compiler compiler(grammar, limits);
  auto root = compiler.compile_root(schema, "");
  if (!root) return root.error();
  grammar.root = *root;
  return checked(std::move(grammar));
}

Grammar json_object_grammar() {
  Grammar grammar;
  add_any_nodes(grammar);
  grammar.root = grammar.any_object;
  return grammar;
}

Expected<Grammar> compile_tool_call(const std::vector<ToolSpec>& tools, const SchemaLimits& limits) {
  if (tools.empty()) return make_error("no tool to call");
  if (tools.size() > limits.max_tools)
    return make_error("more than " + std::to_string(limits.max_tools) + " tools for a forced call");
  Grammar grammar;
  add_any_nodes(grammar);
  Compiler compiler(grammar, limits);
  std::vector<std::pair<std::string, int32_t>> prefixes;
  std::set<std::string> seen;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!seen.insert(tools[i].name).second) continue;
    int32_t arguments = grammar.any_object;
    if (!tools[i].parameters.is_null()) {
      auto node = compiler.compile_root(tools[i].parameters, "tools[" + std::to_string(i) + "].function.parameters");
      if (!node) return node.error();
      if (!grammar.nodes[*node].first_bytes.test('{') || grammar.nodes[*node].first_bytes.count() != 1)
        return make_error("tools[" + std::to_string(i) + "].function.parameters must describe an object");
      arguments = *node;
    }
    prefixes.emplace_back("{\"name\": " + nlohmann::json(tools[i].name).dump() + ", \"arguments\": ", arguments);
  }
  std::sort(prefixes.begin(), prefixes.end());
  Node choice;
  choice.kind = NodeKind::Choice;
  choice.lit_begin = static_cast<int32_t>(grammar.literals.size());
  for (auto& [prefix, node] : prefixes) {
    grammar.literals.push_back(prefix);
    choice.children.push_back(node);
  }
  choice.lit_end = static_cast<int32_t>(grammar.literals.size());
  grammar.nodes.push_back(std::move(choice));
  const auto choice_id = static_cast<int32_t>(grammar.nodes.size() - 1);
  finish_node(grammar, choice_id);

  Node call;
  call.kind = NodeKind::Seq;
  call.children = {add_literals(grammar, {"<tool_call>\n"}), choice_id, add_literals(grammar, {"}\n</tool_call>"})};
  grammar.nodes.push_back(std::move(call));
  grammar.root = static_cast<int32_t>(grammar.nodes.size() - 1);
  finish_node(grammar, grammar.root);
  return checked(std::move(grammar));
}

}  // namespace xft::engine::constrain
