#include "engine/chat_template/interpreter.h"

#include <cmath>
#include <limits>

#include "engine/chat_template/builtins.h"
#include "engine/chat_template/text_ops.h"

namespace xft::engine::chat_template {

namespace {

std::string what(const Value& v) {
  if (v.kind == Kind::Dict) return "'dict object'";
  if (v.kind == Kind::List) return "'list object'";
  if (v.kind == Kind::String) return "'str object'";
  return "'" + to_text(v).bytes + "'";
}

[[noreturn]] void undefined_used(const Value& v) {
  fail(v.undefined_hint.empty() ? "a value is undefined" : v.undefined_hint);
}

int64_t as_int(const Value& v) {
  if (v.kind == Kind::Bool) return v.boolean;
  if (v.kind == Kind::Int) return v.integer;
  fail("expected an integer, got " + std::string(kind_name(v)));
}

bool is_integral(const Value& v) { return v.kind == Kind::Int || v.kind == Kind::Bool; }

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_used(a);
  if (b.is_undefined()) undefined_used(b);
  fail("unsupported operand type(s) for " + op + ": '" + std::string(kind_name(a)) + "' and '" +
       std::string(kind_name(b)) + "'");
}

double floor_mod(double a, double b) {
  const double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace

std::vector<Value> iterate(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return {};
    case Kind::List: return *v.list;
    case Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& [k, item] : v.dict->entries) keys.push_back(Value::from_text(Text::derived(k, v.dict->untrusted_keys)));
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      const std::vector<size_t> starts = code_point_starts(v.str());
      for (size_t i = 0; i + 1 < starts.size(); ++i) chars.push_back(Value::from_text(v.text->substr(starts[i], starts[i + 1])));
      return chars;
    }
    default: fail("'" + std::string(kind_name(v)) + "' object is not iterable");
  }
}

Interpreter::Interpreter(const RenderLimits& limits, const Dict& context) : limits_(limits) {
  Frame globals;
  for (const auto& [k, v] : context.entries) globals[k] = v;
  frames_.push_back(std::move(globals));
}

Text Interpreter::run(const Body& body) {
  outputs_.emplace_back();
  exec_body(body);
  Text out = std::move(outputs_.back());
  outputs_.pop_back();
  return out;
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > limits_.max_string_bytes)
    fail("template output or string longer than " + std::to_string(limits_.max_string_bytes) + " bytes");
}

void Interpreter::check_items(size_t items) const {
  if (items > limits_.max_list_items) fail("template list longer than " + std::to_string(limits_.max_list_items) + " items");
}

void Interpreter::step() {
  if (++steps_ > limits_.max_steps) fail("template took more than " + std::to_string(limits_.max_steps) + " steps");
}

void Interpreter::charge(size_t items, size_t bytes) {
  steps_ += static_cast<int64_t>(items + bytes / 64);
  if (steps_ > limits_.max_steps) fail("template took more than " + std::to_string(limits_.max_steps) + " steps");
}

void Interpreter::emit(const Text& text) {
  Text& out = outputs_.back();
  check_size(out.bytes.size() + text.bytes.size());
  charge(0, text.bytes.size());
  out.append(text);
}

Text Interpreter::capture(const Body& body) {
  outputs_.emplace_back();
  exec_body(body);
  Text out = std::move(outputs_.back());
  outputs_.pop_back();
  return out;
}

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const StmtPtr& s : body) {
    const Flow flow = exec(*s);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  step();
  switch (s.type) {
    case StmtType::Text: {
      Text t;
      t.bytes = s.text;
      emit(t);
      return Flow::Normal;
    }
    case StmtType::Output: emit(to_text(eval(*s.expr))); return Flow::Normal;
    case StmtType::Set:
    case StmtType::SetAttribute:
    case StmtType::SetBlock: exec_set(s); return Flow::Normal;
    case StmtType::If:
      for (const auto& [condition, body] : s.branches)
        if (truthy(eval(*condition))) return exec_body(body);
      return exec_body(s.else_body);
    case StmtType::For: return exec_for(s);
    case StmtType::Macro: assign(s.macro->name, Value::from_macro(s.macro.get())); return Flow::Normal;
    case StmtType::Break: return Flow::Break;
    case StmtType::Continue: return Flow::Continue;
    case StmtType::CallBlock: {
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.args[0]);
      auto [args, kwargs] = eval_arguments(call_expr, 1);
      kwargs.emplace_back("caller", Value::from_macro(s.macro.get()));
      emit(to_text(call(callee, std::move(args), std::move(kwargs))));
      return Flow::Normal;
    }
    case StmtType::FilterBlock: {
      Value text = Value::from_text(capture(s.body));
      auto [args, kwargs] = eval_arguments(*s.expr, 1);
      emit(to_text(apply_filter(*this, s.expr->name, text, std::move(args), std::move(kwargs))));
      return Flow::Normal;
    }
  }
  return Flow::Normal;
}

