#include "engine/chat_template/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "engine/chat_template/text_ops.h"

namespace xft::engine::chat_template {

namespace {

// Positional argument `index` or keyword `name`; nullopt when neither is given.
std::optional<Value> arg(const Args& args, const Kwargs& kwargs, size_t index, const std::string& name) {
  if (index < args.size()) return args[index];
  for (const auto& [k, v] : kwargs)
    if (k == name) return v;
  return std::nullopt;
}

std::string string_arg(const std::optional<Value>& v, const std::string& what) {
  if (!v || !v->is_string()) fail(what + " must be a string");
  return v->str();
}

std::optional<std::string> optional_string(const std::optional<Value>& v, const std::string& what) {
  if (!v || v->kind == Kind::None) return std::nullopt;
  return string_arg(v, what);
}

int64_t int_arg(const std::optional<Value>& v, int64_t fallback, const std::string& what) {
  if (!v || v->kind == Kind::None) return fallback;
  if (v->kind == Kind::Int) return v->integer;
  if (v->kind == Kind::Bool) return v->boolean;
  fail(what + " must be an integer");
}

Value string_value(Text t) { return Value::from_text(std::move(t)); }

Value length_of(const Value& v) {
  switch (v.kind) {
    case Kind::String: return Value::from_int(static_cast<int64_t>(code_point_count(v.str())));
    case Kind::List: return Value::from_int(static_cast<int64_t>(v.list->size()));
    case Kind::Dict:
    case Kind::Namespace: return Value::from_int(static_cast<int64_t>(v.dict->entries.size()));
    case Kind::Undefined: return Value::from_int(0);
    default: fail("object of type '" + std::string(kind_name(v)) + "' has no len()");
  }
}

Value to_int(const Value& v, int64_t fallback) {
  switch (v.kind) {
    case Kind::Int: return v;
    case Kind::Bool: return Value::from_int(v.boolean);
    case Kind::Float:
      if (!std::isfinite(v.number) || std::fabs(v.number) > 9.2e18) return Value::from_int(fallback);
      return Value::from_int(static_cast<int64_t>(v.number));
    case Kind::String: {
      std::string s = strip(*v.text, StripSide::Both, std::nullopt).bytes;
      char* end = nullptr;
      errno = 0;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::from_int(i);
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
        return Value::from_int(static_cast<int64_t>(d));
      return Value::from_int(fallback);
    }
    default: return Value::from_int(fallback);
  }
}

Value join(Interpreter& in, const Value& subject, const std::string& separator, const std::optional<std::string>& attribute) {
  Text out;
  Text sep;
  sep.bytes = separator;
  bool first = true;
  for (const Value& item : iterate(subject)) {
    if (!first) out.append(sep);
    first = false;
    out.append(to_text(attribute ? in.attribute(item, *attribute) : item));
    in.check_size(out.bytes.size());
    in.charge(1, 0);
  }
  return string_value(std::move(out));
}

Value items_of(const Value& v) {
  if (v.is_undefined()) return Value::from_list({});
  if (v.kind != Kind::Dict) fail("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [k, item] : v.dict->entries)
    pairs.push_back(Value::from_list({Value::from_text(Text::derived(k, v.dict->untrusted_keys)), item}));
  return Value::from_list(std::move(pairs));
}

Value tojson(Interpreter& in, const Value& subject, const Args& args, const Kwargs& kwargs) {
  for (const auto& [k, v] : kwargs) {
    static const std::set<std::string> known = {"indent", "ensure_ascii", "separators", "sort_keys"};
    if (!known.count(k)) fail("tojson got an unexpected keyword argument '" + k + "'");
  }
  const int indent = static_cast<int>(int_arg(arg(args, kwargs, 0, "indent"), -1, "tojson's indent"));
  std::string item_sep, key_sep;
  if (auto seps = arg({}, kwargs, 99, "separators"); seps && seps->kind == Kind::List) {
    if (seps->list->size() != 2) fail("tojson's separators must be a pair of strings");
    item_sep = string_arg((*seps->list)[0], "tojson's separators");
    key_sep = string_arg((*seps->list)[1], "tojson's separators");
  }
  const bool sort_keys = truthy(arg({}, kwargs, 99, "sort_keys").value_or(Value::from_bool(false)));
  std::string json = to_json(subject, indent, item_sep, key_sep, sort_keys, in.limits().max_string_bytes);
  in.charge(0, json.size());
  in.check_size(json.size());
  return string_value(Text::derived(std::move(json), contains_untrusted(subject)));
}

// select/reject/selectattr/rejectattr: a test by name on each item (or on an attribute of it).
Value filter_by_test(Interpreter& in, const Value& subject, const Args& args, bool by_attribute, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.empty() || !args[0].is_string()) fail("selectattr/rejectattr need an attribute name");
    attribute = args[0].str();
    next = 1;
  }
  std::optional<std::string> test;
  if (next < args.size()) test = string_arg(args[next], "the test name");
  Args test_args(args.begin() + std::min(args.size(), next + 1), args.end());
  std::vector<Value> out;
  for (const Value& item : iterate(subject)) {
    const Value probe = by_attribute ? in.attribute(item, attribute) : item;
    const bool passed = test ? apply_test(in, *test, probe, test_args) : truthy(probe);
    if (passed == keep) out.push_back(item);
  }
  return Value::from_list(std::move(out));
}

Value map_items(Interpreter& in, const Value& subject, const Args& args, const Kwargs& kwargs) {
  std::vector<Value> out;
  if (auto attribute = arg({}, kwargs, 99, "attribute")) {
    const std::string name = string_arg(attribute, "map's attribute");
    const std::optional<Value> fallback = arg({}, kwargs, 99, "default");
    for (const Value& item : iterate(subject)) {
      Value v = in.attribute(item, name);
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::from_list(std::move(out));
  }
  if (args.empty()) fail("map needs a filter name or attribute=");
  const std::string filter = string_arg(args[0], "map's filter name");
  Args rest(args.begin() + 1, args.end());
  for (const Value& item : iterate(subject)) out.push_back(apply_filter(in, filter, item, rest, {}));
  return Value::from_list(std::move(out));
}

Value sorted(Interpreter& in, const Value& subject, const Args& args, const Kwargs& kwargs) {
  std::vector<Value> items = iterate(subject);
  const bool reverse = truthy(arg(args, kwargs, 0, "reverse").value_or(Value::from_bool(false)));
  const std::optional<std::string> attribute = optional_string(arg(args, kwargs, 2, "attribute"), "sort's attribute");
  const auto key = [&](const Value& v) { return attribute ? in.attribute(v, *attribute) : v; };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& a, const Value& b) { return reverse ? less(key(b), key(a)) : less(key(a), key(b)); });
  return Value::from_list(std::move(items));
}

