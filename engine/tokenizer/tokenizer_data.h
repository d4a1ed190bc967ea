// What a loaded tokenizer holds; built by the tokenizer.json and
// qwen.tiktoken loaders, read by Tokenizer. Internal to engine/tokenizer.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/token_index.h"

namespace xft::engine {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special;
};

struct TokenizerData {
  std::vector<std::string> id_to_bytes;                // every id, added tokens as their text
  TokenIndex ordinary;                                 // bytes -> id, ordinary tokens only
  std::array<int32_t, 256> byte_ids{};                 // the single-byte tokens
  PairTable pairs;
  std::vector<AddedToken> added;                       // matched in text before anything else
  std::array<std::vector<uint32_t>, 256> added_by_first_byte;  // indices into `added`, longest first
  std::vector<uint8_t> special;                        // per id: 1 for special tokens
  bool normalize_nfc = true;
  SplitPattern split = SplitPattern::qwen2;            // the tokenizer.json's Split regex
  // tiktoken encodes a piece that is itself a token directly; Hugging Face
  // BPE (ignore_merges=false) always merges byte by byte.
  bool whole_piece_lookup = false;
  int32_t im_start = -1, im_end = -1, endoftext = -1;

  // Recently encoded pieces -> ids, shared by all threads that encode with
  // this tokenizer: direct-mapped, fixed size, no allocation per entry.
  struct CachedPiece {
    uint64_t hash = 0;
    uint8_t length = 0;  // 0: empty slot
    uint8_t count = 0;
    char bytes[22];
    int32_t ids[8];
  };
  static constexpr size_t kCacheSlots = size_t{1} << 16;  // 4 MiB
  mutable std::mutex cache_mutex;
  mutable std::vector<CachedPiece> cache = std::vector<CachedPiece>(kCacheSlots);
};

// Indexes id_to_bytes (the ordinary tokens) into `ordinary`; an error text
// when two ids have the same bytes.
std::string index_ordinary_tokens(TokenizerData& data);
// Called by both loaders once ordinary ids and added tokens are in place:
// indexes the added tokens, marks specials, finds the ChatML ids. An error
// text when a byte has no single-byte token or an added token reuses an id.
std::string finish_tokenizer_data(TokenizerData& data);

}  // namespace xft::engine
