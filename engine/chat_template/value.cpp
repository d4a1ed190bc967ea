#include "engine/chat_template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>


namespace xft::engine::chat_template {

void fail(const std::string& message) { throw TemplateError(message); }

namespace {

void add_span(std::vector<Span>& spans, Span s) {
  if (s.begin >= s.end) return;
  if (!spans.empty() && spans.back().end >= s.begin) {
    spans.back().end = std::max(spans.back().end, s.end);
    return;
  }
  spans.push_back(s);
}

}  // namespace

void Text::append(const Text& other) {
  const size_t offset = bytes.size();
  bytes += other.bytes;
  for (const Span& s : other.untrusted) add_span(untrusted, {s.begin + offset, s.end + offset});
}

void Text::append_trusted(std::string_view more) { bytes.append(more); }

Text Text::substr(size_t begin, size_t end) const {
  Text out;
  end = std::min(end, bytes.size());
  if (begin >= end) return out;
  out.bytes = bytes.substr(begin, end - begin);
  for (const Span& s : untrusted) {
    const size_t b = std::max(s.begin, begin);
    const size_t e = std::min(s.end, end);
    if (b < e) add_span(out.untrusted, {b - begin, e - begin});
  }
  return out;
}

Text Text::derived(std::string new_bytes, bool from_untrusted) {
  Text out;
  out.bytes = std::move(new_bytes);
  if (from_untrusted && !out.bytes.empty()) out.untrusted.push_back({0, out.bytes.size()});
  return out;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.undefined_hint = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::from_bool(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.boolean = b;
  return v;
}
Value Value::from_int(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.integer = i;
  return v;
}
Value Value::from_float(double f) {
  Value v;
  v.kind = Kind::Float;
  v.number = f;
  return v;
}
Value Value::from_text(Text t) {
  Value v;
  v.kind = Kind::String;
  v.text = std::make_shared<const Text>(std::move(t));
  return v;
}
Value Value::trusted_string(std::string s) {
  Text t;
  t.bytes = std::move(s);
  return from_text(std::move(t));
}
Value Value::from_list(std::vector<Value> items) {
  Value v;
  v.kind = Kind::List;
  v.list = std::make_shared<const std::vector<Value>>(std::move(items));
  return v;
}
Value Value::from_dict(Dict d) {
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::new_namespace(Dict d) {
  Value v = from_dict(std::move(d));
  v.kind = Kind::Namespace;
  return v;
}
Value Value::from_macro(const MacroNode* node) {
  Value v;
  v.kind = Kind::Macro;
  v.macro = node;
  return v;
}

double Value::as_double() const {
  switch (kind) {
    case Kind::Int: return static_cast<double>(integer);
    case Kind::Float: return number;
    case Kind::Bool: return boolean ? 1 : 0;
    default: fail(std::string("expected a number, got ") + std::string(kind_name(*this)));
  }
}

std::string_view kind_name(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Macro: return "Macro";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.boolean;
    case Kind::Int: return v.integer != 0;
    case Kind::Float: return v.number != 0;
    case Kind::String: return !v.str().empty();
    case Kind::List: return !v.list->empty();
    case Kind::Dict: return !v.dict->entries.empty();
    case Kind::Namespace:
    case Kind::Macro: return true;
  }
  return false;
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::Float && b.kind != Kind::Float) {
      const int64_t x = a.kind == Kind::Bool ? a.boolean : a.integer;
      const int64_t y = b.kind == Kind::Bool ? b.boolean : b.integer;
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return a.str() == b.str();
    case Kind::List: {
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equal((*a.list)[i], (*b.list)[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (a.dict->entries.size() != b.dict->entries.size()) return false;
      for (const auto& [k, v] : a.dict->entries) {
        const Value* other = b.dict->find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case Kind::Namespace: return a.dict == b.dict;
    case Kind::Macro: return a.macro == b.macro;
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if (a.kind == Kind::List && b.kind == Kind::List) {
    const auto& x = *a.list;
    const auto& y = *b.list;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + std::string(kind_name(a)) + "' and '" +
       std::string(kind_name(b)) + "'");
}

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, result.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::stoi(sci.substr(e + 1));
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent >= 0) {
      std::string integral = digits.substr(0, std::min<size_t>(digits.size(), exponent + 1));
      integral.append(exponent + 1 - integral.size(), '0');
      std::string fraction = digits.size() > static_cast<size_t>(exponent + 1) ? digits.substr(exponent + 1) : "0";
      out = integral + "." + fraction;
    } else {
      out = "0." + std::string(-exponent - 1, '0') + digits;
    }
    return sign + out;
  }
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1) mantissa += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mantissa + exp_text;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) out += std::string("\\") + quote;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += static_cast<char>(c);
  }
  out += quote;
  return out;
}

}  // namespace

