#include "engine/chat_template/lexer.h"

#include <cctype>
#include <cstdint>

#include "engine/chat_template/value.h"
#include "engine/tokenizer/unicode.h"

namespace xft::engine::chat_template {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string rstrip_all(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && is_space(s[end - 1])) --end;
  return std::string(s.substr(0, end));
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    bool strip_next_text = false;  // the previous tag ended with '-'
    bool line_starting = true;     // the last consumed source ended a line (jinja2's lstrip rule)
    while (pos_ < src_.size()) {
      const size_t at = next_tag(pos_);
      std::string text = src_.substr(pos_, at - pos_);
      if (strip_next_text) {
        size_t b = 0;
        while (b < text.size() && is_space(text[b])) ++b;
        text.erase(0, b);
      }
      if (at == src_.size()) {
        emit_text(text);
        break;
      }
      const char kind = src_[at + 1];  // '{', '%' or '#'
      const char modifier = at + 2 < src_.size() ? src_[at + 2] : '\0';
      if (modifier == '-') {
        text = rstrip_all(text);
      } else if (modifier != '+' && options_.lstrip_blocks && kind != '{') {
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_start > 0 || line_starting) {
          bool blank = line_start < text.size();
          for (size_t i = line_start; i < text.size(); ++i) blank = blank && is_space(text[i]);
          if (blank) text.erase(line_start);
        }
      }
      emit_text(text);
      line_ += count_lines(pos_, at);
      pos_ = at + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      bool trim_right = false;
      if (kind == '#') {
        trim_right = skip_comment();
      } else {
        trim_right = lex_tag(kind == '%');
      }
      strip_next_text = trim_right;
      if (!trim_right && kind != '{' && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({TokenType::End, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t next_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  int count_lines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to; ++i) n += src_[i] == '\n';
    return n;
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenType::Text, text, line_});
  }

  // Returns whether the comment ended with '-#}'.
  bool skip_comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail("line " + std::to_string(line_) + ": comment not closed with '#}'");
    const bool trim = end > pos_ && src_[end - 1] == '-';
    line_ += count_lines(pos_, end);
    pos_ = end + 2;
    return trim;
  }

  // Lexes the expression tokens of one tag; returns whether it ended with '-'.
  bool lex_tag(bool block) {
    tokens_.push_back({block ? TokenType::BlockBegin : TokenType::VarBegin, "", line_});
    const std::string close = block ? "%}" : "}}";
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) fail("line " + std::to_string(line_) + ": tag not closed with '" + close + "'");
      if (src_.compare(pos_, 2, close) == 0) {
        pos_ += 2;
        tokens_.push_back({block ? TokenType::BlockEnd : TokenType::VarEnd, "", line_});
        return false;
      }
      if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0) {
        pos_ += 3;
        tokens_.push_back({block ? TokenType::BlockEnd : TokenType::VarEnd, "", line_});
        return true;
      }
      if (src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0 && block) {
        pos_ += 3;
        tokens_.push_back({TokenType::BlockEnd, "", line_});
        return false;
      }
      lex_expression_token();
    }
  }

  void lex_expression_token() {
    const char c = src_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
      tokens_.push_back({TokenType::Name, src_.substr(pos_, end - pos_), line_});
      pos_ = end;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number();
    if (c == '\'' || c == '"') return lex_string(c);
    static const char* const kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                              ">", "=", "|", ".", ",", ":", "(", ")", "[", "]", "{", "}"};
    for (const char* op : kOperators) {
      const std::string_view spelling(op);
      if (src_.compare(pos_, spelling.size(), spelling) == 0) {
        tokens_.push_back({TokenType::Operator, std::string(spelling), line_});
        pos_ += spelling.size();
        return;
      }
    }
    fail("line " + std::to_string(line_) + ": unexpected character '" + std::string(1, c) + "' in a tag");
  }

  void lex_number() {
    size_t end = pos_;
    bool is_float = false;
    const auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
    };
    digits();
    if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
        is_float = true;
        end = e;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i)
      if (src_[i] != '_') text += src_[i];
    tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, text, line_});
    pos_ = end;
  }

  uint32_t hex_value(size_t from, size_t digits) {
    if (from + digits > src_.size()) fail("line " + std::to_string(line_) + ": truncated escape in a string");
    uint32_t v = 0;
    for (size_t i = from; i < from + digits; ++i) {
      const char h = src_[i];
      if (!std::isxdigit(static_cast<unsigned char>(h))) fail("line " + std::to_string(line_) + ": bad escape");
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
    }
    return v;
  }

  // Python's escapes, as jinja2 decodes string literals.
  void lex_string(char quote) {
    std::string value;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) fail("line " + std::to_string(line_) + ": string literal not closed");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        line_ += c == '\n';
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) fail("line " + std::to_string(line_) + ": string literal not closed");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '0': value += '\0'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\n': break;
        case 'x': unicode::append_utf8(value, hex_value(i, 2)); i += 2; break;
        case 'u': unicode::append_utf8(value, hex_value(i, 4)); i += 4; break;
        case 'U': unicode::append_utf8(value, hex_value(i, 8)); i += 8; break;
        default: value += '\\'; value += e;
      }
    }
    tokens_.push_back({TokenType::String, value, line_});
    pos_ = i + 1;
  }

  std::string src_;
  LexerOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Expected<std::vector<Token>> lex_template(std::string_view source, const LexerOptions& options) {
  try {
    return Lexer(normalize_newlines(source), options).run();
  } catch (const TemplateError& e) {
    return make_error(e.what());
  }
}

}  // namespace xft::engine::chat_template
