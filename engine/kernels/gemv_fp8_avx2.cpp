// AVX2 fp8 decode: e4m3 widened to float in registers by bit manipulation
// (no table, no gather, no multiply), x float staged times kFp8XScale. One weight row at a time for all M inputs,
// two 8-wide accumulators per input within a column block, the block's sum
// times its scale into the input's total: the same order for every M.
#include <immintrin.h>

#include "engine/kernels/fp8.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine {
namespace {

// Eight e4m3 bytes as float times 2^-120: the byte sign-extended to 32 bits
// and shifted left by 20 puts its sign at bit 31 and its exponent and
// mantissa at bits 23..26 and 20..22 (e4m3 subnormals land on f32
// subnormals, exactly; real weights almost never hold one). The 2^120 comes
// back with the block scale (fp8.h). 0x7F/0xFF (NaN in e4m3) read as ±480:
// checkpoints hold none.
XFT_AVX2 inline __m256 e4m3x8(const uint8_t* q) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
  return _mm256_castsi256_ps(
      _mm256_and_si256(_mm256_slli_epi32(v, 20), _mm256_set1_epi32(static_cast<int>(0x87F00000u))));
}

XFT_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int M>
XFT_AVX2 void row_kernel(const PackedWeight& w, const float* x, float* y, int r) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* scale = fp8_row_scales(w, r);
  __m256 total[M];
  for (int j = 0; j < M; ++j) total[j] = _mm256_setzero_ps();
  for (int b = 0; b < w.fp8_col_blocks; ++b) {
    const int begin = b * w.fp8_block_cols;
    const int end = begin + w.fp8_block_cols < w.ld ? begin + w.fp8_block_cols : w.ld;
    __m256 a0[M], a1[M];
    for (int j = 0; j < M; ++j) a0[j] = a1[j] = _mm256_setzero_ps();
    for (int c = begin; c < end; c += 16) {
      const __m256 w0 = e4m3x8(q + c), w1 = e4m3x8(q + c + 8);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const float* xj = x + static_cast<size_t>(j) * w.ld + c;
        a0[j] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xj), a0[j]);
        a1[j] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xj + 8), a1[j]);
      }
    }
    const __m256 s = _mm256_set1_ps(scale[b] * kFp8SimdScaleBack);
    for (int j = 0; j < M; ++j) total[j] = _mm256_fmadd_ps(_mm256_add_ps(a0[j], a1[j]), s, total[j]);
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = hsum(total[j]) + bias;
}

template <int M>
XFT_AVX2 void run_rows(const PackedWeight& w, const float* x, float* y, int rb, int re) {
  for (int r = rb; r < re; ++r) row_kernel<M>(w, x, y, r);
}

}  // namespace

void gemv_fp8_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xf, y, row_begin, row_end); break;
    case 2: run_rows<2>(w, xf, y, row_begin, row_end); break;
    case 3: run_rows<3>(w, xf, y, row_begin, row_end); break;
    default: run_rows<4>(w, xf, y, row_begin, row_end); break;
  }
}

}  // namespace xft::engine
