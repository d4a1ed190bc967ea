#include "engine/chat_template/text_ops.h"

#include <algorithm>
#include <cctype>

namespace xft::engine::chat_template {

namespace {

size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;  // stray continuation byte: one unit, as it cannot be split further
}

uint32_t decode_at(std::string_view s, size_t at, size_t length) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  switch (length) {
    case 2: return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3: return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    case 4: return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
    default: return byte(0);
  }
}

struct CodePoint {
  size_t begin;
  size_t end;
  uint32_t value;
};

std::vector<CodePoint> decode(std::string_view s) {
  std::vector<CodePoint> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::min(sequence_length(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back({i, i + n, decode_at(s, i, n)});
    i += n;
  }
  return out;
}

// Python's str.isspace().
bool is_python_space(uint32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) return true;
  switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace

std::vector<size_t> code_point_starts(std::string_view s) {
  std::vector<size_t> starts;
  for (const CodePoint& c : decode(s)) starts.push_back(c.begin);
  starts.push_back(s.size());
  return starts;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += std::max<size_t>(1, sequence_length(static_cast<unsigned char>(s[i])))) ++n;
  return n;
}

Text strip(const Text& t, StripSide side, const std::optional<std::string>& chars) {
  const std::vector<CodePoint> cps = decode(t.bytes);
  std::vector<uint32_t> set;
  if (chars)
    for (const CodePoint& c : decode(*chars)) set.push_back(c.value);
  const auto strippable = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_python_space(c);
  };
  size_t first = 0;
  size_t last = cps.size();
  if (side != StripSide::Right)
    while (first < last && strippable(cps[first].value)) ++first;
  if (side != StripSide::Left)
    while (last > first && strippable(cps[last - 1].value)) --last;
  if (first == last) return {};
  return t.substr(cps[first].begin, cps[last - 1].end);
}

std::vector<Text> split(const Text& t, const std::optional<std::string>& sep, int64_t max_split) {
  std::vector<Text> out;
  if (sep) {
    if (sep->empty()) fail("split: empty separator");
    size_t from = 0;
    while (max_split < 0 || static_cast<int64_t>(out.size()) < max_split) {
      const size_t at = t.bytes.find(*sep, from);
      if (at == std::string::npos) break;
      out.push_back(t.substr(from, at));
      from = at + sep->size();
    }
    out.push_back(t.substr(from, t.bytes.size()));
    return out;
  }
  const std::vector<CodePoint> cps = decode(t.bytes);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_python_space(cps[i].value)) ++i;
    if (i == cps.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
      size_t end = cps.size();
      while (end > i && is_python_space(cps[end - 1].value)) --end;
      out.push_back(t.substr(cps[i].begin, cps[end - 1].end));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !is_python_space(cps[j].value)) ++j;
    out.push_back(t.substr(cps[i].begin, cps[j - 1].end));
    i = j;
  }
  return out;
}

std::vector<int64_t> slice_indices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   int64_t step) {
  if (step == 0) fail("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t fallback, int64_t low, int64_t high) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + length : *v;
    return std::clamp(x, low, high);
  };
  std::vector<int64_t> out;
  if (step > 0) {
    const int64_t b = clamp(start, 0, 0, length);
    const int64_t e = clamp(stop, length, 0, length);
    for (int64_t i = b; i < e; i += step) out.push_back(i);
  } else {
    const int64_t b = clamp(start, length - 1, -1, length - 1);
    const int64_t e = clamp(stop, -1, -1, length - 1);
    for (int64_t i = b; i > e; i += step) out.push_back(i);
  }
  return out;
}

Text slice(const Text& t, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  const std::vector<size_t> starts = code_point_starts(t.bytes);
  const int64_t length = static_cast<int64_t>(starts.size()) - 1;
  const std::vector<int64_t> indices = slice_indices(length, start, stop, step);
  if (step == 1) {
    if (indices.empty()) return {};
    return t.substr(starts[indices.front()], starts[indices.back() + 1]);
  }
  Text out;
  for (int64_t i : indices) out.append(t.substr(starts[i], starts[i + 1]));
  return out;
}

std::optional<Text> char_at(const Text& t, int64_t index) {
  const std::vector<size_t> starts = code_point_starts(t.bytes);
  const int64_t length = static_cast<int64_t>(starts.size()) - 1;
  if (index < 0) index += length;
  if (index < 0 || index >= length) return std::nullopt;
  return t.substr(starts[index], starts[index + 1]);
}

std::string ascii_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                        size_t max_bytes) {
  if (from.empty()) fail("replace: empty pattern is not supported");
  std::string out;
  size_t at = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, at);
    if (hit == std::string::npos) break;
    out.append(s, at, hit - at);
    out += to;
    if (out.size() > max_bytes) fail("replace: result longer than " + std::to_string(max_bytes) + " bytes");
    at = hit + from.size();
    ++done;
  }
  out.append(s, at, std::string::npos);
  return out;
}

}  // namespace xft::engine::chat_template
