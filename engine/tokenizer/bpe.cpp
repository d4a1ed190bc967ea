#include "engine/tokenizer/bpe.h"

#include <bit>
#include <climits>
#include <queue>

namespace xft::engine {

void PairTable::reserve(size_t pairs) {
  size_t capacity = 16;
  while (capacity < pairs * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{kEmpty, {0, 0}});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  used_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty)
      insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFF), s.merge);
}

void PairTable::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void PairTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;
    if (s.key == kEmpty) {
      s = Slot{key, merge};
      ++used_;
      return;
    }
  }
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
};

struct Candidate {
  int32_t rank;
  int32_t pos;  // index of the left symbol
  int32_t left_id, right_id;
  // Lowest rank first; among equal ranks the leftmost, as Hugging Face does.
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

constexpr int32_t kNoMerge = INT32_MAX;

}  // namespace

// Short pieces (nearly all of them) merge in place on the stack: find the
// lowest-ranked adjacent pair by a scan, merge it, repeat. Same order as the
// queue (lowest rank, then leftmost).

void bpe_merge_scan(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
                    const PairTable& pairs, std::vector<int32_t>& out) {
  constexpr size_t kMax = kBpeScanMax;
  int32_t ids[kMax], ranks[kMax], merged[kMax];  // ranks[i]: pair (i, i+1)
  size_t n = piece.size();
  for (size_t i = 0; i < n; ++i) ids[i] = byte_ids[static_cast<unsigned char>(piece[i])];
  auto look = [&](size_t i) {
    const PairTable::Merge* m = pairs.find(ids[i], ids[i + 1]);
    ranks[i] = m ? m->rank : kNoMerge;
    merged[i] = m ? m->merged : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) look(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNoMerge) break;
    ids[best] = merged[best];
    for (size_t i = best + 1; i + 1 < n; ++i) {
      ids[i] = ids[i + 1];
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) look(best - 1);
    if (best + 1 < n) look(best);
  }
  out.insert(out.end(), ids, ids + n);
}

void bpe_merge_queue(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
               const PairTable& pairs, std::vector<int32_t>& out) {
  const int32_t n = static_cast<int32_t>(piece.size());
  if (n == 1) {
    out.push_back(byte_ids[static_cast<unsigned char>(piece[0])]);
    return;
  }
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_ids[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};

  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    if (const PairTable::Merge* m = pairs.find(symbols[pos].id, symbols[next].id))
      queue.push({m->rank, pos, symbols[pos].id, symbols[next].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.pos];
    // Stale entries: a side was merged away or changed since this was queued.
    if (left.id != c.left_id || left.next < 0 || symbols[left.next].id != c.right_id) continue;
    const PairTable::Merge* m = pairs.find(c.left_id, c.right_id);
    const int32_t right_index = left.next;
    left.id = m->merged;
    left.next = symbols[right_index].next;
    if (left.next >= 0) symbols[left.next].prev = c.pos;
    symbols[right_index].id = -1;  // dead
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

void bpe_merge(std::string_view piece, const std::array<int32_t, 256>& byte_ids,
               const PairTable& pairs, std::vector<int32_t>& out) {
  if (piece.size() <= kBpeScanMax)
    bpe_merge_scan(piece, byte_ids, pairs, out);
  else
    bpe_merge_queue(piece, byte_ids, pairs, out);
}

}  // namespace xft::engine
