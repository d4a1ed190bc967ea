// Loading Qwen1's qwen.tiktoken: ranks of byte strings, merged the tiktoken
// way (the adjacent pair whose concatenation has the lowest rank first).
#include "engine/tokenizer/tiktoken.h"

#include <optional>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace xft::engine {
namespace {

std::optional<std::string> decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// Qwen1 fixes its special tokens in code (tokenization_qwen.py), right after
// the ordinary ranks.
void add_qwen1_specials(TokenizerData& data, int32_t first_id) {
  std::vector<std::string> names = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int i = 0; i < 205; ++i) names.push_back("<|extra_" + std::to_string(i) + "|>");
  for (size_t i = 0; i < names.size(); ++i)
    data.added.push_back({names[i], first_id + static_cast<int32_t>(i), true});
}

// tiktoken merges any adjacent pair whose concatenation is a token, so every
// split of every token into two tokens is a pair, ranked by the whole token.
void derive_pairs(TokenizerData& data) {
  data.pairs.reserve(data.ordinary.size() * 2);
  for (int32_t id = 0; id < static_cast<int32_t>(data.id_to_bytes.size()); ++id) {
    const std::string_view token = data.id_to_bytes[id];
    for (size_t split = 1; split < token.size(); ++split) {
      const int32_t left = data.ordinary.find(token.substr(0, split));
      if (left < 0) continue;
      const int32_t right = data.ordinary.find(token.substr(split));
      if (right < 0) continue;
      data.pairs.insert(left, right, {id, id});
    }
  }
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_tiktoken(const std::string& text, const std::string& source) {
  auto data = std::make_shared<TokenizerData>();
  data->whole_piece_lookup = true;
  data->normalize_nfc = true;  // tokenization_qwen.py applies NFC before encoding
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    const size_t space = line.find(' ');
    if (space == std::string_view::npos)
      return make_error(where + "expected \"base64 rank\", found \"" + std::string(line.substr(0, 80)) + "\"");
    std::optional<std::string> bytes = decode_base64(line.substr(0, space));
    if (!bytes || bytes->empty()) return make_error(where + "token is not non-empty base64");
    int64_t rank = 0;
    std::string_view digits = line.substr(space + 1);
    if (digits.empty() || digits.size() > 9) return make_error(where + "rank is not a small non-negative integer");
    for (char c : digits) {
      if (c < '0' || c > '9') return make_error(where + "rank is not a small non-negative integer");
      rank = rank * 10 + (c - '0');
    }
    if (data->id_to_bytes.size() <= static_cast<size_t>(rank)) data->id_to_bytes.resize(rank + 1);
    if (!data->id_to_bytes[rank].empty())
      return make_error(where + "rank " + std::to_string(rank) + " appears twice");
    data->id_to_bytes[rank] = std::move(*bytes);
  }
  if (data->id_to_bytes.empty()) return make_error(source + ": no tokens (empty file?)");
  if (std::string problem = index_ordinary_tokens(*data); !problem.empty())
    return make_error(source + ": " + problem);
  derive_pairs(*data);
  add_qwen1_specials(*data, static_cast<int32_t>(data->id_to_bytes.size()));
  if (std::string problem = finish_tokenizer_data(*data); !problem.empty())
    return make_error(source + ": " + problem);
  return Tokenizer(std::move(data));
}

}  // namespace xft::engine