Value case_changed(const Value& v, bool upper) {
  if (!v.is_string()) fail(std::string(upper ? "upper" : "lower") + " needs a string");
  return string_value(Text::derived(upper ? ascii_upper(v.str()) : ascii_lower(v.str()), v.text->any_untrusted()));
}

Value capitalize(const Value& v) {
  std::string s = ascii_lower(v.str());
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return string_value(Text::derived(s, v.text->any_untrusted()));
}

Value title(const Value& v) {
  std::string s = v.str();
  bool start = true;
  for (char& c : s) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c));
    c = static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    start = !alpha;
  }
  return string_value(Text::derived(s, v.text->any_untrusted()));
}

Value first_or_last(const Value& v, bool first) {
  if (v.kind == Kind::String) {
    if (auto c = char_at(*v.text, first ? 0 : -1)) return string_value(*c);
    return Value::undefined("no first/last item of an empty string");
  }
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("no first/last item of an empty sequence");
  return first ? items.front() : items.back();
}

Value min_or_max(const Value& v, bool want_min) {
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("no min/max of an empty sequence");
  Value best = items[0];
  for (const Value& x : items)
    if (want_min ? less(x, best) : less(best, x)) best = x;
  return best;
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& subject, Args args, Kwargs kwargs) {
  if (name == "tojson") return tojson(in, subject, args, kwargs);
  if (name == "safe") return subject;  // no autoescaping, as Hugging Face renders
  if (name == "string") return string_value(to_text(subject));
  if (name == "trim") {
    if (!subject.is_string()) return string_value(strip(to_text(subject), StripSide::Both, std::nullopt));
    return string_value(strip(*subject.text, StripSide::Both, optional_string(arg(args, kwargs, 0, "chars"), "trim's chars")));
  }
  if (name == "length" || name == "count") return length_of(subject);
  if (name == "upper" || name == "lower") return case_changed(subject, name == "upper");
  if (name == "capitalize") return capitalize(subject.is_string() ? subject : string_value(to_text(subject)));
  if (name == "title") return title(subject.is_string() ? subject : string_value(to_text(subject)));
  if (name == "first" || name == "last") return first_or_last(subject, name == "first");
  if (name == "join")
    return join(in, subject, optional_string(arg(args, kwargs, 0, "d"), "join's separator").value_or(""),
                optional_string(arg(args, kwargs, 1, "attribute"), "join's attribute"));
  if (name == "default" || name == "d") {
    const Value fallback = arg(args, kwargs, 0, "default_value").value_or(Value::trusted_string(""));
    const bool boolean = truthy(arg(args, kwargs, 1, "boolean").value_or(Value::from_bool(false)));
    return (subject.is_undefined() || (boolean && !truthy(subject))) ? fallback : subject;
  }
  if (name == "items") return items_of(subject);
  if (name == "list") return Value::from_list(iterate(subject));
  if (name == "int") return to_int(subject, int_arg(arg(args, kwargs, 0, "default"), 0, "int's default"));
  if (name == "float") {
    if (subject.is_number()) return Value::from_float(subject.as_double());
    if (subject.is_string()) {
      char* end = nullptr;
      const double d = std::strtod(subject.str().c_str(), &end);
      if (!subject.str().empty() && end == subject.str().c_str() + subject.str().size()) return Value::from_float(d);
    }
    return Value::from_float(0);
  }
  if (name == "abs") {
    if (subject.kind == Kind::Float) return Value::from_float(std::fabs(subject.number));
    const int64_t i = int_arg(subject, 0, "abs's input");
    if (i == INT64_MIN) fail("integer overflow in abs");
    return Value::from_int(i < 0 ? -i : i);
  }
  if (name == "round") {
    const int64_t precision = int_arg(arg(args, kwargs, 0, "precision"), 0, "round's precision");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::from_float(std::round(subject.as_double() * scale) / scale);
  }
  if (name == "reverse") {
    if (subject.is_string()) return string_value(slice(*subject.text, std::nullopt, std::nullopt, -1));
    std::vector<Value> items = iterate(subject);
    std::reverse(items.begin(), items.end());
    return Value::from_list(std::move(items));
  }
  if (name == "sort") return sorted(in, subject, args, kwargs);
  if (name == "unique") {
    std::vector<Value> out;
    for (const Value& x : iterate(subject))
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); })) out.push_back(x);
    return Value::from_list(std::move(out));
  }
  if (name == "sum") {
    Value total = Value::from_int(0);
    for (const Value& x : iterate(subject)) {
      if (!x.is_number()) fail("sum needs numbers");
      if (total.kind == Kind::Int && x.kind != Kind::Float) total.integer += x.kind == Kind::Bool ? x.boolean : x.integer;
      else total = Value::from_float(total.as_double() + x.as_double());
    }
    return total;
  }
  if (name == "min" || name == "max") return min_or_max(subject, name == "min");
  if (name == "replace") {
    if (!subject.is_string()) fail("replace needs a string");
    const std::string from = string_arg(arg(args, kwargs, 0, "old"), "replace's old");
    const std::string to = string_arg(arg(args, kwargs, 1, "new"), "replace's new");
    const int64_t count = int_arg(arg(args, kwargs, 2, "count"), -1, "replace's count");
    return string_value(Text::derived(replace_all(subject.str(), from, to, count, in.limits().max_string_bytes),
                                      subject.text->any_untrusted()));
  }
  if (name == "select" || name == "reject") return filter_by_test(in, subject, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return filter_by_test(in, subject, args, true, name == "selectattr");
  if (name == "map") return map_items(in, subject, args, kwargs);
  if (name == "indent") {
    const int64_t width = int_arg(arg(args, kwargs, 0, "width"), 4, "indent's width");
    const bool first = truthy(arg(args, kwargs, 1, "first").value_or(Value::from_bool(false)));
    const std::string pad(static_cast<size_t>(std::clamp<int64_t>(width, 0, 1000)), ' ');
    const Text t = to_text(subject);
    std::string s = replace_all(t.bytes, "\n", "\n" + pad, -1, in.limits().max_string_bytes);
    if (first) s = pad + s;
    return string_value(Text::derived(std::move(s), t.any_untrusted()));
  }
  fail("unknown filter '" + name + "'");
}

