// Portable int4 decode kernel and the reference the SIMD ones are tested
// against: per group, Σ q·x in float, then s · (Σ q·x - z · Σ x), with the
// group sums staged once per input (stage_x_int4).
#include "engine/kernels/linear_internal.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/quant_int4.h"

namespace xft::engine {

void gemv_int4_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  const float* xf = static_cast<const float*>(xs.x);
  for (int r = row_begin; r < row_end; ++r) {
    float acc[kGemvMaxRows] = {};
    for (int g = 0; g < w.groups; ++g) {
      float dot[kGemvMaxRows] = {};
      const int s0 = g * w.group_len;
      for (int s = s0; s < s0 + w.group_len; ++s) {
        const float q = static_cast<float>(int4_nibble(w, r, s));
        for (int j = 0; j < m; ++j) dot[j] += q * xf[static_cast<size_t>(j) * w.ld + s];
      }
      const size_t sg = int4_param_index(w, r, g);
      const float scale = f16_to_f32(w.group_scale[sg]);
      const float zero = w.group_zero[sg];
      for (int j = 0; j < m; ++j) {
        acc[j] += scale * (dot[j] - zero * xs.group_sums[static_cast<size_t>(j) * w.groups + g]);
      }
    }
    const float bias = w.bias.empty() ? 0.0f : w.bias[r];
    for (int j = 0; j < m; ++j) y[static_cast<size_t>(j) * w.out + r] = acc[j] + bias;
  }
}

}  // namespace xft::engine
