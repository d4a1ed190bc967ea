// SwiGLU MLP: down(silu(gate(x)) * up(x)), this rank's rows of gate/up and
// the matching columns of down_proj. Qwen's dense layers, and the shared
// expert and each routed expert of the mixture-of-experts layers.
#pragma once

#include <string>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/linear.h"
#include "engine/model/blocks/feed_forward.h"
#include "engine/model/partition.h"

namespace xft::engine {

class DenseMlp final : public FeedForward {
 public:
  DenseMlp() = default;
  // gate/up/down: the projections' base names ("model.layers.0.mlp.gate_proj");
  // rows: this rank's share of the `width` intermediate rows.
  static Expected<DenseMlp> load(const WeightSource& weights, const std::string& gate, const std::string& up,
                                 const std::string& down, Range rows, int width, WeightFormat format);

  void forward(const float* x, int m, float* out, FeedForwardPass& pass) const override;
  uint64_t weight_bytes() const override { return gate_up_.weight_bytes() + down_.weight_bytes(); }
  uint64_t token_bytes() const override { return weight_bytes(); }
  std::string kernel_name() const override { return gate_up_.kernel_name(); }
  int rows() const { return rows_; }
  // gate/up fused ([2 * rows][hidden], gate rows first) and down: the mixture
  // of experts runs its chosen experts' projections together.
  const Linear& gate_up() const { return gate_up_; }
  const Linear& down() const { return down_; }
  // Bytes of both projections' packed blocks, and moving them into an arena
  // (gate/up first): Linear::data_bytes, Linear::move_data_into.
  size_t data_bytes() const { return gate_up_.data_bytes() + down_.data_bytes(); }
  void move_data_into(unsigned char* into) {
    const size_t gate_up_bytes = gate_up_.data_bytes();
    gate_up_.move_data_into(into);
    down_.move_data_into(into + gate_up_bytes);
  }

 private:
  Linear gate_up_, down_;
  int rows_ = 0;
};

}  // namespace xft::engine
