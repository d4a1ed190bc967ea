// What the AVX512-BF16 int4 decode kernel (gemv_int4_avx512.cpp) and its
// batch-invariant GEMM (gemm_int4_avx512.cpp) share so that both give an input
// bit for bit the same result: the nibble unpacking, the per-group sums (two
// float accumulators d0, d1: a 64-slot unit's low half into d0, its high half
// into d1, units in order, a last half unit into d0) and the group's step into
// the output's accumulator, then the final reduction. Included only by those
// two files.
#pragma once

// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))

namespace xft::engine::int4_avx512_dot {

constexpr int kOrMask = 0xEA;  // vpternlogd: (a & b) | c

// 32 bytes -> slots 0..31 (low nibbles) and 32..63 (high nibbles) as bf16 of 128 + q.
XFT_AVX512BF16 inline void unpack_unit(const uint8_t* bytes, __m512i& lo, __m512i& hi) {
  const __m512i words = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  const __m512i bias = _mm512_set1_epi16(0x4300);
  lo = _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(15), bias, kOrMask);
  hi = _mm512_or_si512(_mm512_srli_epi16(words, 4), bias);
}

// 16 bytes -> slots 0..15 (low nibbles) then 16..31 (high nibbles).
XFT_AVX512BF16 inline __m512i unpack_half_unit(const uint8_t* bytes) {
  const __m256i words = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m256i lo = _mm256_and_si256(words, _mm256_set1_epi16(15));
  const __m256i hi = _mm256_srli_epi16(words, 4);
  return _mm512_or_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi16(0x4300));
}

XFT_AVX512BF16 inline __m512 dot(__m512 acc, __m512i w, const uint16_t* x) {
  return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)_mm512_loadu_si512(x));
}

// Group g of row r, summed into d0 and d1 for an input whose staged group sum
// is `sum`: the (128 + z) · Σ x share comes off lane 0, the group's scale
// multiplies the rest into acc.
struct GroupParams {
  __m512 scale;
  float offset;
};
XFT_AVX512BF16 inline GroupParams group_params(const PackedWeight& w, int r, int g) {
  const size_t sg = int4_param_index(w, r, g);
  return {_mm512_set1_ps(_cvtsh_ss(w.group_scale[sg])), 128.0f + static_cast<float>(w.group_zero[sg])};
}
XFT_AVX512BF16 inline __m512 add_group(__m512 acc, __m512 d0, __m512 d1, const GroupParams& p, float sum) {
  __m512 d = _mm512_add_ps(d0, d1);
  d = _mm512_mask_sub_ps(d, 1, d, _mm512_set1_ps(p.offset * sum));
  return _mm512_fmadd_ps(d, p.scale, acc);
}

XFT_AVX512BF16 inline float finish(const PackedWeight& w, int r, __m512 acc) {
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  return _mm512_reduce_add_ps(acc) + bias;
}

}  // namespace xft::engine::int4_avx512_dot
