// Walks a parsed template: scopes, loops, macros, operators, with every
// limit of RenderLimits enforced. Failures are TemplateError exceptions that
// Template::render turns into error values.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/chat_template/parser.h"
#include "engine/chat_template/template.h"
#include "engine/chat_template/value.h"

namespace xft::engine::chat_template {

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, const Dict& context);
  Text run(const Body& body);

  // For the builtins.
  const RenderLimits& limits() const { return limits_; }
  void check_size(size_t bytes) const;
  void check_items(size_t items) const;
  Value attribute(const Value& subject, const std::string& name) const;
  Value call(const Value& callee, Args args, Kwargs kwargs);
  // Counts copying work against max_steps (a list item, or 64 bytes, is one step), so that
  // a loop that regrows a list or string cannot be quadratic within the step budget.
  void charge(size_t items, size_t bytes);

 private:
  enum class Flow { Normal, Break, Continue };
  using Frame = std::unordered_map<std::string, Value>;

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Text capture(const Body& body);
  void emit(const Text& text);
  void step();

  Value eval(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_call(const Expr& e);
  Value item(const Value& subject, const Value& key) const;
  Value slice(const Expr& e);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value value);
  std::pair<Args, Kwargs> eval_arguments(const Expr& e, size_t skip);
  Value call_macro(const MacroNode& macro, Args args, Kwargs kwargs);

  RenderLimits limits_;
  std::vector<Frame> frames_;
  std::vector<Text> outputs_;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
  int64_t steps_ = 0;
};

// The values a for loop visits: list items, dict keys, string code points.
std::vector<Value> iterate(const Value& v);

}  // namespace xft::engine::chat_template
