// Byte-pair merging of one pre-tokenized piece: start from one token per
// byte and repeatedly merge the adjacent pair of lowest rank. Both Hugging
// Face BPE (rank = position in `merges`) and tiktoken (rank of the merged
// token) reduce to a table (left id, right id) -> (rank, merged id).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace xft::engine {

class PairTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  void reserve(size_t pairs);
  // Keeps the first entry for a pair (the lowest rank when added in rank order).
  void insert(int32_t left, int32_t right, Merge merge);
  // nullptr when the pair never merges.
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t used_ = 0;
};

// Appends the ids of `piece` (raw bytes) to `out`. `byte_ids` maps each byte
// value to its single-byte token. Picks one of the two strategies below.
void bpe_merge(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
               const PairTable& pairs, std::vector<int32_t>& out);

// Pieces up to kBpeScanMax bytes: arrays on the stack, a scan per merge.
inline constexpr size_t kBpeScanMax = 64;
void bpe_merge_scan(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
                    const PairTable& pairs, std::vector<int32_t>& out);
// Any length: a linked list of symbols and a priority queue of pairs.
void bpe_merge_queue(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
                     const PairTable& pairs, std::vector<int32_t>& out);

}  // namespace xft::engine
