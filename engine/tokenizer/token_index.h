// Token bytes -> id for the ordinary vocabulary: an open-addressing table of
// ids over the token strings the tokenizer already stores, looked up by
// string_view (no allocation per lookup; loading does ~10^6 of them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xft::engine {

class TokenIndex {
 public:
  // Indexes every non-empty entry of `tokens` (id = position). `tokens` must
  // outlive the index and keep those entries unchanged. Returns -1, or the id
  // of a token whose bytes an earlier id already has.
  int32_t build(const std::vector<std::string>& tokens);
  // -1 when no ordinary token has these bytes.
  int32_t find(std::string_view bytes) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(bytes);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && (*tokens_)[s.id] == bytes) return s.id;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t tag;
    int32_t id;
  };
  static uint64_t hash(std::string_view bytes) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a, then a final mix for the low bits
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001B3ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
  }
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace xft::engine
