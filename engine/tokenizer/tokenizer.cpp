#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/atomic_file.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer_data.h"
#include "engine/tokenizer/unicode.h"

namespace xft::engine {
namespace {


constexpr const char* kDefaultSystemPrompt = "You are a helpful assistant.";

}  // namespace

std::string index_ordinary_tokens(TokenizerData& data) {
  const int32_t duplicate = data.ordinary.build(data.id_to_bytes);
  if (duplicate < 0) return {};
  return "token " + std::to_string(duplicate) + " has the same bytes as token " +
         std::to_string(data.ordinary.find(data.id_to_bytes[duplicate])) + "; the vocabulary is corrupt";
}

std::string finish_tokenizer_data(TokenizerData& data) {
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    const int32_t id = data.ordinary.find(std::string_view(&byte, 1));
    if (id < 0)
      return "byte 0x" + std::string(1, "0123456789abcdef"[b >> 4]) + "0123456789abcdef"[b & 15] +
             " has no token; every byte-level BPE vocabulary has all 256";
    data.byte_ids[b] = id;
  }
  int32_t max_id = static_cast<int32_t>(data.id_to_bytes.size()) - 1;
  for (const AddedToken& t : data.added) {
    // Some vocabularies (GPT-2's <|endoftext|>) list a token in both places.
    if (t.id <= max_id && !data.id_to_bytes[t.id].empty() && data.id_to_bytes[t.id] != t.content)
      return "added token \"" + t.content + "\" reuses id " + std::to_string(t.id) +
             " of an ordinary token; that is not supported";
    max_id = std::max(max_id, t.id);
  }
  data.id_to_bytes.resize(max_id + 1);
  data.special.assign(max_id + 1, 0);
  for (const AddedToken& t : data.added) {
    data.id_to_bytes[t.id] = t.content;
    data.special[t.id] = t.special;
  }
  for (uint32_t i = 0; i < data.added.size(); ++i)
    data.added_by_first_byte[static_cast<unsigned char>(data.added[i].content[0])].push_back(i);
  for (auto& bucket : data.added_by_first_byte)  // longest first: leftmost-longest matching
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return data.added[a].content.size() > data.added[b].content.size();
    });
  auto added_id = [&](std::string_view content) {
    for (const AddedToken& t : data.added)
      if (t.content == content) return t.id;
    return -1;
  };
  data.im_start = added_id("<|im_start|>");
  data.im_end = added_id("<|im_end|>");
  data.endoftext = added_id("<|endoftext|>");
  return {};
}

Expected<Tokenizer> Tokenizer::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const fs::path json_path = fs::path(model_dir) / "tokenizer.json";
  const fs::path tiktoken_path = fs::path(model_dir) / "qwen.tiktoken";
  std::error_code ec;
  if (fs::is_regular_file(model_dir, ec)) {  // the vocabulary file itself
    Expected<std::string> text = read_file(model_dir);
    if (!text) return text.error();
    if (model_dir.ends_with(".tiktoken")) return from_tiktoken(*text, model_dir);
    return from_tokenizer_json(*text, model_dir);
  }
  if (fs::exists(json_path, ec)) {
    Expected<std::string> text = read_file(json_path.string());
    if (!text) return text.error();
    return from_tokenizer_json(*text, json_path.string());
  }
  if (fs::exists(tiktoken_path, ec)) {
    Expected<std::string> text = read_file(tiktoken_path.string());
    if (!text) return text.error();
    return from_tiktoken(*text, tiktoken_path.string());
  }
  return make_error(model_dir + ": no tokenizer found (looked for tokenizer.json and qwen.tiktoken); "
                    "point --model at a Qwen checkpoint directory");
}