void Interpreter::exec_set(const Stmt& s) {
  if (s.type == StmtType::SetBlock) {
    assign(s.targets[0], Value::from_text(capture(s.body)));
    return;
  }
  Value value = eval(*s.expr);
  if (s.type == StmtType::SetAttribute) {
    Value target = lookup(s.targets[0]);
    if (target.kind != Kind::Namespace)
      fail("cannot assign attribute '" + s.attribute + "' of '" + s.targets[0] + "': only namespace() objects take assignments");
    target.dict->set(s.attribute, std::move(value));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(value));
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() != s.targets.size())
    fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(s.targets.size()) + " names");
  for (size_t i = 0; i < items.size(); ++i) assign(s.targets[i], items[i]);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s) {
  std::vector<Value> all = iterate(eval(*s.expr));
  frames_.emplace_back();
  const auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      frames_.back()[s.targets[0]] = item;
      return;
    }
    std::vector<Value> parts = iterate(item);
    if (parts.size() != s.targets.size())
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(s.targets.size()) + " loop names");
    for (size_t i = 0; i < parts.size(); ++i) frames_.back()[s.targets[i]] = parts[i];
  };
  std::vector<Value> items;
  if (s.condition) {
    for (const Value& item : all) {
      bind(item);
      if (truthy(eval(*s.condition))) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    if (++iterations_ > limits_.max_loop_iterations)
      fail("template loops ran more than " + std::to_string(limits_.max_loop_iterations) + " iterations");
    bind(items[i]);
    Dict loop;
    loop.entries = {{"index", Value::from_int(i + 1)},
                    {"index0", Value::from_int(i)},
                    {"revindex", Value::from_int(n - i)},
                    {"revindex0", Value::from_int(n - i - 1)},
                    {"first", Value::from_bool(i == 0)},
                    {"last", Value::from_bool(i == n - 1)},
                    {"length", Value::from_int(n)},
                    {"depth", Value::from_int(1)},
                    {"depth0", Value::from_int(0)},
                    {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
                    {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")}};
    frames_.back()["loop"] = Value::from_dict(std::move(loop));
    if (exec_body(s.body) == Flow::Break) break;
  }
  frames_.pop_back();
  if (n == 0) return exec_body(s.else_body);
  return Flow::Normal;
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
    auto it = frame->find(name);
    if (it != frame->end()) return it->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value value) { frames_.back()[name] = std::move(value); }

Value Interpreter::attribute(const Value& subject, const std::string& name) const {
  switch (subject.kind) {
    case Kind::Undefined: undefined_used(subject);
    case Kind::Dict:
    case Kind::Namespace:
      if (const Value* v = subject.dict->find(name)) return *v;
      break;
    default: break;
  }
  if (!name.empty() && name[0] == '_')
    fail("access to attribute '" + name + "' of '" + std::string(kind_name(subject)) + "' object is unsafe");
  return Value::undefined(what(subject) + " has no attribute '" + name + "'");
}

Value Interpreter::item(const Value& subject, const Value& key) const {
  switch (subject.kind) {
    case Kind::Undefined: undefined_used(subject);
    case Kind::List:
      if (is_integral(key)) {
        int64_t i = as_int(key);
        const int64_t n = static_cast<int64_t>(subject.list->size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return (*subject.list)[i];
        return Value::undefined(what(subject) + " has no element " + std::to_string(as_int(key)));
      }
      break;
    case Kind::String:
      if (is_integral(key)) {
        if (auto c = char_at(*subject.text, as_int(key))) return Value::from_text(*c);
        return Value::undefined("string index out of range");
      }
      break;
    case Kind::Dict:
    case Kind::Namespace:
      if (key.is_string()) {
        if (const Value* v = subject.dict->find(key.str())) return *v;
        return Value::undefined(what(subject) + " has no attribute '" + key.str() + "'");
      }
      break;
    default: break;
  }
  if (key.is_string()) return attribute(subject, key.str());
  return Value::undefined(what(subject) + " has no element " + to_text(key).bytes);
}

Value Interpreter::slice(const Expr& e) {
  Value subject = eval(*e.args[0]);
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.args[i + 1]) continue;
    Value v = eval(*e.args[i + 1]);
    if (v.kind != Kind::None) bounds[i] = as_int(v);
  }
  const int64_t step_by = bounds[2].value_or(1);
  if (subject.kind == Kind::String) return Value::from_text(chat_template::slice(*subject.text, bounds[0], bounds[1], step_by));
  if (subject.kind == Kind::List) {
    std::vector<Value> out;
    for (int64_t i : slice_indices(static_cast<int64_t>(subject.list->size()), bounds[0], bounds[1], step_by))
      out.push_back((*subject.list)[i]);
    return Value::from_list(std::move(out));
  }
  if (subject.is_undefined()) undefined_used(subject);
  fail("'" + std::string(kind_name(subject)) + "' object is not subscriptable");
}

std::pair<Args, Kwargs> Interpreter::eval_arguments(const Expr& e, size_t skip) {
  Args args;
  for (size_t i = skip; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
  Kwargs kwargs;
  for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v));
  return {std::move(args), std::move(kwargs)};
}

Value Interpreter::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  if (callee.type == ExprType::Name && is_global_function(callee.name) && lookup(callee.name).is_undefined()) {
    auto [args, kwargs] = eval_arguments(e, 1);
    return call_global(*this, callee.name, std::move(args), std::move(kwargs));
  }
  if (callee.type == ExprType::Attribute) {
    Value subject = eval(*callee.args[0]);
    auto [args, kwargs] = eval_arguments(e, 1);
    if (subject.kind != Kind::Dict || !subject.dict->find(callee.name)) {
      if (auto result = call_method(*this, subject, callee.name, args, kwargs)) return *result;
    }
    return call(attribute(subject, callee.name), std::move(args), std::move(kwargs));
  }
  Value target = eval(callee);
  auto [args, kwargs] = eval_arguments(e, 1);
  return call(target, std::move(args), std::move(kwargs));
}