bool apply_test(Interpreter& in, const std::string& name, const Value& v, const Args& args) {
  (void)in;
  const auto operand = [&]() -> const Value& {
    if (args.empty()) fail("test '" + name + "' needs an argument");
    return args[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.kind == Kind::None;
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.kind == Kind::Dict;
  if (name == "iterable")
    return v.kind == Kind::String || v.kind == Kind::List || v.kind == Kind::Dict || v.is_undefined();
  if (name == "sequence")
    return v.kind == Kind::String || v.kind == Kind::List || v.kind == Kind::Dict || v.is_undefined();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::Int;
  if (name == "float") return v.kind == Kind::Float;
  if (name == "boolean") return v.kind == Kind::Bool;
  if (name == "true") return v.kind == Kind::Bool && v.boolean;
  if (name == "false") return v.kind == Kind::Bool && !v.boolean;
  if (name == "callable") return v.kind == Kind::Macro;
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, operand());
  if (name == "ne" || name == "!=") return !equal(v, operand());
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, operand());
  if (name == "gt" || name == "greaterthan" || name == ">") return less(operand(), v);
  if (name == "le" || name == "<=") return !less(operand(), v);
  if (name == "ge" || name == ">=") return !less(v, operand());
  if (name == "sameas") return equal(v, operand()) && v.kind == operand().kind;
  if (name == "in") {
    for (const Value& x : iterate(operand()))
      if (equal(v, x)) return true;
    if (operand().is_string() && v.is_string()) return operand().str().find(v.str()) != std::string::npos;
    return false;
  }
  if (name == "odd" || name == "even") {
    const int64_t i = int_arg(v, 0, "odd/even's input");
    return (i % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t d = int_arg(operand(), 1, "divisibleby's argument");
    if (d == 0) fail("divisibleby 0");
    return int_arg(v, 0, "divisibleby's input") % d == 0;
  }
  if (name == "lower") return v.is_string() && ascii_lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && ascii_upper(v.str()) == v.str();
  fail("unknown test '" + name + "'");
}

namespace {

bool affix_test(const Value& subject, const Value& affix, bool prefix) {
  const std::string& s = subject.str();
  const auto matches = [&](const Value& a) {
    if (!a.is_string()) fail("startswith/endswith need a string or a tuple of strings");
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.kind == Kind::List) return std::any_of(affix.list->begin(), affix.list->end(), matches);
  return matches(affix);
}

std::optional<Value> string_method(Interpreter& in, const Value& s, const std::string& name, const Args& args,
                                   const Kwargs& kwargs) {
  const Text& t = *s.text;
  if (name == "startswith" || name == "endswith") {
    const auto affix = arg(args, kwargs, 0, "prefix");
    if (!affix) fail(name + " needs an argument");
    return Value::from_bool(affix_test(s, *affix, name == "startswith"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const StripSide side = name == "strip" ? StripSide::Both : (name == "lstrip" ? StripSide::Left : StripSide::Right);
    return string_value(strip(t, side, optional_string(arg(args, kwargs, 0, "chars"), name + "'s chars")));
  }
  if (name == "split" || name == "rsplit") {
    const auto sep = optional_string(arg(args, kwargs, 0, "sep"), name + "'s separator");
    const int64_t max_split = int_arg(arg(args, kwargs, 1, "maxsplit"), -1, name + "'s maxsplit");
    if (name == "rsplit" && max_split >= 0) fail("rsplit with maxsplit is not supported");
    std::vector<Value> parts;
    for (Text& piece : split(t, sep, max_split)) parts.push_back(string_value(std::move(piece)));
    in.check_items(parts.size());
    return Value::from_list(std::move(parts));
  }
  if (name == "replace") return apply_filter(in, "replace", s, args, kwargs);
  if (name == "upper" || name == "lower") return case_changed(s, name == "upper");
  if (name == "capitalize") return capitalize(s);
  if (name == "title") return title(s);
  if (name == "find") {
    const size_t at = t.bytes.find(string_arg(arg(args, kwargs, 0, "sub"), "find's argument"));
    return Value::from_int(at == std::string::npos ? -1 : static_cast<int64_t>(code_point_count(t.bytes.substr(0, at))));
  }
  if (name == "count") {
    const std::string sub = string_arg(arg(args, kwargs, 0, "sub"), "count's argument");
    if (sub.empty()) return Value::from_int(static_cast<int64_t>(code_point_count(t.bytes) + 1));
    int64_t n = 0;
    for (size_t at = t.bytes.find(sub); at != std::string::npos; at = t.bytes.find(sub, at + sub.size())) ++n;
    return Value::from_int(n);
  }
  if (name == "join") {
    const auto items = arg(args, kwargs, 0, "iterable");
    if (!items) fail("join needs an iterable");
    return join(in, *items, t.bytes, std::nullopt);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    if (t.bytes.empty()) return Value::from_bool(false);
    for (unsigned char c : t.bytes) {
      const bool ok = name == "isdigit" ? std::isdigit(c) : name == "isalpha" ? std::isalpha(c)
                      : name == "isspace" ? std::isspace(c) : std::isalnum(c);
      if (!ok) return Value::from_bool(false);
    }
    return Value::from_bool(true);
  }
  if (name == "format" || name == "format_map")
    fail("str." + name + " is not allowed in templates (it can reach object internals)");
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& d, const std::string& name, const Args& args, const Kwargs& kwargs) {
  if (name == "get") {
    const auto key = arg(args, kwargs, 0, "key");
    if (!key) fail("get needs a key");
    if (key->is_string())
      if (const Value* v = d.dict->find(key->str())) return *v;
    return arg(args, kwargs, 1, "default").value_or(Value::none());
  }
  if (name == "items") return items_of(d);
  if (name == "keys") return Value::from_list(iterate(d));
  if (name == "values") {
    std::vector<Value> values;
    for (const auto& [k, v] : d.dict->entries) values.push_back(v);
    return Value::from_list(std::move(values));
  }
  static const std::set<std::string> mutating = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__"};
  if (mutating.count(name)) fail("dict." + name + " is not allowed: templates cannot modify their input");
  return std::nullopt;
}

}  // namespace

std::optional<Value> call_method(Interpreter& in, const Value& subject, const std::string& name, Args args,
                                 Kwargs kwargs) {
  if (subject.kind == Kind::String) return string_method(in, subject, name, args, kwargs);
  if (subject.kind == Kind::Dict) return dict_method(subject, name, args, kwargs);
  if (subject.kind == Kind::List) {
    static const std::set<std::string> mutating = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
    if (mutating.count(name)) fail("list." + name + " is not allowed: templates cannot modify their input");
    if (name == "index" || name == "count") {
      if (args.empty()) fail("list." + name + " needs an argument");
      int64_t n = 0;
      for (size_t i = 0; i < subject.list->size(); ++i) {
        if (!equal((*subject.list)[i], args[0])) continue;
        if (name == "index") return Value::from_int(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") fail("list.index(x): x not in list");
      return Value::from_int(n);
    }
  }
  return std::nullopt;
}

bool is_global_function(const std::string& name) {
  static const std::set<std::string> names = {"range", "namespace", "raise_exception", "dict", "strftime_now"};
  return names.count(name) > 0;
}

Value call_global(Interpreter& in, const std::string& name, Args args, Kwargs kwargs) {
  if (name == "raise_exception") {
    const auto message = arg(args, kwargs, 0, "message");
    fail(message ? to_text(*message).bytes : std::string("raise_exception called"));
  }
  if (name == "range") {
    if (args.empty() || args.size() > 3) fail("range expects 1 to 3 integer arguments");
    int64_t start = 0, stop = 0, step = 1;
    if (args.size() == 1) stop = int_arg(args[0], 0, "range's stop");
    else {
      start = int_arg(args[0], 0, "range's start");
      stop = int_arg(args[1], 0, "range's stop");
      if (args.size() == 3) step = int_arg(args[2], 1, "range's step");
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    const double count = std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)));
    if (count > static_cast<double>(in.limits().max_range))
      fail("range of more than " + std::to_string(in.limits().max_range) + " items");
    std::vector<Value> items;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::from_int(start + i * step));
    return Value::from_list(std::move(items));
  }
  if (name == "namespace" || name == "dict") {
    Dict d;
    for (const Value& a : args) {
      if (a.kind != Kind::Dict) fail(name + "() takes a mapping or keyword arguments");
      for (const auto& [k, v] : a.dict->entries) d.set(k, v);
      d.untrusted_keys = d.untrusted_keys || a.dict->untrusted_keys;
    }
    for (auto& [k, v] : kwargs) d.set(k, std::move(v));
    return name == "namespace" ? Value::new_namespace(std::move(d)) : Value::from_dict(std::move(d));
  }
  if (name == "strftime_now") {
    const std::string format = string_arg(arg(args, kwargs, 0, "format"), "strftime_now's format");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &local);
    return Value::trusted_string(std::string(buf, n));
  }
  fail("unknown function '" + name + "'");
}

}  // namespace xft::engine::chat_template
