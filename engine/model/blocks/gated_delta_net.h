// Qwen3.5's linear-attention token mixer (transformers' Qwen3_5GatedDeltaNet)
// on this rank's value heads:
//   q|k|v|z|b|a = x · Wᵀ              in_proj_qkv, in_proj_z, in_proj_b, in_proj_a rows of this rank
//   q|k|v = silu(causal depthwise conv1d(q|k|v))  over the sequence's last conv_kernel inputs
//   q, k = l2norm per key head; q /= sqrt(dk)
//   β = sigmoid(b); g = −exp(A_log)·softplus(a + dt_bias)
//   o = gated delta rule (engine/kernels/delta_rule.h), value head h reading key head h / (Hv/Hk)
//   o = rmsnorm(o per head)·w·silu(z)
//   out = o · W_outᵀ                  out_proj columns of this rank (the model adds the ranks' parts)
// Tensor parallelism splits the value heads; each rank keeps the key heads its
// value heads read (replicated when ranks outnumber key heads). A sequence's
// state on this rank is its conv inputs and one [dk][dv] matrix per value head:
// fixed in size, whatever the context length.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/partition.h"

namespace xft::engine {

// One sequence's state in one linear-attention layer on this rank.
struct LinearAttentionState {
  std::vector<float> conv;       // [conv_kernel - 1][channels]: the last inputs, oldest first
  std::vector<float> recurrent;  // [value heads][dk][dv]
  size_t bytes() const { return (conv.size() + recurrent.size()) * sizeof(float); }
  void reset();
};

// This rank's share: value heads [value_heads.begin, end) and the key heads they read.
struct LinearAttentionSlice {
  Range value_heads;
  Range key_heads;
};
LinearAttentionSlice linear_attention_slice(const ModelConfig& config, int tp_size, int tp_rank);

struct LinearAttentionPass {
  ThreadPool* pool = nullptr;
  bool rows_independent = false;  // projections through the batch-invariant kernels, and no chunked form
  int chunk_size = 64;            // tokens per chunk of the chunked delta rule
  std::vector<int> chunk_rows;                         // token rows of each chunk, in order
  std::vector<int> chunk_begin;                        // each chunk's first row (scratch)
  std::vector<LinearAttentionState*> chunk_states;     // this layer's state of each chunk's sequence
  std::vector<float> projected, mixed, core;           // scratch
  std::vector<float> projected_qkvz, projected_ba;     // scratch when b|a is a Linear of its own
};

class GatedDeltaNet {
 public:
  static Expected<GatedDeltaNet> load(const WeightSource& weights, const std::string& layer_prefix,
                                      const RankPartition& partition, WeightFormat format);

  // out[m][hidden] = this rank's part over x[m][hidden] (already normalized);
  // advances each chunk's state past its rows.
  void forward(const float* x, int m, float* out, LinearAttentionPass& pass) const;

  LinearAttentionState new_state() const;
  // Bytes of one sequence's state in this layer on this rank.
  size_t state_bytes() const;
  uint64_t weight_bytes() const;

 private:
  // One task's gathered per-token inputs of a value head, reused across layers.
  struct HeadScratch {
    std::vector<float> q, k, v, out, g, beta, chunk;
  };
  void project_inputs(const float* x, int m, LinearAttentionPass& pass) const;
  void convolve(const float* in, int n, int stride, int begin, int end, LinearAttentionState& state,
                float* out) const;
  Range readers_of(int key) const;
  void mix_key_head(int key, const float* projected, int n, LinearAttentionState& state, float* mixed, float* core,
                    bool recurrent, int chunk_size, HeadScratch& scratch) const;
  void gate_and_norm(const float* o, const float* z, float* out) const;

  int key_heads_ = 0, value_heads_ = 0;  // local
  int key_begin_ = 0, value_begin_ = 0;  // global ids of the first local key and value head
  int ratio_ = 1;                        // value heads per key head
  int dk_ = 0, dv_ = 0, kernel_ = 0;
  int channels_ = 0;        // local conv channels: q, k of the key heads, v of the value heads
  int projected_width_ = 0; // channels_ + z (value heads × dv) + b + a
  float eps_ = 1e-6f;
  Linear in_proj_, out_proj_;
  // b|a apart from q|k|v|z when the checkpoint stores them in another format
  // (FP8 ones keep in_proj_a/b in bf16); empty when in_proj_ holds all six.
  Linear in_proj_ba_;
  std::vector<float> conv_weight_;  // [channels][kernel] as read (emptied once transposed)
  std::vector<float> conv_taps_;    // [kernel][channels]
  std::vector<float> a_log_, dt_bias_, norm_;
};

}  // namespace xft::engine
