#include "engine/tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "engine/tokenizer/unicode.h"

namespace xft::engine {
namespace {

struct Alphabet {
  std::array<char32_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // the alphabet's code points are all below 324
};

const Alphabet& alphabet() {
  static const Alphabet a = [] {
    Alphabet t;
    t.cp_to_byte.fill(-1);
    char32_t next_extra = 256;
    for (int b = 0; b < 256; ++b) {
      // Printable Latin-1 stands for itself; the rest moves to U+0100 and up.
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t cp = printable ? static_cast<char32_t>(b) : next_extra++;
      t.byte_to_cp[b] = cp;
      t.cp_to_byte[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return a;
}

}  // namespace

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    unicode::Decoded d = unicode::decode_utf8(token, pos);
    if (!d.valid || d.cp >= a.cp_to_byte.size() || a.cp_to_byte[d.cp] < 0) return std::nullopt;
    out += static_cast<char>(a.cp_to_byte[d.cp]);
    pos += d.length;
  }
  return out;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  for (char c : bytes) unicode::append_utf8(out, a.byte_to_cp[static_cast<unsigned char>(c)]);
  return out;
}

}  // namespace xft::engine
