// Portable fp8 decode kernel (e4m3 through the 256-entry table, x staged
// times kFp8XScale): the path on CPUs without AVX2 and the plain form of what
// the SIMD kernels compute.
#include "engine/kernels/fp8.h"

namespace xft::engine {

void gemv_fp8_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  const float* table = e4m3_table();
  for (int r = row_begin; r < row_end; ++r) {
    const uint8_t* q = w.row<uint8_t>(r);
    const float* scale = fp8_row_scales(w, r);
    const float bias = w.bias.empty() ? 0.0f : w.bias[r];
    for (int i = 0; i < m; ++i) {
      const float* xi = xf + static_cast<size_t>(i) * w.ld;
      float total = 0.0f;
      for (int b = 0; b < w.fp8_col_blocks; ++b) {
        const int begin = b * w.fp8_block_cols;
        const int end = begin + w.fp8_block_cols < w.ld ? begin + w.fp8_block_cols : w.ld;
        float block = 0.0f;
        for (int c = begin; c < end; ++c) block += table[q[c]] * xi[c];
        total += block * (scale[b] * kFp8TableScaleBack);
      }
      y[static_cast<size_t>(i) * w.out + r] = total + bias;
    }
  }
}

}  // namespace xft::engine
