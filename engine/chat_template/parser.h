// The syntax tree of a template and the parser that builds it from the
// lexer's tokens (jinja2's grammar and operator precedence; nesting bounded).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "engine/chat_template/lexer.h"
#include "engine/chat_template/value.h"

namespace xft::engine::chat_template {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprType {
  Literal, Name, Attribute, Item, Slice, Call, Filter, Test, Negate, Plus, Binary, And, Or, Not, Conditional,
  ListLiteral, TupleLiteral, DictLiteral
};

struct Expr {
  ExprType type;
  int line = 1;
  Value literal;       // Literal
  std::string name;    // Name, Attribute, Filter, Test, Binary operator
  bool negated = false;  // Test: `is not`
  // Attribute/Item/Slice/Call/Filter/Test: [0] is the subject; Slice: [1..3]
  // start, stop, step (null when absent); Binary: [0] op [1]; Conditional:
  // [0] if [1] else [2] (null: undefined); DictLiteral: key, value pairs.
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroNode {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // per param; null when none
  Body body;
};

enum class StmtType { Text, Output, Set, SetAttribute, SetBlock, If, For, Macro, Break, Continue, CallBlock, FilterBlock };

struct Stmt {
  StmtType type;
  int line = 1;
  std::string text;                  // Text
  std::vector<std::string> targets;  // Set/SetBlock/For: names (several: unpacking)
  std::string attribute;             // SetAttribute: targets[0].attribute
  ExprPtr expr;                      // Output, Set value, For iterable, CallBlock call, FilterBlock filter
  ExprPtr condition;                 // For: `if` filter
  std::vector<std::pair<ExprPtr, Body>> branches;  // If/elif
  Body body;                         // For/SetBlock/CallBlock/FilterBlock body
  Body else_body;                    // If/For
  std::unique_ptr<MacroNode> macro;  // Macro; CallBlock: the `caller` it passes
};

struct ParseLimits {
  int max_nesting = 200;  // expression and block nesting
};

Expected<Body> parse_template(const std::vector<Token>& tokens, const ParseLimits& limits = {});

}  // namespace xft::engine::chat_template
