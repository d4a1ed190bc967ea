// AVX512-BF16 int4 decode kernel. x was rounded to bf16 once (stage_x_int4).
// A nibble q becomes the bf16 of 128 + q by OR-ing it into 0x4300 (128.0:
// exponent 7, the 7 mantissa bits count units), one vpternlogd per 32
// weights, no table and no conversion; vdpbf16ps then sums (128 + q)·x over
// 32 slots, exactly the products of the bf16 inputs, in float. Per group the
// (128 + z) · Σ x share (Σ x of the same bf16 values, staged) comes off lane 0
// and the group's scale multiplies the rest. The packed row is read once,
// for all M inputs, as one sequential stream; every M sums an input in the
// same order (each input gets bit for bit its result alone).
// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))

namespace xft::engine {
namespace {

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

template <int M>
XFT_AVX512BF16 inline void row_stream(const PackedWeight& w, const uint16_t* x, const float* sums, float* y, int r) {
  const uint8_t* row = w.int4_row(r);
  const int full_units = w.group_len / 64;
  const bool half_unit = w.group_len % 64 != 0;
  __m512 acc[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    const uint16_t* xg = x + static_cast<size_t>(g) * w.group_len;
    __m512 d0[M], d1[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) d0[j] = d1[j] = _mm512_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      __m512i lo, hi;
      unpack_unit(bytes + 32 * u, lo, hi);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const uint16_t* xj = xg + static_cast<size_t>(j) * w.ld + 64 * u;
        d0[j] = dot(d0[j], lo, xj);
        d1[j] = dot(d1[j], hi, xj + 32);
      }
    }
    if (half_unit) {
      const __m512i wv = unpack_half_unit(bytes + 32 * full_units);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) d0[j] = dot(d0[j], wv, xg + static_cast<size_t>(j) * w.ld + 64 * full_units);
    }
    const size_t sg = int4_param_index(w, r, g);
    const __m512 scale = _mm512_set1_ps(_cvtsh_ss(w.group_scale[sg]));
    const float offset = 128.0f + static_cast<float>(w.group_zero[sg]);
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      __m512 d = _mm512_add_ps(d0[j], d1[j]);
      d = _mm512_mask_sub_ps(d, 1, d, _mm512_set1_ps(offset * sums[static_cast<size_t>(j) * w.groups + g]));
      acc[j] = _mm512_fmadd_ps(d, scale, acc[j]);
    }
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = _mm512_reduce_add_ps(acc[j]) + bias;
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const uint16_t* x = static_cast<const uint16_t*>(xs.x);
  for (int r = rb; r < re; ++r) row_stream<M>(w, x, xs.group_sums, y, r);
}

}  // namespace

void gemv_int4_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
