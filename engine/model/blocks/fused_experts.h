// Qwen3.5-MoE stores a layer's experts as two stacked tensors,
// mlp.experts.gate_up_proj [E, 2I, H] (each expert's gate rows, then its up
// rows) and mlp.experts.down_proj [E, H, I]. This view shows them under the
// per-expert names of Qwen2/Qwen3-MoE (experts.E.gate_proj.weight [I, H], ...),
// so the mixture-of-experts block loads and splits them as it does those.
#pragma once

#include <string>

#include "engine/checkpoint/weights.h"

namespace xft::engine {

class FusedExpertView final : public WeightSource {
 public:
  explicit FusedExpertView(const WeightSource& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  bool has(const std::string& name) const override;
  Expected<TensorMeta> meta(const std::string& name) const override;
  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows, Slice cols) const override;
  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows, Slice cols) const override;
  uint64_t bytes_read() const override { return inner_.bytes_read(); }

 private:
  // Where a per-expert name lies in the stacked tensors; false: not such a name.
  struct Location {
    std::string stacked;   // the stacked tensor's name
    int64_t first_row = 0; // the expert matrix's first row in the stacked rows
    int64_t rows = 0, cols = 0;
  };
  bool locate(const std::string& name, Location& where) const;
  Slice shifted(const Location& where, Slice rows) const;

  const WeightSource& inner_;
};

}  // namespace xft::engine
