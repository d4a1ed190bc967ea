// KV cache and causal multi-head attention with grouped-query heads.
//
// Cache layout per layer: [kv_heads][capacity][head_dim] in bf16, f16 or f32
// (f32: the reference dtype, exact keys and values at twice the bytes of
// bf16), so one head's keys for consecutive positions are contiguous. Attention runs
// in tiles of kAttentionTile positions with an online softmax (flash-attention
// style): memory is O(tile) per task whatever the context length. Work is
// split over (block of up to 8 query rows, kv head): a task widens each K/V
// tile to float once for all its rows and the kv head's query heads. When
// that gives fewer tasks than threads (decode), the KV tiles are split into
// ranges too, whose partial softmax states are merged at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.h"

namespace xft::engine {

enum class KvFormat { bf16, f16, f32 };

// Bytes of one cached element: 2 (bf16, f16) or 4 (f32).
int kv_element_bytes(KvFormat format);

constexpr int kAttentionTile = 64;

class KvCache {
 public:
  KvCache() = default;
  KvCache(int kv_heads, int head_dim, int capacity, KvFormat format);

  // k, v: m rows of kv_heads * head_dim floats (row stride `row_stride`
  // floats); row r is stored at position positions[r] (< capacity).
  void store(const float* k, const float* v, int m, int row_stride, const int* positions);

  int kv_heads() const { return kv_heads_; }
  int head_dim() const { return head_dim_; }
  int capacity() const { return capacity_; }
  KvFormat format() const { return format_; }
  size_t bytes() const { return 2 * keys_.size(); }

  // Element (head, pos, 0) of head_dim contiguous elements of format().
  const void* key(int head, int pos) const { return keys_.data() + offset(head, pos); }
  const void* value(int head, int pos) const { return values_.data() + offset(head, pos); }

 private:
  size_t offset(int head, int pos) const {  // in bytes
    return (static_cast<size_t>(head) * capacity_ + pos) * head_dim_ * kv_element_bytes(format_);
  }
  int kv_heads_ = 0;
  int head_dim_ = 0;
  int capacity_ = 0;
  KvFormat format_ = KvFormat::bf16;
  std::vector<unsigned char> keys_, values_;
};

// q: m rows of heads * head_dim floats (row stride q_stride); row r attends
// causally to cache positions [0, positions[r]] (those must be stored
// already). Query head h reads kv head h / (heads / kv_heads); scores are
// scaled by 1/sqrt(head_dim). out: m rows of heads * head_dim floats (row
// stride out_stride). Requires heads % kv_heads == 0.
// rows_alone: every row's output is bit for bit what it would be if it were
// the only row (the batch-invariant path): a row gets the key-range split it
// would get alone, and rows whose split is one share row blocks, which leave
// a row's bits as they are (a block's extra key columns are masked to zero).
void attention(const float* q, int m, int q_stride, const int* positions, const KvCache& cache,
               int heads, float* out, int out_stride, ThreadPool& pool, bool rows_alone = false);

}  // namespace xft::engine
