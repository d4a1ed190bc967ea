// The feed-forward half of a decoder layer: a dense SwiGLU MLP or a mixture
// of experts, chosen per layer by the architecture table
// (engine/model/architectures.h). Each computes this rank's partial sum of
// the block's output; the model adds the ranks' parts in one allreduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"

namespace xft::engine {

// What one forward pass lends a feed-forward block: threads, the kernel
// family, scratch reused across layers, and where to add profile time.
struct FeedForwardPass {
  ThreadPool* pool = nullptr;
  bool rows_independent = false;  // every row through the batch-invariant kernels
  double* router_ms = nullptr;    // while profiling: routing time (MoE layers)
  double* experts_ms = nullptr;   // while profiling: expert time (MoE layers)
  // Scratch, grown on demand.
  std::vector<float> gate_up, act, router_logits, rows_in, rows_out, shared_out, shared_gate, shared_gate_up,
      shared_act;
  std::vector<GroupedProjection> projections;  // the MoE's grouped kernel calls
  std::vector<int32_t> chosen_experts;  // [m][top_k]
  std::vector<float> chosen_weights;    // [m][top_k]
  std::vector<int32_t> expert_starts;   // [experts + 1]: where each expert's rows begin in expert_rows
  std::vector<int32_t> expert_rows;     // row * top_k + slot, grouped by expert, rows ascending
  std::vector<int32_t> expert_next;     // [experts]: the counting sort's next slot per expert
  std::vector<int32_t> choice_position;  // [m][top_k]: where each choice sits in expert_rows
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  // out[m][hidden] = this rank's part of the block applied to x[m][hidden].
  virtual void forward(const float* x, int m, float* out, FeedForwardPass& pass) const = 0;
  // Bytes of packed weights this rank holds.
  virtual uint64_t weight_bytes() const = 0;
  // Bytes one token's decode step reads (the chosen experts only, on average).
  virtual uint64_t token_bytes() const = 0;
  virtual std::string kernel_name() const = 0;
};

}  // namespace xft::engine
