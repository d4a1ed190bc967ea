// AVX2 int4 decode kernel on int8 activations (stage_x_int4 quantizes x per
// unit of 64 slots, 32 for a half unit: t = round(x / sx), sx = max|x| / 127).
// vpmaddubsw multiplies the unsigned nibbles by the signed int8 x and adds
// pairs (|sum| <= 2 · 15 · 127, no saturation), the low and high nibbles'
// halves of a unit add in int16, vpmaddwd widens to int32: the unit's dot
// product is exact, then scaled by sx in float. Per group, z · Σ x (Σ of the
// same quantized x) comes off lane 0 and the group's scale multiplies the
// rest. Per 64 weights and input: 2 multiply-adds, one widening, one
// convert, one FMA (a float path needs 8 converts and 8 FMAs). The packed
// row is read once, for all M inputs; every M sums an input in the same
// order (each input gets bit for bit its result alone).
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine {
namespace {

XFT_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int M>
XFT_AVX2 void row_kernel(const PackedWeight& w, const int8_t* x, const float* unit_scale, const float* sums,
                         float* y, int r) {
  const uint8_t* row = w.int4_row(r);
  const int full_units = w.group_len / 64;
  const bool half_unit = w.group_len % 64 != 0;
  const int per_group = full_units + (half_unit ? 1 : 0);
  const int units = w.groups * per_group;
  const __m256i low4 = _mm256_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    const int8_t* xg = x + static_cast<size_t>(g) * w.group_len;
    const float* sg_units = unit_scale + g * per_group;
    __m256 d[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) d[j] = _mm256_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 32 * u));
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const int8_t* xj = xg + static_cast<size_t>(j) * w.ld + 64 * u;
        const __m256i p = _mm256_add_epi16(
            _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xj))),
            _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xj + 32))));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        d[j] = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(sg_units + static_cast<size_t>(j) * units + u), d[j]);
      }
    }
    if (half_unit) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 32 * full_units));
      const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(15));
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
      const __m256i wv = _mm256_set_m128i(hi, lo);  // slots 0..15, then 16..31
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const int8_t* xj = xg + static_cast<size_t>(j) * w.ld + 64 * full_units;
        const __m256i p = _mm256_maddubs_epi16(wv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xj)));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        d[j] = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(sg_units + static_cast<size_t>(j) * units + full_units), d[j]);
      }
    }
    const size_t sg = static_cast<size_t>(r) * w.groups + g;
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(w.group_scale[sg]));
    const float zero = w.group_zero[sg];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      const __m256 corr = _mm256_setr_ps(zero * sums[static_cast<size_t>(j) * w.groups + g], 0, 0, 0, 0, 0, 0, 0);
      acc[j] = _mm256_fmadd_ps(_mm256_sub_ps(d[j], corr), scale, acc[j]);
    }
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = hsum(acc[j]) + bias;
}

template <int M>
XFT_AVX2 void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r = rb; r < re; ++r) row_kernel<M>(w, x, xs.unit_scale, xs.group_sums, y, r);
}

}  // namespace

void gemv_int4_avx2(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