Value Interpreter::call(const Value& callee, Args args, Kwargs kwargs) {
  if (callee.kind == Kind::Macro) return call_macro(*callee.macro, std::move(args), std::move(kwargs));
  if (callee.is_undefined()) undefined_used(callee);
  fail("'" + std::string(kind_name(callee)) + "' object is not callable");
}

Value Interpreter::call_macro(const MacroNode& macro, Args args, Kwargs kwargs) {
  if (call_depth_ >= limits_.max_call_depth)
    fail("macro calls nested deeper than " + std::to_string(limits_.max_call_depth) + " (recursion?)");
  if (args.size() > macro.params.size())
    fail("macro '" + macro.name + "' takes " + std::to_string(macro.params.size()) + " arguments, got " +
         std::to_string(args.size()));
  std::vector<Frame> saved = std::move(frames_);
  frames_ = {saved.front(), Frame{}};
  ++call_depth_;
  struct Restore {
    Interpreter& in;
    std::vector<Frame>& saved;
    ~Restore() {
      --in.call_depth_;
      saved.front() = std::move(in.frames_.front());  // top-level assignments made inside stay visible
      in.frames_ = std::move(saved);
    }
  } restore{*this, saved};
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const std::string& param = macro.params[i];
    Value value;
    bool given = i < args.size();
    if (given) value = args[i];
    for (auto& [k, v] : kwargs) {
      if (k == param) {
        value = v;
        given = true;
      }
    }
    if (!given) value = macro.defaults[i] ? eval(*macro.defaults[i]) : Value::undefined("'" + param + "' is undefined");
    frames_.back()[param] = std::move(value);
  }
  for (auto& [k, v] : kwargs) {
    bool known = k == "caller";
    for (const std::string& p : macro.params) known = known || p == k;
    if (!known) fail("macro '" + macro.name + "' has no argument named '" + k + "'");
    if (k == "caller") frames_.back()["caller"] = v;
  }
  return Value::from_text(capture(macro.body));
}

