// AVX-512 fp8 decode: the AVX2 kernel's bit manipulation 16 wide (see
// gemv_fp8_avx2.cpp), four accumulators per input within a column block
// (blocks are multiples of 64 inputs), the block's sum times its scale into
// the input's total: the same order for every M.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/fp8.h"

#define XFT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace xft::engine {
namespace {

// Sixteen e4m3 bytes as float times 2^-120 (see e4m3x8 in gemv_fp8_avx2.cpp).
XFT_AVX512 inline __m512 e4m3x16(const uint8_t* q) {
  const __m512i v = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_slli_epi32(v, 20), _mm512_set1_epi32(static_cast<int>(0x87F00000u))));
}

template <int M>
XFT_AVX512 void row_kernel(const PackedWeight& w, const float* x, float* y, int r) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* scale = fp8_row_scales(w, r);
  __m512 total[M];
  for (int j = 0; j < M; ++j) total[j] = _mm512_setzero_ps();
  for (int b = 0; b < w.fp8_col_blocks; ++b) {
    const int begin = b * w.fp8_block_cols;
    const int end = begin + w.fp8_block_cols < w.ld ? begin + w.fp8_block_cols : w.ld;
    __m512 a[4][M];
    for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = a[2][j] = a[3][j] = _mm512_setzero_ps();
    for (int c = begin; c < end; c += 64) {
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512 wv = e4m3x16(q + c + 16 * k);
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) {
          a[k][j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + static_cast<size_t>(j) * w.ld + c + 16 * k), a[k][j]);
        }
      }
    }
    const __m512 s = _mm512_set1_ps(scale[b] * kFp8SimdScaleBack);
    for (int j = 0; j < M; ++j) {
      const __m512 block = _mm512_add_ps(_mm512_add_ps(a[0][j], a[1][j]), _mm512_add_ps(a[2][j], a[3][j]));
      total[j] = _mm512_fmadd_ps(block, s, total[j]);
    }
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = _mm512_reduce_add_ps(total[j]) + bias;
}

template <int M>
XFT_AVX512 void run_rows(const PackedWeight& w, const float* x, float* y, int rb, int re) {
  for (int r = rb; r < re; ++r) row_kernel<M>(w, x, y, r);
}

}  // namespace

void gemv_fp8_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xf, y, row_begin, row_end); break;
    case 2: run_rows<2>(w, xf, y, row_begin, row_end); break;
    case 3: run_rows<3>(w, xf, y, row_begin, row_end); break;
    default: run_rows<4>(w, xf, y, row_begin, row_end); break;
  }
}

}  // namespace xft::engine
