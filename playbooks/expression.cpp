#include "playbooks/expression.h"

#include <cctype>
#include <vector>

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;

struct Token {
  enum Type { name, string, number, op, lparen, rparen, end } type = end;
  std::string text;
};

Expected<std::vector<Token>> tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')') {
      tokens.push_back({c == '(' ? Token::lparen : Token::rparen, std::string(1, c)});
      ++i;
    } else if (c == '\'' || c == '"') {
      size_t close = text.find(c, i + 1);
      if (close == std::string::npos) return make_error("unterminated string at column " + std::to_string(i + 1));
      tokens.push_back({Token::string, text.substr(i + 1, close - i - 1)});
      i = close + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '-' && i + 1 < text.size() &&
                                                                std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      size_t start = i++;
      while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
      tokens.push_back({Token::number, text.substr(start, i - start)});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '.'))
        ++i;
      tokens.push_back({Token::name, text.substr(start, i - start)});
    } else {
      static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
      bool matched = false;
      for (const char* op : ops) {
        std::string word(op);
        if (text.compare(i, word.size(), word) == 0) {
          tokens.push_back({Token::op, word});
          i += word.size();
          matched = true;
          break;
        }
      }
      if (!matched) return make_error(std::string("unexpected '") + c + "' at column " + std::to_string(i + 1));
    }
  }
  tokens.push_back({Token::end, ""});
  return tokens;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const Json& vars) : tokens_(std::move(tokens)), vars_(vars) {}

  Expected<bool> run() {
    auto value = or_expr();
    if (!error_.empty()) return make_error(error_);
    if (peek().type != Token::end) return make_error("unexpected '" + peek().text + "'");
    return truthy(value);
  }

 private:
  const Token& peek() const { return tokens_[position_]; }
  Token next() { return tokens_[position_ < tokens_.size() - 1 ? position_++ : position_]; }
  bool word(const char* text) const { return peek().type == Token::name && peek().text == text; }
  Json fail(const std::string& message) {
    if (error_.empty()) error_ = message;
    return nullptr;
  }

  Json or_expr() {
    Json left = and_expr();
    while (word("or")) {
      next();
      Json right = and_expr();
      left = truthy(left) || truthy(right);
    }
    return left;
  }

  Json and_expr() {
    Json left = not_expr();
    while (word("and")) {
      next();
      Json right = not_expr();
      left = truthy(left) && truthy(right);
    }
    return left;
  }

  Json not_expr() {
    if (word("not")) {
      next();
      return !truthy(not_expr());
    }
    return comparison();
  }

  Json comparison() {
    Json left = value();
    if (peek().type == Token::op) {
      std::string op = next().text;
      return compare(left, op, value());
    }
    if (word("in") || word("contains")) {
      bool contains = next().text == "contains";
      Json right = value();
      return contains ? member(right, left) : member(left, right);
    }
    return left;
  }

  // needle in haystack: a substring of a string, or an element of a list.
  Json member(const Json& needle, const Json& haystack) {
    if (haystack.is_string()) {
      if (!needle.is_string()) return fail("'in' a text needs a text on the left");
      return haystack.get<std::string>().find(needle.get<std::string>()) != std::string::npos;
    }
    if (haystack.is_array()) {
      for (const auto& item : haystack)
        if (item == needle) return true;
      return false;
    }
    return fail("'in' needs a text or a list on the right");
  }

  Json compare(const Json& left, const std::string& op, const Json& right) {
    if (op == "==") return left == right;
    if (op == "!=") return left != right;
    if (!left.is_number() || !right.is_number()) return fail(op + " compares numbers only");
    double a = left.get<double>(), b = right.get<double>();
    if (op == "<") return a < b;
    if (op == ">") return a > b;
    if (op == "<=") return a <= b;
    return a >= b;
  }

  Json value() {
    Token token = next();
    switch (token.type) {
      case Token::string: return token.text;
      case Token::number: return token.text.find('.') == std::string::npos ? Json(std::stoll(token.text))
                                                                           : Json(std::stod(token.text));
      case Token::lparen: {
        Json inner = or_expr();
        if (next().type != Token::rparen) return fail("missing ')'");
        return inner;
      }
      case Token::name:
        if (token.text == "true") return true;
        if (token.text == "false") return false;
        return lookup(token.text);
      default: return fail(token.type == Token::end ? "expression ends too early" : "unexpected '" + token.text + "'");
    }
  }

  Json lookup(const std::string& dotted) {
    const Json* node = &vars_;
    size_t start = 0;
    while (true) {
      size_t dot = dotted.find('.', start);
      std::string part = dotted.substr(start, dot - start);
      if (!node->is_object() || !node->contains(part)) return fail("'" + dotted + "' is not defined");
      node = &(*node)[part];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    // Numbers held as text (YAML vars) compare as numbers.
    if (node->is_string()) {
      const auto& text = node->get_ref<const std::string&>();
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 18)
        return std::stoll(text);
      if (text == "true") return true;
      if (text == "false") return false;
    }
    return *node;
  }

  std::vector<Token> tokens_;
  const Json& vars_;
  size_t position_ = 0;
  std::string error_;
};

}  // namespace

bool truthy(const Json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0.0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  if (value.is_array() || value.is_object()) return !value.empty();
  return false;
}

Expected<bool> evaluate_condition(const std::string& expression, const Json& vars) {
  auto tokens = tokenize(expression);
  if (!tokens) return make_error("'" + expression + "': " + tokens.error().message);
  auto result = Parser(std::move(*tokens), vars).run();
  if (!result) return make_error("'" + expression + "': " + result.error().message);
  return result;
}

}  // namespace xft::playbooks
