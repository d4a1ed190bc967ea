// Which prompt prefixes have their KV cached, on rank 0: the index only.
// A prompt is cut into blocks of kPrefixBlockTokens tokens; block i is
// named by a 64-bit hash of (block i-1's hash, its tokens), so a block
// stands for the whole prefix up to its end. A hash match is checked against
// the block's tokens and its parent block, so a collision never reuses
// another prompt's KV. The KV itself sits in every rank's StepExecutor under
// the block ids this index hands out; the step plan says which blocks are
// filled, copied into new sequences and dropped, so all ranks agree.
//
// With linear-attention layers (Qwen3.5) a position's keys and values are
// not enough to go on from it: the layers' state after the block's last
// token must come too. Such a model caches that state with the blocks it
// was kept for (state_bytes more each), and a reused prefix ends on one.
//
// Eviction is least recently used, and only of blocks no other cached block
// extends (a lookup touches a chain from its end back to its first block,
// so the first blocks stay the most recent), and never of a block held by
// the step being planned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xft::engine::serve {

constexpr int kPrefixBlockTokens = 16;

// The hash chain: parent is the previous block's hash (0 for the first block).
uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens);

struct PrefixCacheStats {
  uint64_t lookups = 0;     // requests admitted with the cache on
  uint64_t hits = 0;        // ... that reused at least one block
  uint64_t hit_tokens = 0;  // prompt tokens not prefilled thanks to the cache
  uint64_t evictions = 0;   // blocks dropped to make room
  size_t bytes = 0;         // KV held by cached blocks (per rank)
  int blocks = 0;
};

class PrefixCache {
 public:
  using Hash = std::function<uint64_t(uint64_t parent, std::span<const int32_t> tokens)>;
  // block_bytes: one block's KV on this rank. state_bytes: a linear-attention
  // state on this rank (0: none; the model has only attention layers).
  // hash: tests inject collisions.
  explicit PrefixCache(size_t block_bytes, size_t state_bytes = 0, Hash hash = hash_block);

  // The ids of the cached blocks that make up the longest prefix of
  // tokens[0, limit) made of whole blocks (ending on a block with a
  // state when the model needs one), in order. They are touched and
  // held until release_holds().
  std::vector<int32_t> lookup(std::span<const int32_t> tokens, int limit);
  // Counts one admitted request that reuses `blocks` blocks.
  void count_lookup(int blocks);

  // A block to fill from positions [position, position + kPrefixBlockTokens).
  struct NewBlock {
    int32_t id = 0;
    int32_t position = 0;
    bool state = false;  // keeps the linear-attention state after its last token
  };
  // Indexes the whole blocks of `tokens` not cached yet, while the cache
  // fits in `room` bytes (evicting unheld blocks, whose ids go to `dropped`).
  // With a state_bytes model, the new block ending at token `state_end` keeps
  // the state (the caller has it there), and no block past it is indexed.
  // The caller copies the returned blocks' KV before anything reads them.
  std::vector<NewBlock> insert(std::span<const int32_t> tokens, size_t room, std::vector<int32_t>& dropped,
                               int state_end = -1);
  // Evicts until the cache holds at most `room` bytes; false if held blocks
  // alone exceed it.
  bool shrink_to(size_t room, std::vector<int32_t>& dropped);
  void release_holds() { held_.clear(); }

  const PrefixCacheStats& stats() const { return stats_; }
  size_t bytes() const { return stats_.bytes; }

 private:
  struct Block {
    uint64_t hash = 0;
    int32_t parent = -1;
    std::vector<int32_t> tokens;
    int children = 0;
    bool used = false;
    bool state = false;
    size_t bytes = 0;
    std::list<int32_t>::iterator lru;  // position in lru_ (front: most recent)
  };
  int32_t find(int32_t parent, uint64_t hash, std::span<const int32_t> tokens) const;
  int32_t add(int32_t parent, uint64_t hash, std::span<const int32_t> tokens, bool state);
  bool evict_one(std::vector<int32_t>& dropped);
  void touch(const std::vector<int32_t>& chain);

  size_t block_bytes_;
  size_t state_bytes_;
  Hash hash_;
  std::vector<Block> blocks_;  // index = block id
  std::vector<int32_t> free_ids_;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  std::list<int32_t> lru_;
  std::unordered_set<int32_t> held_;
  PrefixCacheStats stats_;
};

}  // namespace xft::engine::serve
