// The sparse feed-forward of Qwen2-MoE and Qwen3-MoE, as transformers'
// Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock compute it:
//   p      = softmax(x · Wgateᵀ) in fp32 over all experts   (router mlp.gate)
//   top-k  experts by p, ties to the lower expert index
//   w      = p of the chosen, divided by their sum when norm_topk_prob
//   y      = Σ_chosen w_e · expert_e(x)                    (SwiGLU, moe_intermediate_size)
//   Qwen2-MoE: y += sigmoid(x · Wsgᵀ) · shared_expert(x)    (mlp.shared_expert_gate)
// Rows of a pass that chose the same expert share one pass over its weights.
// A row's experts are summed in ascending expert index whatever else shares
// the pass, and the router runs through the batch-invariant kernel, so with
// rows_independent a row's result does not depend on its neighbours.
// Tensor parallelism: each expert holds this rank's rows (partition.expert),
// the router and shared-expert gate are whole on every rank (every rank picks
// the same experts), and the partial sums meet in the layer's one allreduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/linear.h"
#include "engine/model/blocks/dense_mlp.h"
#include "engine/model/blocks/feed_forward.h"
#include "engine/model/partition.h"

namespace xft::engine {

// For each of m rows of router logits [m][experts]: the top_k experts by
// softmax probability (fp32), highest first, ties to the lower index, into
// chosen[m][top_k]; their probabilities into weights[m][top_k], divided by
// their sum when normalize.
void route_tokens(const float* logits, int m, int experts, int top_k, bool normalize, int32_t* chosen,
                  float* weights);

class MixtureOfExperts final : public FeedForward {
 public:
  MixtureOfExperts() = default;
  // prefix: "model.layers.<i>.mlp."
  static Expected<MixtureOfExperts> load(const WeightSource& weights, const std::string& prefix,
                                         const RankPartition& partition, WeightFormat format);

  void forward(const float* x, int m, float* out, FeedForwardPass& pass) const override;
  uint64_t weight_bytes() const override;
  uint64_t token_bytes() const override;
  std::string kernel_name() const override { return experts_.front().kernel_name(); }

 private:
  // The chosen experts (grouped by pass.expert_starts/expert_rows) and the
  // shared expert on x: each choice's expert output into pass.rows_out in
  // expert_rows' order, the shared expert's into pass.shared_out and its
  // gate logit into pass.shared_gate.
  void run_experts(const float* x, int m, FeedForwardPass& pass) const;

  Linear router_;       // f32 [experts][hidden], whole on every rank
  // The packed weights of all experts, expert after expert: one allocation
  // on huge pages. Each expert alone is a few MB (int4: under 2 MiB), which
  // on its own would lie partly or wholly on 4 KiB pages, and a decode step
  // jumps between 8 of them: bench_moe measured the experts' stream 20 %
  // faster from one arena (int8, 2 threads, Zen 4 EPYC at 64 GB/s).
  AlignedBuffer expert_data_;
  std::vector<DenseMlp> experts_;
  bool has_shared_ = false;
  DenseMlp shared_;     // Qwen2-MoE's shared expert
  Linear shared_gate_;  // f32 [1][hidden], whole on every rank
  int top_k_ = 0;
  bool normalize_ = false;
  int hidden_ = 0;
};

}  // namespace xft::engine
