#include "engine/tokenizer/json_scan.h"

#include "engine/tokenizer/unicode.h"

namespace xft::engine::json_scan {
namespace {

constexpr size_t npos = std::string_view::npos;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The 4 hex digits at `pos`, or -1.
int read_hex4(std::string_view text, size_t pos) {
  if (pos + 4 > text.size()) return -1;
  int v = 0;
  for (size_t i = 0; i < 4; ++i) {
    const int d = hex_digit(text[pos + i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         (text[pos] == ' ' || text[pos] == '\n' || text[pos] == '\r' || text[pos] == '\t'))
    ++pos;
  return pos;
}

size_t read_string(std::string_view text, size_t pos, std::string& out) {
  out.clear();
  if (pos >= text.size() || text[pos] != '"') return npos;
  ++pos;
  while (pos < text.size()) {
    // Copy the run up to the next quote or escape in one go.
    size_t stop = pos;
    while (stop < text.size() && text[stop] != '"' && text[stop] != '\\') ++stop;
    out.append(text.substr(pos, stop - pos));
    if (stop >= text.size()) return npos;
    if (text[stop] == '"') return stop + 1;
    pos = stop + 1;  // after the backslash
    if (pos >= text.size()) return npos;
    const char e = text[pos++];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        int cp = read_hex4(text, pos);
        if (cp < 0) return npos;
        pos += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair spells one code point
          if (pos + 6 > text.size() || text[pos] != '\\' || text[pos + 1] != 'u') return npos;
          const int low = read_hex4(text, pos + 2);
          if (low < 0xDC00 || low > 0xDFFF) return npos;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          pos += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return npos;
        }
        unicode::append_utf8(out, static_cast<char32_t>(cp));
        break;
      }
      default:
        return npos;
    }
  }
  return npos;
}

size_t skip_value(std::string_view text, size_t pos) {
  pos = skip_space(text, pos);
  if (pos >= text.size()) return npos;
  const char c = text[pos];
  if (c == '"') {
    for (++pos; pos < text.size(); ++pos) {
      if (text[pos] == '\\')
        ++pos;
      else if (text[pos] == '"')
        return pos + 1;
    }
    return npos;
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    pos = skip_space(text, pos + 1);
    if (pos < text.size() && text[pos] == close) return pos + 1;
    while (true) {
      if (c == '{') {
        pos = skip_value(text, pos);  // the key
        if (pos == npos) return npos;
        pos = skip_space(text, pos);
        if (pos >= text.size() || text[pos] != ':') return npos;
        ++pos;
      }
      pos = skip_value(text, pos);
      if (pos == npos) return npos;
      pos = skip_space(text, pos);
      if (pos >= text.size()) return npos;
      if (text[pos] == close) return pos + 1;
      if (text[pos] != ',') return npos;
      ++pos;
    }
  }
  // A number, true, false or null: up to the next delimiter.
  const size_t start = pos;
  while (pos < text.size() && text[pos] != ',' && text[pos] != '}' && text[pos] != ']' &&
         text[pos] != ' ' && text[pos] != '\n' && text[pos] != '\r' && text[pos] != '\t')
    ++pos;
  return pos > start ? pos : npos;
}

Span find_member(std::string_view text, size_t pos, std::string_view key, bool& malformed) {
  malformed = true;
  pos = skip_space(text, pos);
  if (pos >= text.size() || text[pos] != '{') return {};
  pos = skip_space(text, pos + 1);
  if (pos < text.size() && text[pos] == '}') {
    malformed = false;
    return {};
  }
  std::string name;
  while (true) {
    pos = read_string(text, skip_space(text, pos), name);
    if (pos == npos) return {};
    pos = skip_space(text, pos);
    if (pos >= text.size() || text[pos] != ':') return {};
    const size_t value = skip_space(text, pos + 1);
    pos = skip_value(text, value);
    if (pos == npos) return {};
    if (name == key) {
      malformed = false;
      return {value, pos};
    }
    pos = skip_space(text, pos);
    if (pos < text.size() && text[pos] == '}') {
      malformed = false;
      return {};
    }
    if (pos >= text.size() || text[pos] != ',') return {};
    ++pos;
  }
}

}  // namespace xft::engine::json_scan
