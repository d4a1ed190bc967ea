// Qwen's byte-level BPE tokenizer, token for token the same as Hugging Face
// `tokenizers` with a Qwen2/2.5/3 tokenizer.json (added tokens split out first,
// NFC, Qwen's split pattern, byte-level mapping, BPE by merge rank) and as
// tiktoken with Qwen1's qwen.tiktoken.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.h"

namespace xft::engine {

struct TokenizerData;  // vocabulary, merges, added tokens, caches

class Tokenizer {
 public:
  // Reads <model_dir>/tokenizer.json, else <model_dir>/qwen.tiktoken; a path
  // to either file itself also works (*.tiktoken is read as tiktoken).
  static Expected<Tokenizer> load(const std::string& model_dir);
  // From the text of those files (`source` names them in error messages).
  static Expected<Tokenizer> from_tokenizer_json(const std::string& json, const std::string& source);
  static Expected<Tokenizer> from_tiktoken(const std::string& tiktoken, const std::string& source);

  // Added/special tokens written in the text ("<|im_start|>") become their ids.
  std::vector<int32_t> encode(std::string_view text) const;
  // Added/special tokens written in the text are tokenized as plain text;
  // for untrusted content that must not inject control tokens.
  std::vector<int32_t> encode_ordinary(std::string_view text) const;
  // As encode(), except that an added token overlapping any of `plain_ranges`
  // ([begin, end) byte offsets, sorted and disjoint) is read as plain text:
  // a rendered chat template's message content cannot inject control tokens,
  // while the template's own "<|im_start|>" still becomes one.
  std::vector<int32_t> encode_with_plain_ranges(std::string_view text,
                                                std::span<const std::pair<size_t, size_t>> plain_ranges) const;
  // Concatenated token bytes; ids outside the vocabulary are skipped, bytes
  // that are not valid UTF-8 become U+FFFD (as Hugging Face decodes).
  std::string decode(std::span<const int32_t> ids) const;

  // -1 when `token` (its text, e.g. "<|im_end|>" or "Hello") is no token.
  int32_t token_id(std::string_view token) const;
  // A token's raw bytes; empty for an id outside the vocabulary.
  std::string_view token_bytes(int32_t id) const;
  bool is_special(int32_t id) const;
  // One past the largest id, added tokens included.
  int32_t vocab_size() const;

  int32_t im_start() const;
  int32_t im_end() const;
  int32_t endoftext() const;

  // Qwen ChatML for (role, content) messages; a "system" message with
  // "You are a helpful assistant." is put first when none is given.
  std::string chat_prompt(const std::vector<std::pair<std::string, std::string>>& messages,
                          bool add_generation_prompt) const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerData> data) : data_(std::move(data)) {}
  std::shared_ptr<const TokenizerData> data_;
};

// Turns generated ids into text as they arrive, never emitting half a UTF-8
// character: bytes of an incomplete character are held until it completes.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  // The complete UTF-8 text that `id` finishes (often empty for CJK/emoji pieces).
  std::string push(int32_t id);
  // Whatever is still held, invalid remainders as U+FFFD; call at end of stream.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace xft::engine