namespace {

void encode_piece(const TokenizerData& d, std::string_view piece, std::vector<int32_t>& out) {
  if (d.whole_piece_lookup) {
    if (const int32_t id = d.ordinary.find(piece); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  using Entry = TokenizerData::CachedPiece;
  if (piece.size() > sizeof(Entry::bytes)) {
    bpe_merge(piece, d.byte_ids, d.pairs, out);
    return;
  }
  uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : piece) hash = (hash ^ c) * 0x100000001B3ull;
  Entry& slot = d.cache[(hash ^ (hash >> 29)) & (TokenizerData::kCacheSlots - 1)];
  {
    std::lock_guard lock(d.cache_mutex);
    if (slot.hash == hash && slot.length == piece.size() &&
        std::memcmp(slot.bytes, piece.data(), piece.size()) == 0) {
      out.insert(out.end(), slot.ids, slot.ids + slot.count);
      return;
    }
  }
  const size_t first = out.size();
  bpe_merge(piece, d.byte_ids, d.pairs, out);
  const size_t count = out.size() - first;
  if (count > std::size(Entry{}.ids)) return;
  std::lock_guard lock(d.cache_mutex);
  slot.hash = hash;
  slot.length = static_cast<uint8_t>(piece.size());
  slot.count = static_cast<uint8_t>(count);
  std::memcpy(slot.bytes, piece.data(), piece.size());
  std::copy(out.begin() + first, out.end(), slot.ids);
}

void encode_text(const TokenizerData& d, std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  const std::string normalized = d.normalize_nfc ? unicode::nfc(text) : std::string(text);
  std::vector<std::string_view> pieces;
  split_qwen_pieces(normalized, pieces, d.split);
  for (std::string_view piece : pieces) encode_piece(d, piece, out);
}

// The added token that starts at `pos` (longest if several), or nullptr.
const AddedToken* added_token_at(const TokenizerData& d, std::string_view text, size_t pos) {
  for (uint32_t i : d.added_by_first_byte[static_cast<unsigned char>(text[pos])]) {
    const AddedToken& t = d.added[i];
    if (text.compare(pos, t.content.size(), t.content) == 0) return &t;
  }
  return nullptr;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t segment_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (data_->added_by_first_byte[static_cast<unsigned char>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const AddedToken* t = added_token_at(*data_, text, pos);
    if (!t) {
      ++pos;
      continue;
    }
    encode_text(*data_, text.substr(segment_start, pos - segment_start), out);
    out.push_back(t->id);
    pos += t->content.size();
    segment_start = pos;
  }
  encode_text(*data_, text.substr(segment_start), out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_with_plain_ranges(std::string_view text,
                                                     std::span<const std::pair<size_t, size_t>> plain_ranges) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t segment_start = 0;
  size_t range = 0;  // the first plain range that does not end before pos
  for (size_t pos = 0; pos < text.size();) {
    while (range < plain_ranges.size() && plain_ranges[range].second <= pos) ++range;
    if (data_->added_by_first_byte[static_cast<unsigned char>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const AddedToken* t = added_token_at(*data_, text, pos);
    const bool overlaps_plain = t && range < plain_ranges.size() && plain_ranges[range].first < pos + t->content.size();
    if (!t || overlaps_plain) {
      ++pos;
      continue;
    }
    encode_text(*data_, text.substr(segment_start, pos - segment_start), out);
    out.push_back(t->id);
    pos += t->content.size();
    segment_start = pos;
  }
  encode_text(*data_, text.substr(segment_start), out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  encode_text(*data_, text, out);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (int32_t id : ids) bytes += token_bytes(id);
  return unicode::to_valid_utf8(bytes);
}

int32_t Tokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : data_->added)
    if (t.content == token) return t.id;
  return data_->ordinary.find(token);
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return data_->id_to_bytes[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && data_->special[id];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(data_->id_to_bytes.size()); }
int32_t Tokenizer::im_start() const { return data_->im_start; }
int32_t Tokenizer::im_end() const { return data_->im_end; }
int32_t Tokenizer::endoftext() const { return data_->endoftext; }

std::string Tokenizer::chat_prompt(const std::vector<std::pair<std::string, std::string>>& messages,
                                   bool add_generation_prompt) const {
  std::string out;
  auto turn = [&](const std::string& role, const std::string& content) {
    out += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
  };
  if (messages.empty() || messages.front().first != "system") turn("system", kDefaultSystemPrompt);
  for (const auto& [role, content] : messages) turn(role, content);
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_->token_bytes(id);
  const size_t complete = unicode::complete_utf8_prefix(pending_);
  std::string text = unicode::to_valid_utf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return text;
}

std::string StreamDecoder::flush() {
  std::string text = unicode::to_valid_utf8(pending_);
  pending_.clear();
  return text;
}

}  // namespace xft::engine
