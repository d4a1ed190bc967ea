#include "engine/model/blocks/dense_mlp.h"

#include "engine/kernels/ops.h"
#include "engine/model/weight_reading.h"

namespace xft::engine {

Expected<DenseMlp> DenseMlp::load(const WeightSource& weights, const std::string& gate_name,
                                  const std::string& up_name, const std::string& down_name, Range rows, int width,
                                  WeightFormat format) {
  const int hidden = weights.config().hidden;
  const Range all_inputs{0, hidden};
  auto gate = read_projection(weights, gate_name, rows, all_inputs, width, hidden);
  if (!gate) return gate.error();
  auto up = read_projection(weights, up_name, rows, all_inputs, width, hidden);
  if (!up) return up.error();
  if (format == WeightFormat::int4 && weights.config().quant.method != QuantMethod::none) {
    if (auto same = same_input_groups({&*gate, &*up}, gate_name + "/up_proj"); !same) return same.error();
  }
  DenseMlp mlp;
  mlp.rows_ = rows.size();
  mlp.gate_up_ = Linear({gate->block(), up->block()}, hidden, format);
  auto down = read_projection(weights, down_name, all_inputs, rows, hidden, width);
  if (!down) return down.error();
  mlp.down_ = Linear({down->block()}, down->cols, format);
  return mlp;
}

void DenseMlp::forward(const float* x, int m, float* out, FeedForwardPass& pass) const {
  pass.gate_up.resize(static_cast<size_t>(m) * 2 * rows_);
  pass.act.resize(static_cast<size_t>(m) * rows_);
  project(gate_up_, x, m, pass.gate_up.data(), *pass.pool, pass.rows_independent);
  pass.pool->parallel_rows(m, [&](int r0, int r1) {
    const size_t at = static_cast<size_t>(r0) * rows_;
    silu_mul_fused(pass.gate_up.data() + 2 * at, r1 - r0, rows_, pass.act.data() + at);
  });
  project(down_, pass.act.data(), m, out, *pass.pool, pass.rows_independent);
}

}  // namespace xft::engine
