// AVX512-BF16 array conversion: vcvtneps2bf16 rounds to nearest even like
// the scalar f32_to_bf16 (NaN stays NaN).
// GCC 12 reports its own _mm512_undefined operands as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <limits>

#include "engine/kernels/ops.h"
#include "engine/kernels/ops_simd.h"

#define XFT_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace xft::engine {

XFT_AVX512BF16 void f32_to_bf16_avx512(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)h);
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

__attribute__((target("avx512f,avx512bw"))) void int8_to_bf16_avx512(const int8_t* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(f), 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(static_cast<float>(in[i]));
}

#define XFT_AVX512F __attribute__((target("avx512f,avx512dq,fma")))

namespace {

// exp(x) = 2^n · e^r, n = round(x / ln2), |r| <= ln2/2, e^r by its degree-6
// Taylor polynomial (truncation < 1.2e-7 relative). Inputs are clamped to
// [-104, 88.7]: below, the result underflows to 0 (exp(-inf) = 0).
XFT_AVX512F inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

XFT_AVX512F inline __mmask16 first_n(int n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

}  // namespace

XFT_AVX512F float exp_shift_sum_avx512(float* x, int n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 mask = first_n(n - i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), s));
    _mm512_mask_storeu_ps(x + i, mask, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(mask, e));
  }
  return _mm512_reduce_add_ps(sum);
}

XFT_AVX512F void silu_mul_avx512(const float* gate, const float* up, float* out, int n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 mask = first_n(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(mask, gate + i);
    const __m512 sig = _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(out + i, mask, _mm512_mul_ps(_mm512_mul_ps(g, sig), _mm512_maskz_loadu_ps(mask, up + i)));
  }
}

XFT_AVX512F float max_avx512(const float* x, int n) {
  __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int i = 0; i < n; i += 16) {
    // max(x, best) returns best when x is NaN.
    best = _mm512_mask_max_ps(best, first_n(n - i), _mm512_maskz_loadu_ps(first_n(n - i), x + i), best);
  }
  return _mm512_reduce_max_ps(best);
}

XFT_AVX512F int argmax_avx512(const float* x, int n) {
  if (n <= 0) return -1;
  const float best = max_avx512(x, n);
  const __m512 b = _mm512_set1_ps(best);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(first_n(n - i), _mm512_maskz_loadu_ps(first_n(n - i), x + i), b, _CMP_EQ_OQ);
    if (hit) return i + __builtin_ctz(hit);
  }
  return 0;  // every value NaN
}

}  // namespace xft::engine