Value Interpreter::eval(const Expr& e) {
  step();
  switch (e.type) {
    case ExprType::Literal: return e.literal;
    case ExprType::Name: return lookup(e.name);
    case ExprType::Attribute: return attribute(eval(*e.args[0]), e.name);
    case ExprType::Item: {
      Value subject = eval(*e.args[0]);
      return item(subject, eval(*e.args[1]));
    }
    case ExprType::Slice: return slice(e);
    case ExprType::Call: return eval_call(e);
    case ExprType::Filter: {
      Value subject = eval(*e.args[0]);
      auto [args, kwargs] = eval_arguments(e, 1);
      return apply_filter(*this, e.name, subject, std::move(args), std::move(kwargs));
    }
    case ExprType::Test: {
      Value subject = eval(*e.args[0]);
      auto [args, kwargs] = eval_arguments(e, 1);
      return Value::from_bool(apply_test(*this, e.name, subject, args) != e.negated);
    }
    case ExprType::Negate:
    case ExprType::Plus: {
      Value v = eval(*e.args[0]);
      if (v.kind == Kind::Float) return Value::from_float(e.type == ExprType::Negate ? -v.number : v.number);
      if (is_integral(v)) {
        const int64_t i = as_int(v);
        if (e.type == ExprType::Negate && i == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value::from_int(e.type == ExprType::Negate ? -i : i);
      }
      if (v.is_undefined()) undefined_used(v);
      fail("bad operand type for unary -: '" + std::string(kind_name(v)) + "'");
    }
    case ExprType::Binary: return eval_binary(e);
    case ExprType::And: {
      Value left = eval(*e.args[0]);
      return truthy(left) ? eval(*e.args[1]) : left;
    }
    case ExprType::Or: {
      Value left = eval(*e.args[0]);
      return truthy(left) ? left : eval(*e.args[1]);
    }
    case ExprType::Not: return Value::from_bool(!truthy(eval(*e.args[0])));
    case ExprType::Conditional:
      if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("the conditional expression had no else branch");
    case ExprType::ListLiteral:
    case ExprType::TupleLiteral: {
      std::vector<Value> items;
      for (const ExprPtr& a : e.args) items.push_back(eval(*a));
      return Value::from_list(std::move(items));
    }
    case ExprType::DictLiteral: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = eval(*e.args[i]);
        if (!key.is_string()) fail("dict keys must be strings in templates");
        d.untrusted_keys = d.untrusted_keys || key.text->any_untrusted();
        d.set(key.str(), eval(*e.args[i + 1]));
      }
      return Value::from_dict(std::move(d));
    }
  }
  fail("unknown expression");
}

