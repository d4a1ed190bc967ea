// AVX2 + FMA + F16C decode kernels for every weight format (x stays float).
// R rows x M inputs of 8-wide accumulators; rows are padded to 64 elements so
// the inner loop has no tail.
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine {
namespace {

template <WeightFormat F>
XFT_AVX2 inline __m256 load_w8(const PackedWeight& w, int r, int c) {
  if constexpr (F == WeightFormat::f32) {
    return _mm256_loadu_ps(w.row<float>(r) + c);
  } else if constexpr (F == WeightFormat::bf16) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.row<uint16_t>(r) + c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  } else if constexpr (F == WeightFormat::f16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.row<uint16_t>(r) + c)));
  } else {
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.row<int8_t>(r) + c));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw));
  }
}

XFT_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

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
    const int r = r0 + i;
    const float scale = w.scales.empty() ? 1.0f : w.scales[r];
    const float bias = w.bias.empty() ? 0.0f : w.bias[r];
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = hsum(acc[i][j]) * scale + bias;
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
  }
}

}  // namespace xft::engine
