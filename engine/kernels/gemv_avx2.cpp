// AVX2 + FMA + F16C decode kernels for every weight format (x stays float).
// R rows x M inputs of 8-wide accumulators; rows are padded to 64 elements so
// the inner loop has no tail. Each output has one accumulator over the whole
// row whatever R and M are, so an input's result does not depend on what
// shares the call; gemm_avx2.cpp keeps that order for larger batches.
#include "engine/kernels/gemm_avx2_dot.h"

namespace xft::engine {
namespace {

using avx2_dot::finish;
using avx2_dot::load_w8;

template <WeightFormat F, int R, int M>
XFT_AVX2 void rows_kernel(const PackedWeight& w, const float* x, float* y, int r0) {
  __m256 acc[R][M];
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int c = 0; c < w.ld; c += 8) {
    __m256 xv[M];
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) xv[j] = _mm256_loadu_ps(x + static_cast<size_t>(j) * w.ld + c);
    #pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256 wv = load_w8<F>(w, r0 + i, c);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r0 + i] = finish(w, r0 + i, acc[i][j]);
  }
}

template <WeightFormat F, int M>
XFT_AVX2 void run_rows(const PackedWeight& w, const float* x, float* y, int row_begin, int row_end) {
  constexpr int R = M <= 2 ? 4 : 2;
  int r = row_begin;
  for (; r + R <= row_end; r += R) rows_kernel<F, R, M>(w, x, y, r);
  for (; r < row_end; ++r) rows_kernel<F, 1, M>(w, x, y, r);
}

template <WeightFormat F>
XFT_AVX2 void dispatch_m(const PackedWeight& w, const float* x, int m, float* y, int rb, int re) {
  switch (m) {
    case 1: run_rows<F, 1>(w, x, y, rb, re); break;
    case 2: run_rows<F, 2>(w, x, y, rb, re); break;
    case 3: run_rows<F, 3>(w, x, y, rb, re); break;
    default: run_rows<F, 4>(w, x, y, rb, re); break;
  }
}

}  // namespace

void gemv_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  switch (w.format) {
    case WeightFormat::f32: dispatch_m<WeightFormat::f32>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::bf16: dispatch_m<WeightFormat::bf16>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::f16: dispatch_m<WeightFormat::f16>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::int8: dispatch_m<WeightFormat::int8>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::int4: break;  // gemv_int4_avx2
    case WeightFormat::fp8: break;   // gemv_fp8_avx2
  }
}

}  // namespace xft::engine
