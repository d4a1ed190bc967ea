#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace xft::engine::unicode {
namespace {

struct CodepointRange {
  char32_t first, last;
};
struct CombiningClassRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint16_t offset, length;  // into kDecompositionPool
};
struct Composition {
  char32_t first, second, composite;
};

#include "engine/tokenizer/unicode_tables.inc"

constexpr char32_t kInvalid = 0x110000;  // outside Unicode: in no class
constexpr char32_t kReplacement = 0xFFFD;

// Hangul syllables compose and decompose by arithmetic, not by table.
constexpr char32_t kHangulSBase = 0xAC00, kHangulLBase = 0x1100, kHangulVBase = 0x1161,
                   kHangulTBase = 0x11A7;
constexpr int kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28,
              kHangulNCount = kHangulVCount * kHangulTCount,
              kHangulSCount = kHangulLCount * kHangulNCount;

template <class Range, size_t N>
bool in_ranges(const Range (&ranges)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](char32_t c, const Range& r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

enum : uint8_t { kLetterBit = 1, kNumberBit = 2, kSpaceBit = 4, kAttentionBit = 8, kMarkBit = 16 };

// One flag byte per BMP code point: the hot path (ASCII, CJK, Cyrillic...)
// never binary-searches.
const std::array<uint8_t, 0x10000>& bmp_flags() {
  static const auto table = [] {
    std::array<uint8_t, 0x10000> flags{};
    auto mark = [&](const auto& ranges, uint8_t bit) {
      for (const auto& r : ranges)
        for (char32_t cp = r.first; cp <= r.last && cp < 0x10000; ++cp) flags[cp] |= bit;
    };
    mark(kLetterRanges, kLetterBit);
    mark(kNumberRanges, kNumberBit);
    mark(kMarkRanges, kMarkBit);
    mark(kWhiteSpaceRanges, kSpaceBit);
    mark(kNfcAttentionRanges, kAttentionBit);
    return flags;
  }();
  return table;
}

bool needs_nfc_attention(char32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp] & kAttentionBit;
  return in_ranges(kNfcAttentionRanges, cp);
}

uint8_t combining_class(char32_t cp) {
  auto it = std::upper_bound(std::begin(kCombiningClassRanges), std::end(kCombiningClassRanges), cp,
                             [](char32_t c, const CombiningClassRange& r) { return c < r.first; });
  if (it == std::begin(kCombiningClassRanges) || cp > std::prev(it)->last) return 0;
  return std::prev(it)->ccc;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kHangulSBase && cp < kHangulSBase + kHangulSCount) {
    const int s = static_cast<int>(cp - kHangulSBase);
    out.push_back(kHangulLBase + s / kHangulNCount);
    out.push_back(kHangulVBase + (s % kHangulNCount) / kHangulTCount);
    if (s % kHangulTCount) out.push_back(kHangulTBase + s % kHangulTCount);
    return;
  }
  auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), cp,
                             [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it == std::end(kDecompositions) || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecompositionPool + it->offset,
             kDecompositionPool + it->offset + it->length);
}

// The primary composite of a starter and the following code point, or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kHangulLBase && first < kHangulLBase + kHangulLCount && second >= kHangulVBase &&
      second < kHangulVBase + kHangulVCount)
    return kHangulSBase +
           ((first - kHangulLBase) * kHangulVCount + (second - kHangulVBase)) * kHangulTCount;
  if (first >= kHangulSBase && first < kHangulSBase + kHangulSCount &&
      (first - kHangulSBase) % kHangulTCount == 0 && second > kHangulTBase &&
      second < kHangulTBase + kHangulTCount)
    return first + (second - kHangulTBase);
  auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), first,
                             [](const Composition& c, char32_t f) { return c.first < f; });
  for (; it != std::end(kCompositions) && it->first == first; ++it)
    if (it->second == second) return it->composite;
  return 0;
}

