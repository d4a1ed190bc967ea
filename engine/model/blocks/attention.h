// The token mixer of every Qwen layer so far: grouped-query attention with
// rotary positions over a per-sequence KV cache, on this rank's heads.
//   q|k|v = x · Wqkvᵀ + b        fused rows of this rank's heads
//   q, k = rmsnorm per head       Qwen3 / Qwen3-MoE (q_norm, k_norm)
//   q, k = rope(q, k, position)   rotate-half
//   a = attention(q, KV cache)    causal, GQA
//   a *= sigmoid(gate)            Qwen3.5: q_proj holds each head's query then
//                                 its output gate (stored after v in the row)
//   out = a · Woᵀ                 o_proj columns of this rank's heads (the
//                                 model adds the ranks' parts in an allreduce)
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/partition.h"

namespace xft::engine {

// The query heads that read one cache: local heads [q_begin, q_begin + q_count).
struct KvHeadGroup {
  int q_begin = 0;
  int q_count = 0;
  int kv_begin = 0;  // first local kv head stored in `cache`
  int kv_count = 0;
  KvCache cache;
};

// This rank's head layout, fixed at load.
struct AttentionShape {
  int local_heads = 0;
  int local_kv_heads = 0;
  int head_dim = 0;
  int qkv_width = 0;  // (local_heads + 2 * local_kv_heads) * head_dim, + local_heads * head_dim of output gates
};

// What one layer's attention needs from the forward pass: the token rows'
// positions, each chunk's length and this layer's caches, and scratch.
struct AttentionPass {
  ThreadPool* pool = nullptr;
  bool rows_independent = false;  // projections through the batch-invariant kernels
  bool batch_invariant = false;   // attention one row at a time
  const RopeTable* rope = nullptr;
  const int* positions = nullptr;                    // [m]
  std::vector<int> chunk_rows;                       // token rows of each chunk, in order
  std::vector<std::vector<KvHeadGroup>*> chunk_caches;  // this layer's caches of each chunk's sequence
  std::vector<float> qkv, attn;                      // scratch
};

class Attention {
 public:
  Attention() = default;
  // Qwen2/Qwen3 names (q_proj, k_proj, v_proj, o_proj under "<layer>self_attn.").
  static Expected<Attention> load_split(const WeightSource& weights, const std::string& layer_prefix,
                                        const RankPartition& partition, WeightFormat format);
  // Qwen3.5 (q_proj twice as wide: each head's query, then its output gate).
  static Expected<Attention> load_gated(const WeightSource& weights, const std::string& layer_prefix,
                                        const RankPartition& partition, WeightFormat format);
  // Qwen1 names (attn.c_attn stacking q, k, v; attn.c_proj).
  static Expected<Attention> load_fused(const WeightSource& weights, const std::string& layer_prefix,
                                        const RankPartition& partition, WeightFormat format);

  // out[m][hidden] = this rank's part of attention over x[m][hidden] (already
  // normalized); stores the rows' keys and values in the pass's caches.
  void forward(const float* x, int m, float* out, const AttentionShape& shape, float eps, AttentionPass& pass) const;

  uint64_t weight_bytes() const;
  std::string kernel_name() const { return qkv_.kernel_name(); }

 private:
  void attend(const AttentionShape& shape, AttentionPass& pass) const;

  std::vector<float> q_norm_, k_norm_;  // empty: no per-head norms
  bool output_gate_ = false;
  Linear qkv_, o_proj_;
};

}  // namespace xft::engine