std::string python_repr(const Value& v) {
  switch (v.kind) {
    case Kind::String: return repr_string(v.str());
    case Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += python_repr((*v.list)[i]);
      }
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : v.dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(k) + ": " + python_repr(item);
      }
      return out + "}";
    }
    default: return to_text(v).bytes;
  }
}

Text to_text(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return {};
    case Kind::None: return Text::derived("None", false);
    case Kind::Bool: return Text::derived(v.boolean ? "True" : "False", false);
    case Kind::Int: return Text::derived(std::to_string(v.integer), false);
    case Kind::Float: return Text::derived(python_float_repr(v.number), false);
    case Kind::String: return *v.text;
    case Kind::List:
    case Kind::Dict: return Text::derived(python_repr(v), contains_untrusted(v));
    case Kind::Namespace: return Text::derived("<Namespace>", false);
    case Kind::Macro: return Text::derived("<Macro>", false);
  }
  return {};
}

bool contains_untrusted(const Value& v) {
  switch (v.kind) {
    case Kind::String: return v.text->any_untrusted();
    case Kind::List:
      return std::any_of(v.list->begin(), v.list->end(), [](const Value& x) { return contains_untrusted(x); });
    case Kind::Dict:
    case Kind::Namespace:
      if (v.dict->untrusted_keys && !v.dict->entries.empty()) return true;
      for (const auto& [k, item] : v.dict->entries)
        if (contains_untrusted(item)) return true;
      return false;
    default: return false;
  }
}

namespace {

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

struct JsonStyle {
  size_t max_bytes;
  int indent;
  std::string item_separator;
  std::string key_separator;
  bool sort_keys;
};

void json_value(const Value& v, const JsonStyle& style, int depth, std::string& out) {
  if (depth > 512) fail("tojson: nesting deeper than 512");
  if (out.size() > style.max_bytes) fail("tojson: text longer than " + std::to_string(style.max_bytes) + " bytes");
  const auto newline = [&](int level) {
    if (style.indent < 0) return;
    if (out.size() + static_cast<size_t>(style.indent) * level > style.max_bytes)
      fail("tojson: text longer than " + std::to_string(style.max_bytes) + " bytes");
    out += '\n';
    out.append(static_cast<size_t>(style.indent) * level, ' ');
  };
  switch (v.kind) {
    case Kind::None: out += "null"; return;
    case Kind::Bool: out += v.boolean ? "true" : "false"; return;
    case Kind::Int: out += std::to_string(v.integer); return;
    case Kind::Float:
      if (std::isnan(v.number)) out += "NaN";
      else if (std::isinf(v.number)) out += v.number > 0 ? "Infinity" : "-Infinity";
      else out += python_float_repr(v.number);
      return;
    case Kind::String: json_string(v.str(), out); return;
    case Kind::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += style.item_separator;
        newline(depth + 1);
        json_value((*v.list)[i], style, depth + 1, out);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Kind::Dict:
    case Kind::Namespace: {
      if (v.dict->entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict->entries) entries.push_back(&e);
      if (style.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += style.item_separator;
        newline(depth + 1);
        json_string(entries[i]->first, out);
        out += style.key_separator;
        json_value(entries[i]->second, style, depth + 1, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Kind::Undefined: fail("tojson: Object of type Undefined is not JSON serializable");
    case Kind::Macro: fail("tojson: Object of type Macro is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, int indent, const std::string& item_separator,
                    const std::string& key_separator, bool sort_keys, size_t max_bytes) {
  JsonStyle style{max_bytes, indent, item_separator, key_separator, sort_keys};
  if (style.item_separator.empty()) style.item_separator = indent < 0 ? ", " : ",";
  if (style.key_separator.empty()) style.key_separator = ": ";
  std::string out;
  json_value(v, style, 0, out);
  return out;
}

}  // namespace xft::engine::chat_template