// Full NFC of a short stretch: decompose, order marks, recompose.
void nfc_chunk(std::string_view chunk, std::string& out) {
  std::vector<char32_t> cps;
  for (size_t pos = 0; pos < chunk.size();) {
    Decoded d = decode_utf8(chunk, pos);
    if (!d.valid) {  // keep bytes that are not UTF-8 as they are
      for (char32_t cp : cps) append_utf8(out, cp);
      cps.clear();
      out.append(chunk.substr(pos, d.length));
    } else {
      decompose(d.cp, cps);
    }
    pos += d.length;
  }
  // Canonical ordering: a stable sort of each run of non-starters by class.
  for (size_t i = 0; i < cps.size();) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < cps.size() && combining_class(cps[end]) != 0) ++end;
    std::stable_sort(cps.begin() + i, cps.begin() + end, [](char32_t a, char32_t b) {
      return combining_class(a) < combining_class(b);
    });
    i = end;
  }
  // Canonical composition.
  std::vector<char32_t> composed;
  ptrdiff_t starter = -1;
  int last_class = -1;  // class of the last mark kept after the starter; -1: none yet
  for (char32_t cp : cps) {
    const int cls = combining_class(cp);
    // A mark of equal or higher class (or any starter) in between blocks composition.
    const bool blocked = last_class != -1 && last_class >= cls;
    if (starter >= 0 && !blocked) {
      if (char32_t c = compose(composed[starter], cp)) {
        composed[starter] = c;
        continue;
      }
    }
    if (cls == 0) {
      starter = static_cast<ptrdiff_t>(composed.size());
      last_class = -1;
    } else {
      last_class = cls;
    }
    composed.push_back(cp);
  }
  for (char32_t cp : composed) append_utf8(out, cp);
}

}  // namespace

Decoded decode_utf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return {lead, 1, true};
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  char32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2, cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;  // overlong
    if (lead == 0xED) hi = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3, cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;  // overlong
    if (lead == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return {kInvalid, 1, false};
  }
  for (int k = 1; k <= need; ++k) {
    if (pos + k >= text.size()) return {kInvalid, k, false};
    const uint8_t b = byte(pos + k);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return {kInvalid, k, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, need + 1, true};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_letter(char32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp] & kLetterBit;
  return in_ranges(kLetterRanges, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp] & kNumberBit;
  return in_ranges(kNumberRanges, cp);
}

bool is_mark(char32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp] & kMarkBit;
  return in_ranges(kMarkRanges, cp);
}

bool is_white_space(char32_t cp) {
  if (cp < 0x10000) return bmp_flags()[cp] & kSpaceBit;
  return false;  // White_Space has no code point beyond the BMP
}

std::string nfc(std::string_view text) {
  std::string out;
  size_t copied = 0;         // text[0, copied) is already in `out`
  size_t last_boundary = 0;  // start of the latest code point NFC cannot merge backwards into
  bool changed = false;
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      last_boundary = pos++;
      continue;
    }
    Decoded d = decode_utf8(text, pos);
    if (!d.valid || !needs_nfc_attention(d.cp)) {
      last_boundary = pos;
      pos += d.length;
      continue;
    }
    // Normalize from the starter before this code point up to the next
    // code point that is safe to start from.
    size_t end = pos + d.length;
    while (end < text.size()) {
      Decoded next = decode_utf8(text, end);
      if (!next.valid || !needs_nfc_attention(next.cp)) break;
      end += next.length;
    }
    if (!changed) {
      out.reserve(text.size() + 16);
      changed = true;
    }
    out.append(text.substr(copied, last_boundary - copied));
    nfc_chunk(text.substr(last_boundary, end - last_boundary), out);
    copied = end;
    last_boundary = end;
    pos = end;
  }
  if (!changed) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

size_t complete_utf8_prefix(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t b = static_cast<uint8_t>(bytes[n - back]);
    if (b < 0x80) return n;
    if (b < 0xC0) continue;  // continuation byte: look further back for the lead
    // A lead byte: hold it back only if what follows is a valid, unfinished start.
    Decoded d = decode_utf8(bytes, n - back);
    const bool unfinished = !d.valid && static_cast<size_t>(d.length) == back &&
                            d.length < (b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2) && b >= 0xC2 &&
                            b <= 0xF4;
    return unfinished ? n - back : n;
  }
  return n;
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    Decoded d = decode_utf8(bytes, pos);
    if (d.valid)
      out.append(bytes.substr(pos, d.length));
    else
      append_utf8(out, kReplacement);
    pos += d.length;
  }
  return out;
}

}  // namespace xft::engine::unicode
