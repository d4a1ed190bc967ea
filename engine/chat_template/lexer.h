// Splits a template into text and tag tokens the way jinja2 does with Hugging
// Face's settings: trim_blocks (the newline after a block or comment tag goes),
// lstrip_blocks (indentation before a block or comment tag on its own line
// goes), `-` whitespace control on either side of any tag, and the template's
// final newline dropped (keep_trailing_newline=False).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"

namespace xft::engine::chat_template {

enum class TokenType { Text, BlockBegin, BlockEnd, VarBegin, VarEnd, Name, String, Integer, Float, Operator, End };

struct Token {
  TokenType type;
  std::string value;  // text, name, decoded string literal, number or operator spelling
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

Expected<std::vector<Token>> lex_template(std::string_view source, const LexerOptions& options = {});

}  // namespace xft::engine::chat_template