Value Interpreter::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  Value a = eval(*e.args[0]);
  Value b = eval(*e.args[1]);
  if (op == "==") return Value::from_bool(equal(a, b));
  if (op == "!=") return Value::from_bool(!equal(a, b));
  if (op == "<") return Value::from_bool(less(a, b));
  if (op == ">") return Value::from_bool(less(b, a));
  if (op == "<=") return Value::from_bool(!less(b, a));
  if (op == ">=") return Value::from_bool(!less(a, b));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.kind == Kind::String) {
      if (!a.is_string()) fail("'in <string>' requires string as left operand, not " + std::string(kind_name(a)));
      found = b.str().find(a.str()) != std::string::npos;
    } else if (b.kind == Kind::Dict || b.kind == Kind::Namespace) {
      found = a.is_string() && b.dict->find(a.str()) != nullptr;
    } else if (b.kind == Kind::List) {
      for (const Value& x : *b.list) found = found || equal(a, x);
    } else if (b.kind != Kind::Undefined) {
      fail("argument of type '" + std::string(kind_name(b)) + "' is not iterable");
    }
    return Value::from_bool(found == (op == "in"));
  }
  if (op == "~") {
    Text t = to_text(a);
    Text right = to_text(b);
    check_size(t.bytes.size() + right.bytes.size());
    charge(0, t.bytes.size() + right.bytes.size());
    t.append(right);
    return Value::from_text(std::move(t));
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.str().size() + b.str().size());
      charge(0, a.str().size() + b.str().size());
      Text t = *a.text;
      t.append(*b.text);
      return Value::from_text(std::move(t));
    }
    if (a.kind == Kind::List && b.kind == Kind::List) {
      check_items(a.list->size() + b.list->size());
      charge(a.list->size() + b.list->size(), 0);
      std::vector<Value> items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::from_list(std::move(items));
    }
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.kind == Kind::List ? &a : (b.is_string() || b.kind == Kind::List ? &b : nullptr);
    const Value* count = seq == &a ? &b : &a;
    if (seq && is_integral(*count)) {
      const int64_t n = std::max<int64_t>(0, as_int(*count));
      if (seq->is_string()) {
        if (n > 0 && seq->str().size() > 0 && static_cast<uint64_t>(n) > limits_.max_string_bytes / seq->str().size())
          check_size(limits_.max_string_bytes + 1);
        charge(0, static_cast<size_t>(n) * seq->str().size());
        Text t;
        for (int64_t i = 0; i < n; ++i) t.append(*seq->text);
        return Value::from_text(std::move(t));
      }
      if (n > 0 && !seq->list->empty() && static_cast<uint64_t>(n) > limits_.max_list_items / seq->list->size())
        check_items(limits_.max_list_items + 1);
      charge(static_cast<size_t>(n) * seq->list->size(), 0);
      std::vector<Value> items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->list->begin(), seq->list->end());
      return Value::from_list(std::move(items));
    }
  }
  if (!a.is_number() || !b.is_number()) bad_operands(op, a, b);
  const bool ints = is_integral(a) && is_integral(b);
  if (ints && op != "/") {
    const int64_t x = as_int(a);
    const int64_t y = as_int(b);
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value::from_int(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value::from_int(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value::from_int(r);
    if (op == "//" || op == "%") {
      if (y == 0) fail("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) fail("integer overflow");
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return Value::from_int(op == "//" ? q : m);
    }
    if (op == "**" && y >= 0) {
      if (x == 0 || x == 1) return Value::from_int(y == 0 ? 1 : x);
      if (x == -1) return Value::from_int(y % 2 ? -1 : 1);
      if (y > 64) fail("integer overflow in '**'");  // |x| >= 2 overflows 64 bits past 2**63
      int64_t result = 1;
      for (int64_t i = 0; i < y; ++i)
        if (__builtin_mul_overflow(result, x, &result)) fail("integer overflow in '**'");
      return Value::from_int(result);
    }
    if (op != "**") fail("integer overflow in '" + op + "'");
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (op == "+") return Value::from_float(x + y);
  if (op == "-") return Value::from_float(x - y);
  if (op == "*") return Value::from_float(x * y);
  if (op == "/") {
    if (y == 0) fail("division by zero");
    return Value::from_float(x / y);
  }
  if (op == "//") {
    if (y == 0) fail("float floor division by zero");
    return Value::from_float(std::floor(x / y));
  }
  if (op == "%") {
    if (y == 0) fail("float modulo by zero");
    return Value::from_float(floor_mod(x, y));
  }
  if (op == "**") return Value::from_float(std::pow(x, y));
  bad_operands(op, a, b);
}

}  // namespace xft::engine::chat_template
