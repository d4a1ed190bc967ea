#include "engine/serve/prefix_cache.h"

#include <algorithm>

namespace xft::engine::serve {

namespace {

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ 0x9e3779b97f4a7c15ULL);
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

PrefixCache::PrefixCache(size_t block_bytes, size_t state_bytes, Hash hash)
    : block_bytes_(block_bytes), state_bytes_(state_bytes), hash_(std::move(hash)) {}

int32_t PrefixCache::find(int32_t parent, uint64_t hash, std::span<const int32_t> tokens) const {
  auto [begin, end] = by_hash_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const Block& b = blocks_[it->second];
    if (b.parent == parent && std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) {
      return it->second;
    }
  }
  return -1;
}

// The chain's last block first: a block is then never less recent than a
// block that extends it, and LRU eviction takes the ends of chains first.
void PrefixCache::touch(const std::vector<int32_t>& chain) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    lru_.splice(lru_.begin(), lru_, blocks_[*it].lru);
  }
}

std::vector<int32_t> PrefixCache::lookup(std::span<const int32_t> tokens, int limit) {
  std::vector<int32_t> chain;
  uint64_t hash = 0;
  int32_t parent = -1;
  const int whole = std::min<int>(limit, static_cast<int>(tokens.size())) / kPrefixBlockTokens;
  for (int i = 0; i < whole; ++i) {
    const auto block = tokens.subspan(static_cast<size_t>(i) * kPrefixBlockTokens, kPrefixBlockTokens);
    hash = hash_(hash, block);
    const int32_t id = find(parent, hash, block);
    if (id < 0) break;
    chain.push_back(id);
    held_.insert(id);
    parent = id;
  }
  touch(chain);
  if (state_bytes_ > 0) {
    while (!chain.empty() && !blocks_[chain.back()].state) chain.pop_back();
  }
  return chain;
}

void PrefixCache::count_lookup(int blocks) {
  ++stats_.lookups;
  if (blocks == 0) return;
  ++stats_.hits;
  stats_.hit_tokens += static_cast<uint64_t>(blocks) * kPrefixBlockTokens;
}

int32_t PrefixCache::add(int32_t parent, uint64_t hash, std::span<const int32_t> tokens, bool state) {
  int32_t id = static_cast<int32_t>(blocks_.size());
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    blocks_.emplace_back();
  }
  Block& b = blocks_[id];
  b.hash = hash;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  b.children = 0;
  b.used = true;
  b.state = state;
  b.bytes = block_bytes_ + (state ? state_bytes_ : 0);
  lru_.push_front(id);
  b.lru = lru_.begin();
  if (parent >= 0) ++blocks_[parent].children;
  by_hash_.emplace(hash, id);
  stats_.bytes += b.bytes;
  ++stats_.blocks;
  return id;
}

bool PrefixCache::evict_one(std::vector<int32_t>& dropped) {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    const int32_t id = *it;
    Block& b = blocks_[id];
    if (b.children > 0 || held_.contains(id)) continue;
    auto [begin, end] = by_hash_.equal_range(b.hash);
    for (auto h = begin; h != end; ++h) {
      if (h->second == id) {
        by_hash_.erase(h);
        break;
      }
    }
    if (b.parent >= 0) --blocks_[b.parent].children;
    lru_.erase(b.lru);
    stats_.bytes -= b.bytes;
    b = Block{};
    free_ids_.push_back(id);
    --stats_.blocks;
    ++stats_.evictions;
    dropped.push_back(id);
    return true;
  }
  return false;
}

bool PrefixCache::shrink_to(size_t room, std::vector<int32_t>& dropped) {
  while (stats_.bytes > room) {
    if (!evict_one(dropped)) return false;
  }
  return true;
}

std::vector<PrefixCache::NewBlock> PrefixCache::insert(std::span<const int32_t> tokens, size_t room,
                                                       std::vector<int32_t>& dropped, int state_end) {
  std::vector<NewBlock> added;
  std::vector<int32_t> chain;
  uint64_t hash = 0;
  int32_t parent = -1;
  int whole = static_cast<int>(tokens.size()) / kPrefixBlockTokens;
  // Blocks past the state would be a prefix no request could resume from.
  if (state_bytes_ > 0) whole = std::min(whole, std::max(state_end, 0) / kPrefixBlockTokens);
  for (int i = 0; i < whole; ++i) {
    const auto block = tokens.subspan(static_cast<size_t>(i) * kPrefixBlockTokens, kPrefixBlockTokens);
    hash = hash_(hash, block);
    int32_t id = find(parent, hash, block);
    if (id < 0) {
      const bool state = state_bytes_ > 0 && (i + 1) * kPrefixBlockTokens == state_end;
      const size_t bytes = block_bytes_ + (state ? state_bytes_ : 0);
      // Held so far: the chain being extended, so it is never evicted for its own blocks.
      if (room < bytes || !shrink_to(room - bytes, dropped)) break;
      id = add(parent, hash, block, state);
      added.push_back(NewBlock{id, i * kPrefixBlockTokens, state});
    }
    chain.push_back(id);
    held_.insert(id);
    parent = id;
  }
  touch(chain);
  return added;
}

}  // namespace xft::engine::serve
