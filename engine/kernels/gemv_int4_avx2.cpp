// AVX2 + FMA int4 decode kernel: nibbles widened to int32 and converted to
// float in registers, FMA with float x, per group s · (Σ q·x - z · Σ x).
// The packed row is read once, for all M inputs; every M sums an input in
// the same order (each input gets bit for bit its result alone).
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

// 8 bytes -> the 8 slots of their low nibbles (lo) and of their high ones (hi).
XFT_AVX2 inline void unpack8(const uint8_t* bytes, __m256& lo, __m256& hi) {
  const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
  lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(15)));
  hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
}

template <int M>
XFT_AVX2 void row_kernel(const PackedWeight& w, const float* x, const float* sums, float* y, int r) {
  const uint8_t* row = w.int4_row(r);
  const int full_units = w.group_len / 64;
  const bool half_unit = w.group_len % 64 != 0;
  __m256 acc[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    const size_t s0 = static_cast<size_t>(g) * w.group_len;
    __m256 d0[M], d1[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) d0[j] = d1[j] = _mm256_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        __m256 lo, hi;
        unpack8(bytes + 32 * u + 8 * k, lo, hi);
        const size_t s = s0 + 64 * u + 8 * k;
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) {
          d0[j] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + static_cast<size_t>(j) * w.ld + s), d0[j]);
          d1[j] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + static_cast<size_t>(j) * w.ld + s + 32), d1[j]);
        }
      }
    }
    if (half_unit) {
      #pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {
        __m256 lo, hi;
        unpack8(bytes + 32 * full_units + 8 * k, lo, hi);
        const size_t s = s0 + 64 * full_units + 8 * k;
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) {
          d0[j] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + static_cast<size_t>(j) * w.ld + s), d0[j]);
          d1[j] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + static_cast<size_t>(j) * w.ld + s + 16), d1[j]);
        }
      }
    }
    const size_t sg = static_cast<size_t>(r) * w.groups + g;
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(w.group_scale[sg]));
    const float zero = w.group_zero[sg];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      // The zero point's share, z · Σ x, comes off lane 0 before scaling.
      const __m256 corr = _mm256_setr_ps(zero * sums[static_cast<size_t>(j) * w.groups + g], 0, 0, 0, 0, 0, 0, 0);
      acc[j] = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_add_ps(d0[j], d1[j]), corr), scale, acc[j]);
    }
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = hsum(acc[j]) + bias;
}

template <int M>
XFT_AVX2 void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const float* x = static_cast<const float*>(xs.x);
  for (int r = rb; r < re; ++r) row_kernel<M>(w, x, xs.group_sums, y, r);
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
