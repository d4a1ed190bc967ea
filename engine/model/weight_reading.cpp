#include "engine/model/weight_reading.h"

namespace xft::engine {

LinearBlock HostMatrix::block() const {
  LinearBlock b;
  if (!int4.q.empty()) {
    b.int4 = &int4_view;
  } else if (!fp8.q.empty()) {
    b.fp8 = &fp8_view;
  } else if (!bf16.empty()) {
    b.weight_bf16 = bf16.data();
  } else {
    b.weight_f32 = f32.data();
  }
  b.bias = bias.empty() ? nullptr : bias.data();
  b.rows = rows;
  return b;
}

Slice slice_of(Range r) { return Slice{r.begin, r.end}; }

Expected<HostMatrix> read_matrix(const WeightSource& weights, const std::string& name, Slice rows, Slice cols) {
  auto meta = weights.meta(name);
  if (!meta) return meta.error();
  if (meta->shape.size() != 2) {
    return make_error("tensor " + name + ": expected a matrix, found " + std::to_string(meta->shape.size()) +
                      " dimensions");
  }
  HostMatrix m;
  const int64_t row_end = rows.end < 0 ? meta->shape[0] : rows.end;
  const int64_t col_end = cols.end < 0 ? meta->shape[1] : cols.end;
  m.rows = static_cast<int>(row_end - rows.begin);
  m.cols = static_cast<int>(col_end - cols.begin);
  if (meta->dtype == DType::bf16) {
    auto data = weights.read_bf16(name, rows, cols);
    if (!data) return data.error();
    m.bf16 = std::move(*data);
  } else {
    auto data = weights.read_f32(name, rows, cols);
    if (!data) return data.error();
    m.f32 = std::move(*data);
  }
  const size_t got = m.bf16.empty() ? m.f32.size() : m.bf16.size();
  if (got != static_cast<size_t>(m.rows) * m.cols) {
    return make_error("tensor " + name + ": read " + std::to_string(got) + " values, expected " +
                      std::to_string(static_cast<size_t>(m.rows) * m.cols));
  }
  return m;
}

Expected<HostMatrix> read_projection(const WeightSource& weights, const std::string& base, Range rows, Range cols,
                                     int full_rows, int full_cols) {
  const QuantConfig& quant = weights.config().quant;
  // An FP8 checkpoint's projection is FP8 exactly when it carries block
  // scales: the ones it left unconverted are plain bf16 matrices.
  const bool plain = quant.method == QuantMethod::none ||
                     (quant.method == QuantMethod::fp8 && !weights.has(base + ".weight_scale_inv"));
  if (plain) return read_matrix(weights, base + ".weight", slice_of(rows), slice_of(cols));
  if (quant.method == QuantMethod::fp8) {
    auto fp8 = read_fp8_projection(weights, quant, base, rows, cols, full_rows, full_cols);
    if (!fp8) return fp8.error();
    HostMatrix m;
    m.rows = rows.size();
    m.cols = cols.size();
    m.fp8 = std::move(*fp8);
    m.fp8_view = m.fp8.view();
    return m;
  }
  auto int4 = read_int4_projection(weights, quant, base, rows, cols, full_rows, full_cols);
  if (!int4) return int4.error();
  HostMatrix m;
  m.rows = rows.size();
  m.cols = cols.size();
  m.int4 = std::move(*int4);
  m.int4_view = m.int4.view();
  return m;
}

Expected<void> same_input_groups(const std::vector<const HostMatrix*>& blocks, const std::string& what) {
  for (const HostMatrix* m : blocks) {
    if (m->int4.group_of != blocks.front()->int4.group_of || m->int4.groups != blocks.front()->int4.groups) {
      return make_error(what + ": the fused projections' g_idx differ (they read one input, so they must list the "
                        "same group for each input row)");
    }
  }
  return {};
}

Expected<std::vector<float>> read_vector(const WeightSource& weights, const std::string& name, Slice range) {
  return weights.read_f32(name, range);
}

Expected<void> attach_bias(const WeightSource& weights, const std::string& name, Slice rows, HostMatrix& m) {
  auto bias = read_vector(weights, name, rows);
  if (!bias) return bias.error();
  if (bias->size() != static_cast<size_t>(m.rows)) {
    return make_error("tensor " + name + ": " + std::to_string(bias->size()) + " values, expected " +
                      std::to_string(m.rows));
  }
  m.bias = std::move(*bias);
  return {};
}

Expected<void> read_norm(const WeightSource& weights, const std::string& name, std::vector<float>& out) {
  auto v = read_vector(weights, name);
  if (!v) return v.error();
  out = std::move(*v);
  return {};
}

}  // namespace xft::engine
