// The Unicode the Qwen tokenizer needs: UTF-8 stepping, the regex classes
// \p{L}, \p{N}, \p{M}, \s, and NFC normalization. Tables: unicode_tables.inc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xft::engine::unicode {

// One code point decoded from UTF-8. A byte that does not start a valid
// sequence decodes as itself with length 1 and `valid` false, so scanners can
// step over any input.
struct Decoded {
  char32_t cp;
  int length;
  bool valid;
};
Decoded decode_utf8(std::string_view text, size_t pos);
void append_utf8(std::string& out, char32_t cp);

bool is_letter(char32_t cp);      // general category L*
bool is_number(char32_t cp);      // general category N*
bool is_mark(char32_t cp);        // general category M* (combining marks)
bool is_white_space(char32_t cp); // White_Space property

// Unicode Normalization Form C. Text that is already NFC (all ASCII, most CJK)
// is returned unchanged without copying work beyond one scan.
std::string nfc(std::string_view text);

// Length of the longest prefix of `bytes` that ends on a character boundary
// and holds no incomplete trailing sequence; what is left could still be
// completed by later bytes.
size_t complete_utf8_prefix(std::string_view bytes);
// Valid UTF-8 with each maximal invalid subsequence replaced by U+FFFD
// (the rule Rust's String::from_utf8_lossy and WHATWG decoders follow).
std::string to_valid_utf8(std::string_view bytes);

}  // namespace xft::engine::unicode
