#include "engine/chat_template/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

namespace xft::engine::chat_template {

namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const ParseLimits& limits) : t_(tokens), limits_(limits) {}

  Body parse_all() {
    std::string end_tag;
    Body body = parse_body({}, end_tag);
    return body;
  }

 private:
  // Guards recursion: every nested expression or block goes one level deeper.
  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > p_.limits_.max_nesting)
        p_.error("nesting deeper than " + std::to_string(p_.limits_.max_nesting) + " levels");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  [[noreturn]] void error(const std::string& what) const {
    fail("template line " + std::to_string(peek().line) + ": " + what);
  }
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() {
    const Token& tok = peek();
    if (i_ < t_.size() - 1) ++i_;
    return tok;
  }
  bool at_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).type == TokenType::Operator && peek(ahead).value == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).type == TokenType::Name && peek(ahead).value == name;
  }
  bool accept_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!accept_op(op)) error("expected '" + std::string(op) + "', got '" + describe(peek()) + "'");
  }
  std::string expect_name() {
    if (peek().type != TokenType::Name) error("expected a name, got '" + describe(peek()) + "'");
    return next().value;
  }
  void expect_block_end() {
    if (peek().type != TokenType::BlockEnd) error("expected '%}', got '" + describe(peek()) + "'");
    next();
  }
  static std::string describe(const Token& tok) {
    switch (tok.type) {
      case TokenType::BlockEnd: return "%}";
      case TokenType::VarEnd: return "}}";
      case TokenType::End: return "end of template";
      default: return tok.value;
    }
  }

  ExprPtr make(ExprType type) {
    auto e = std::make_unique<Expr>();
    e->type = type;
    e->line = peek().line;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `ends` (consumed up to its name;
  // its name is returned in end_tag) or the end of the template.
  Body parse_body(const std::set<std::string>& ends, std::string& end_tag) {
    Depth depth(*this);
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.type == TokenType::End) {
        if (!ends.empty()) {
          std::string closing = *ends.begin();
          for (const std::string& e : ends)
            if (e.rfind("end", 0) == 0) closing = e;
          error("missing '{% " + closing + " %}'");
        }
        return body;
      }
      if (tok.type == TokenType::Text) {
        auto s = std::make_unique<Stmt>();
        s->type = StmtType::Text;
        s->text = next().value;
        body.push_back(std::move(s));
      } else if (tok.type == TokenType::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->type = StmtType::Output;
        s->line = tok.line;
        s->expr = parse_expression();
        if (peek().type != TokenType::VarEnd) error("expected '}}', got '" + describe(peek()) + "'");
        next();
        body.push_back(std::move(s));
      } else if (tok.type == TokenType::BlockBegin) {
        next();
        const std::string name = expect_name();
        if (ends.count(name)) {
          end_tag = name;
          return body;
        }
        body.push_back(parse_statement(name));
      } else {
        error("unexpected '" + describe(tok) + "'");
      }
    }
  }

  StmtPtr parse_statement(const std::string& name) {
    auto s = std::make_unique<Stmt>();
    s->line = peek().line;
    if (name == "set") return parse_set(std::move(s));
    if (name == "if") return parse_if(std::move(s));
    if (name == "for") return parse_for(std::move(s));
    if (name == "macro") return parse_macro(std::move(s));
    if (name == "call") return parse_call_block(std::move(s));
    if (name == "filter") return parse_filter_block(std::move(s));
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) error("'" + name + "' outside a loop");
      s->type = name == "break" ? StmtType::Break : StmtType::Continue;
      expect_block_end();
      return s;
    }
    if (name == "generation") {  // transformers' assistant-mask tag: renders its body unchanged
      expect_block_end();
      s->type = StmtType::If;
      auto yes = make(ExprType::Literal);
      yes->literal = Value::from_bool(true);
      std::string end;
      Body body = parse_body({"endgeneration"}, end);
      expect_block_end();
      s->branches.emplace_back(std::move(yes), std::move(body));
      return s;
    }
    error("unknown tag '" + name + "'");
  }

  StmtPtr parse_set(StmtPtr s) {
    const std::string target = expect_name();
    if (accept_op(".")) {
      s->type = StmtType::SetAttribute;
      s->targets = {target};
      s->attribute = expect_name();
      expect_op("=");
      s->expr = parse_expression();
      expect_block_end();
      return s;
    }
    s->targets = {target};
    while (accept_op(",")) s->targets.push_back(expect_name());
    if (accept_op("=")) {
      s->type = StmtType::Set;
      s->expr = parse_tuple_or_expression();
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1) error("a block 'set' takes one name");
    s->type = StmtType::SetBlock;
    expect_block_end();
    std::string end;
    s->body = parse_body({"endset"}, end);
    expect_block_end();
    return s;
  }

  StmtPtr parse_if(StmtPtr s) {
    s->type = StmtType::If;
    ExprPtr condition = parse_expression();
    expect_block_end();
    while (true) {
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, end);
      s->branches.emplace_back(std::move(condition), std::move(body));
      if (end == "elif") {
        condition = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (end == "else") {
        s->else_body = parse_body({"endif"}, end);
        expect_block_end();
      }
      return s;
    }
  }

  StmtPtr parse_for(StmtPtr s) {
    s->type = StmtType::For;
    s->targets.push_back(expect_name());
    while (accept_op(",")) s->targets.push_back(expect_name());
    if (!accept_name("in")) error("expected 'in' in a for loop");
    s->expr = parse_or();
    if (accept_name("if")) s->condition = parse_expression();
    if (accept_name("recursive")) error("recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    std::string end;
    s->body = parse_body({"else", "endfor"}, end);
    --loop_depth_;
    expect_block_end();
    if (end == "else") {
      s->else_body = parse_body({"endfor"}, end);
      expect_block_end();
    }
    return s;
  }

  std::unique_ptr<MacroNode> parse_signature(std::string name) {
    auto macro = std::make_unique<MacroNode>();
    macro->name = std::move(name);
    if (!accept_op("(")) return macro;
    while (!accept_op(")")) {
      macro->params.push_back(expect_name());
      macro->defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
      if (!at_op(")")) expect_op(",");
    }
    return macro;
  }

  StmtPtr parse_macro(StmtPtr s) {
    s->type = StmtType::Macro;
    s->macro = parse_signature(expect_name());
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    s->macro->body = parse_body({"endmacro"}, end);
    loop_depth_ = saved_loops;
    if (peek().type == TokenType::Name) next();  // `{% endmacro name %}`
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(StmtPtr s) {
    s->type = StmtType::CallBlock;
    s->macro = at_op("(") ? parse_signature("caller") : std::make_unique<MacroNode>();
    s->macro->name = "caller";
    s->expr = parse_expression();
    if (s->expr->type != ExprType::Call) error("'call' needs a macro call");
    expect_block_end();
    std::string end;
    s->macro->body = parse_body({"endcall"}, end);
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(StmtPtr s) {
    s->type = StmtType::FilterBlock;
    auto subject = make(ExprType::Literal);
    s->expr = parse_filter(std::move(subject));
    expect_block_end();
    std::string end;
    s->body = parse_body({"endfilter"}, end);
    expect_block_end();
    return s;
  }

  // ---- expressions (jinja2's precedence) ----

  ExprPtr parse_tuple_or_expression() {
    ExprPtr first = parse_expression();
    if (!at_op(",")) return first;
    auto tuple = make(ExprType::TupleLiteral);
    tuple->args.push_back(std::move(first));
    while (accept_op(",")) tuple->args.push_back(parse_expression());
    return tuple;
  }

  ExprPtr parse_expression() {
    Depth depth(*this);
    ExprPtr value = parse_or();
    while (accept_name("if")) {
      auto cond = make(ExprType::Conditional);
      cond->args.push_back(std::move(value));
      cond->args.push_back(parse_or());
      cond->args.push_back(accept_name("else") ? parse_expression() : nullptr);
      value = std::move(cond);
    }
    return value;
  }

  ExprPtr binary(ExprType type, ExprPtr left, ExprPtr right, std::string op = {}) {
    auto e = make(type);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (accept_name("or")) left = binary(ExprType::Or, std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (accept_name("and")) left = binary(ExprType::And, std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      Depth depth(*this);
      next();
      auto e = make(ExprType::Not);
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    while (true) {
      static const std::set<std::string> ops = {"==", "!=", "<", ">", "<=", ">="};
      if (peek().type == TokenType::Operator && ops.count(peek().value)) {
        const std::string op = next().value;
        left = binary(ExprType::Binary, std::move(left), parse_math1(), op);
      } else if (at_name("in")) {
        next();
        left = binary(ExprType::Binary, std::move(left), parse_math1(), "in");
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        left = binary(ExprType::Binary, std::move(left), parse_math1(), "not in");
      } else {
        return left;
      }
    }
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const std::string op = next().value;
      left = binary(ExprType::Binary, std::move(left), parse_concat(), op);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (accept_op("~")) left = binary(ExprType::Binary, std::move(left), parse_math2(), "~");
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const std::string op = next().value;
      left = binary(ExprType::Binary, std::move(left), parse_pow(), op);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (accept_op("**")) left = binary(ExprType::Binary, std::move(left), parse_unary(true), "**");
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth depth(*this);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      const bool minus = next().value == "-";
      node = make(minus ? ExprType::Negate : ExprType::Plus);
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_postfix(parse_primary());
    }
    if (with_filter) return parse_filters(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    Depth depth(*this);
    const Token& tok = peek();
    switch (tok.type) {
      case TokenType::Name: {
        next();
        auto e = make(ExprType::Literal);
        if (tok.value == "true" || tok.value == "True") e->literal = Value::from_bool(true);
        else if (tok.value == "false" || tok.value == "False") e->literal = Value::from_bool(false);
        else if (tok.value == "none" || tok.value == "None") e->literal = Value::none();
        else {
          e->type = ExprType::Name;
          e->name = tok.value;
        }
        return e;
      }
      case TokenType::String: {
        std::string text = next().value;
        while (peek().type == TokenType::String) text += next().value;  // adjacent literals join
        auto e = make(ExprType::Literal);
        e->literal = Value::trusted_string(std::move(text));
        return e;
      }
      case TokenType::Integer: {
        auto e = make(ExprType::Literal);
        errno = 0;
        const long long v = std::strtoll(next().value.c_str(), nullptr, 10);
        if (errno == ERANGE) error("integer literal out of range");
        e->literal = Value::from_int(v);
        return e;
      }
      case TokenType::Float: {
        auto e = make(ExprType::Literal);
        e->literal = Value::from_float(std::strtod(next().value.c_str(), nullptr));
        return e;
      }
      case TokenType::Operator:
        if (tok.value == "(") return parse_parenthesized();
        if (tok.value == "[") return parse_list();
        if (tok.value == "{") return parse_dict();
        [[fallthrough]];
      default: error("unexpected '" + describe(tok) + "'");
    }
  }

  ExprPtr parse_parenthesized() {
    expect_op("(");
    if (accept_op(")")) return make(ExprType::TupleLiteral);
    ExprPtr first = parse_expression();
    if (accept_op(")")) return first;
    auto tuple = make(ExprType::TupleLiteral);
    tuple->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op(")")) break;
      tuple->args.push_back(parse_expression());
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr parse_list() {
    expect_op("[");
    auto list = make(ExprType::ListLiteral);
    while (!accept_op("]")) {
      list->args.push_back(parse_expression());
      if (!at_op("]")) expect_op(",");
    }
    return list;
  }

  ExprPtr parse_dict() {
    expect_op("{");
    auto dict = make(ExprType::DictLiteral);
    while (!accept_op("}")) {
      dict->args.push_back(parse_expression());
      expect_op(":");
      dict->args.push_back(parse_expression());
      if (!at_op("}")) expect_op(",");
    }
    return dict;
  }

  void parse_call_arguments(Expr& call) {
    expect_op("(");
    while (!accept_op(")")) {
      if (peek().type == TokenType::Name && at_op("=", 1)) {
        std::string key = next().value;
        next();
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!call.kwargs.empty()) error("positional argument after a keyword argument");
        call.args.push_back(parse_expression());
      }
      if (!at_op(")")) expect_op(",");
    }
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (accept_op(".")) {
        if (peek().type == TokenType::Integer) {
          auto item = make(ExprType::Item);
          item->args.push_back(std::move(node));
          auto index = make(ExprType::Literal);
          index->literal = Value::from_int(std::strtoll(next().value.c_str(), nullptr, 10));
          item->args.push_back(std::move(index));
          node = std::move(item);
        } else {
          auto attr = make(ExprType::Attribute);
          attr->name = expect_name();
          attr->args.push_back(std::move(node));
          node = std::move(attr);
        }
      } else if (at_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_op("(")) {
        auto call = make(ExprType::Call);
        call->args.push_back(std::move(node));
        parse_call_arguments(*call);
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr subject) {
    expect_op("[");
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!at_op("]")) {
      if (accept_op(":")) {
        is_slice = true;
        if (++part > 2) error("too many ':' in a slice");
        continue;
      }
      if (parts[part]) error("expected ':' or ']' in a subscript");
      parts[part] = parse_expression();
    }
    expect_op("]");
    if (!is_slice) {
      if (!parts[0]) error("empty subscript");
      auto item = make(ExprType::Item);
      item->args.push_back(std::move(subject));
      item->args.push_back(std::move(parts[0]));
      return item;
    }
    auto slice = make(ExprType::Slice);
    slice->args.push_back(std::move(subject));
    for (auto& p : parts) slice->args.push_back(std::move(p));
    return slice;
  }

  ExprPtr parse_filter(ExprPtr subject) {
    auto filter = make(ExprType::Filter);
    filter->name = expect_name();
    filter->args.push_back(std::move(subject));
    if (at_op("(")) parse_call_arguments(*filter);
    return filter;
  }

  ExprPtr parse_filters(ExprPtr node) {
    while (true) {
      if (accept_op("|")) {
        node = parse_filter(std::move(node));
        node = parse_postfix(std::move(node));
      } else if (accept_name("is")) {
        auto test = make(ExprType::Test);
        test->negated = accept_name("not");
        test->name = expect_name();
        test->args.push_back(std::move(node));
        static const std::set<std::string> stops = {"and", "or", "else", "if", "not", "is", "in"};
        const Token& after = peek();
        if (at_op("(")) {
          parse_call_arguments(*test);
        } else if ((after.type == TokenType::Name && !stops.count(after.value)) || after.type == TokenType::String ||
                   after.type == TokenType::Integer || after.type == TokenType::Float || at_op("[") || at_op("{")) {
          test->args.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(test);
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& t_;
  ParseLimits limits_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Expected<Body> parse_template(const std::vector<Token>& tokens, const ParseLimits& limits) {
  try {
    return Parser(tokens, limits).parse_all();
  } catch (const TemplateError& e) {
    return make_error(e.what());
  }
}

}  // namespace xft::engine::chat_template
