// The values a chat template computes with: Python's data model as far as
// jinja2 templates see it (None, bool, int, float, str, list, dict, plus
// jinja2's Undefined, namespace() and macros). Strings remember which of
// their bytes came from the caller's data (messages, tools, kwargs), so the
// prompt builder can refuse to read control tokens out of user text.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xft::engine::chat_template {

// A template failure: one line, raised inside the interpreter and returned
// as an error value by Template::render.
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& message);

// [begin, end) byte ranges of text that came from the caller's data.
struct Span {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const Span&) const = default;
};

struct Text {
  std::string bytes;
  std::vector<Span> untrusted;  // sorted, disjoint, merged when adjacent

  void append(const Text& other);
  void append_trusted(std::string_view bytes_to_add);
  // Bytes [begin, end) with the spans that fall inside them.
  Text substr(size_t begin, size_t end) const;
  // The whole of `bytes` untrusted when any of `source` was (for results of
  // transformations that do not keep byte positions: replace, upper, json).
  static Text derived(std::string bytes, bool from_untrusted);
  bool any_untrusted() const { return !untrusted.empty(); }
};

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Macro };

struct Value;
struct MacroNode;  // parser.h

struct Dict {
  std::vector<std::pair<std::string, Value>> entries;  // insertion order, as Python's dict
  bool untrusted_keys = false;                         // keys came from the caller's data
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

struct Value {
  Kind kind = Kind::Undefined;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::shared_ptr<const Text> text;
  std::shared_ptr<const std::vector<Value>> list;  // lists and tuples are immutable in the sandbox
  std::shared_ptr<Dict> dict;                       // Dict or Namespace (only namespaces are assigned to)
  const MacroNode* macro = nullptr;
  std::string undefined_hint;  // why it is undefined, for the error when it is used

  static Value undefined(std::string hint = {});
  static Value none();
  static Value from_bool(bool b);
  static Value from_int(int64_t i);
  static Value from_float(double f);
  static Value from_text(Text t);
  static Value trusted_string(std::string s);
  static Value from_list(std::vector<Value> items);
  static Value from_dict(Dict d);
  static Value new_namespace(Dict d);
  static Value from_macro(const MacroNode* node);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_mapping() const { return kind == Kind::Dict; }
  const std::string& str() const { return text->bytes; }
  double as_double() const;
};

std::string_view kind_name(const Value& v);
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
// Python's < for numbers, strings and lists; other pairs are a TemplateError.
bool less(const Value& a, const Value& b);
// Python's str(v) (jinja2 prints Undefined as ""), keeping untrusted spans of strings.
Text to_text(const Value& v);
std::string python_repr(const Value& v);
std::string python_float_repr(double v);
bool contains_untrusted(const Value& v);
// Python's json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=...)
// indent < 0: None. Empty separators: Python's defaults for that indent.
// Fails once the text would pass max_bytes.
std::string to_json(const Value& v, int indent, const std::string& item_separator,
                    const std::string& key_separator, bool sort_keys, size_t max_bytes);

}  // namespace xft::engine::chat_template
