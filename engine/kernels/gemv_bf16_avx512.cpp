// AVX512-BF16 decode kernel: x was rounded to bf16 once (stage_x), each
// vdpbf16ps multiplies 32 bf16 pairs and accumulates pairs into 16 float
// lanes. R rows x M inputs of accumulators; the weight is read exactly once.
// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace xft::engine {
namespace {

template <int R, int M>
XFT_AVX512BF16 inline void rows_kernel(const PackedWeight& w, const uint16_t* x, float* y, int r0) {
  __m512 acc[R][M];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int c = 0; c < w.ld; c += 32) {
    __m512bh xv[M];
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) {
      xv[j] = (__m512bh)_mm512_loadu_si512(x + static_cast<size_t>(j) * w.ld + c);
    }
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w.row<uint16_t>(r0 + i) + c);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    const int r = r0 + i;
    const float bias = w.bias.empty() ? 0.0f : w.bias[r];
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = _mm512_reduce_add_ps(acc[i][j]) + bias;
  }
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
  constexpr int R = 4;
  int r = rb;
  for (; r + R <= re; r += R) rows_kernel<R, M>(w, x, y, r);
  for (; r < re; ++r) rows_kernel<1, M>(w, x, y, r);
}

}  // namespace

void gemv_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xb, y, rb, re); break;
    case 2: run_rows<2>(w, xb, y, rb, re); break;
    case 3: run_rows<3>(w, xb, y, rb, re); break;
    default: run_rows<4>(w, xb, y, rb, re); break;
  }
}

}  // namespace xft::engine
