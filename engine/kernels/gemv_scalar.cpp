// Portable decode kernel: the reference the SIMD kernels are tested against
// in spirit (tests use plain double loops) and the path on CPUs without AVX2.
#include "engine/kernels/linear_internal.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

float weight_at(const PackedWeight& w, int r, int c) {
  switch (w.format) {
    case WeightFormat::f32: return w.row<float>(r)[c];
    case WeightFormat::bf16: return bf16_to_f32(w.row<uint16_t>(r)[c]);
    case WeightFormat::f16: return f16_to_f32(w.row<uint16_t>(r)[c]);
    case WeightFormat::int8: return static_cast<float>(w.row<int8_t>(r)[c]);
    case WeightFormat::int4: break;  // gemv_int4_scalar
    case WeightFormat::fp8: break;   // gemv_fp8_scalar
  }
  return 0.0f;
}

}  // namespace

void gemv_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  for (int r = row_begin; r < row_end; ++r) {
    float acc[kGemvMaxRows] = {};
    for (int c = 0; c < w.in; ++c) {
      const float wv = weight_at(w, r, c);
      for (int i = 0; i < m; ++i) acc[i] += wv * xf[static_cast<size_t>(i) * w.ld + c];
    }
    const float scale = w.scales.empty() ? 1.0f : w.scales[r];
    const float bias = w.bias.empty() ? 0.0f : w.bias[r];
    for (int i = 0; i < m; ++i) y[static_cast<size_t>(i) * w.out + r] = acc[i] * scale + bias;
  }
}

}  // namespace xft::engine
