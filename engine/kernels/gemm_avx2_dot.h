// What the AVX2 decode kernel (gemv_avx2.cpp) and the AVX2 batch-invariant
// GEMM (gemm_avx2.cpp) share so that both give an input bit for bit the same
// result: the weight load (exact widening to float), the summation order (one
// 8-lane accumulator per output over K in steps of 8, from 0 to ld) and the
// final reduction, scale and bias. Included only by those two files.
#pragma once

#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine::avx2_dot {

// Eight weights of row r from column c, widened to float (exact for every format).
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

// Output r of an input from its accumulator: the lanes summed, then the int8
// row scale and the bias (the build has no FP contraction: -std=c++20).
XFT_AVX2 inline float finish(const PackedWeight& w, int r, __m256 acc) {
  const float scale = w.scales.empty() ? 1.0f : w.scales[r];
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  return hsum(acc) * scale + bias;
}

}  // namespace xft::engine::avx2_dot
