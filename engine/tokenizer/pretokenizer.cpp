#include "engine/tokenizer/pretokenizer.h"

#include "engine/tokenizer/unicode.h"

namespace xft::engine {
namespace {

enum class CharClass { letter, number, newline, space, other };

struct Char {
  CharClass cls;
  char32_t cp;
  int length;
};

// Classifies the code point at `pos`; bytes that are not UTF-8 count as
// "other" (they match [^\s\p{L}\p{N}]), as a byte-level regex would treat them.
// With `marks_are_letters` (Qwen3.5) a combining mark classes as a letter:
// the pattern puts \p{M} wherever it has \p{L} in a letter run and takes it
// out of the punctuation run, and the optional prefix [^\r\n\p{L}\p{N}]
// before a run matches the same either way.
Char char_at(std::string_view text, size_t pos, bool marks_are_letters) {
  const unsigned char b = static_cast<unsigned char>(text[pos]);
  if (b < 0x80) {
    const char c = static_cast<char>(b);
    CharClass cls = CharClass::other;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      cls = CharClass::letter;
    else if (c >= '0' && c <= '9')
      cls = CharClass::number;
    else if (c == '\r' || c == '\n')
      cls = CharClass::newline;
    else if (c == ' ' || (c >= '\t' && c <= '\f'))
      cls = CharClass::space;
    return {cls, b, 1};
  }
  unicode::Decoded d = unicode::decode_utf8(text, pos);
  CharClass cls = CharClass::other;
  if (d.valid) {
    if (unicode::is_letter(d.cp) || (marks_are_letters && unicode::is_mark(d.cp)))
      cls = CharClass::letter;
    else if (unicode::is_number(d.cp))
      cls = CharClass::number;
    else if (unicode::is_white_space(d.cp))
      cls = CharClass::space;
  }
  return {cls, d.cp, d.length};
}

bool is_space(CharClass c) { return c == CharClass::space || c == CharClass::newline; }

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d): length of the contraction at `pos`, or 0.
size_t contraction_length(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char a = ascii_lower(text[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char b = ascii_lower(text[pos + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

size_t skip_letters(std::string_view text, size_t pos, bool marks) {
  while (pos < text.size()) {
    Char c = char_at(text, pos, marks);
    if (c.cls != CharClass::letter) break;
    pos += c.length;
  }
  return pos;
}

// Length of the piece that starts at `pos`: the regex's alternatives in order.
size_t piece_length(std::string_view text, size_t pos, bool marks) {
  if (size_t n = contraction_length(text, pos)) return n;

  const Char first = char_at(text, pos, marks);
  const size_t after_first = pos + first.length;
  const bool has_next = after_first < text.size();
  const Char next = has_next ? char_at(text, after_first, marks) : Char{CharClass::other, 0, 0};

  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (first.cls == CharClass::letter) return skip_letters(text, after_first, marks) - pos;
  if (first.cls != CharClass::newline && first.cls != CharClass::number && has_next &&
      next.cls == CharClass::letter)
    return skip_letters(text, after_first + next.length, marks) - pos;

  // \p{N}
  if (first.cls == CharClass::number) return first.length;

  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t others = pos;
  if (first.cp == ' ' && has_next && next.cls == CharClass::other)
    others = after_first;
  if (char_at(text, others, marks).cls == CharClass::other) {
    size_t end = others;
    while (end < text.size()) {
      Char c = char_at(text, end, marks);
      if (c.cls != CharClass::other) break;
      end += c.length;
    }
    while (end < text.size() && (text[end] == '\r' || text[end] == '\n')) ++end;
    return end - pos;
  }

  // Only white space is left: \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t run_end = pos, last_newline_end = 0, last_char_start = pos;
  while (run_end < text.size()) {
    Char c = char_at(text, run_end, marks);
    if (!is_space(c.cls)) break;
    last_char_start = run_end;
    run_end += c.length;
    if (c.cls == CharClass::newline) last_newline_end = run_end;
  }
  if (last_newline_end) return last_newline_end - pos;
  if (run_end == text.size()) return run_end - pos;
  // Followed by a non-space: leave the last space to prefix the next piece.
  if (last_char_start > pos) return last_char_start - pos;
  return run_end - pos;
}

}  // namespace

void split_qwen_pieces(std::string_view text, std::vector<std::string_view>& pieces, SplitPattern pattern) {
  const bool marks_are_letters = pattern == SplitPattern::qwen35;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = piece_length(text, pos, marks_are_letters);
    pieces.push_back(text.substr(pos, length));
    pos += length;
  }
}

}  // namespace xft::engine
