// AVX2 int4 decode kernel on int8 activations (stage_x_int4 quantizes x per
// block, int4_x_block: t = round(x / sx), sx = max|x| / 127). vpmaddubsw
// multiplies the unsigned nibbles by the signed int8 x and adds pairs
// (|sum| <= 2 · 15 · 127, no saturation), so every dot product is exact in
// integers until it is scaled in float.
//  * groups of up to 128 slots (GPTQ/AWQ's 32, 64, 128): one x block per
//    group, its int16 pair sums added over the whole group (at most 4 per
//    lane), one vpmaddwd, one convert and one FMA by sx · s per group; the
//    zero points' share Σ s · z · Σx is taken off once per row.
//  * larger groups: per 64-slot unit as above, then per group
//    s · (Σ sx · dot - z · Σx).
// The packed row is read once, for all M inputs; every M sums an input in
// the same order (each input gets bit for bit its result alone).
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine {
namespace {

XFT_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

XFT_AVX2 inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Pair sums of a 64-slot unit (32 bytes) against 64 int8 x.
XFT_AVX2 inline __m256i unit_pairs(__m256i lo, __m256i hi, const int8_t* x) {
  return _mm256_add_epi16(_mm256_maddubs_epi16(lo, load32(x)), _mm256_maddubs_epi16(hi, load32(x + 32)));
}

// The 32 slots of a half unit (16 bytes) in order: low nibbles, then high ones.
XFT_AVX2 inline __m256i half_unit(const uint8_t* bytes) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i low4 = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4), _mm_and_si128(v, low4));
}

// Packed row r, or the last row for the lanes of a block past the end (their
// results are not stored).
inline const uint8_t* block_row(const PackedWeight& w, int r) { return w.int4_row(r < w.out ? r : w.out - 1); }

// Pair sums of one row's group against one input (int16 lanes, at most 4 pairs
// of 15 · 127 each), widened to int32 by vpmaddwd: the group's exact integer
// dot product, spread over 8 lanes.
template <int FULL, bool HALF>
XFT_AVX2 inline __m256i group_dot(const uint8_t* bytes, const __m256i* xv) {
  const __m256i low4 = _mm256_set1_epi8(15);
  __m256i pairs = _mm256_setzero_si256();
  #pragma GCC unroll 2
  for (int u = 0; u < FULL; ++u) {
    const __m256i v = load32(bytes + 32 * u);
    const __m256i lo = _mm256_and_si256(v, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    pairs = _mm256_add_epi16(pairs, _mm256_add_epi16(_mm256_maddubs_epi16(lo, xv[2 * u]), _mm256_maddubs_epi16(hi, xv[2 * u + 1])));
  }
  if (HALF) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(half_unit(bytes + 32 * FULL), xv[2 * FULL]));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Groups of up to 128 slots (GPTQ/AWQ's 32, 64, 128; FULL 64-slot units and
// HALF a 32-slot tail known at compile time), eight rows r0 .. r0 + 7 at once.
// First each row's groups in turn (the block is read in address order, one
// stream the hardware prefetcher follows) into its integer dots; then per
// group and input the eight rows' dots are summed across lanes (vphaddd) into
// one vector, lane i = row r0 + i, so the float work (one convert, one FMA by
// s · sx, one FMA for the zero points' s · z · Σx) is shared by eight rows,
// the eight rows' scales and zeros come in one load each (their blocked
// layout) and nothing is reduced per row at the end. Lane i's arithmetic
// depends on row r0 + i and the input alone: the same whatever m or the row
// range.
template <int M, int FULL, bool HALF>
XFT_AVX2 void block_small_groups(const PackedWeight& w, const int8_t* x, const float* x_scale, const float* sums,
                                 float* y, int r0, int rb, int re) {
  constexpr int kChunk = 96 / M;  // groups per pass: a pass's dots stay in L1 (24 KiB)
  constexpr int kXVectors = 2 * FULL + (HALF ? 1 : 0);
  const uint16_t* s16 = w.group_scale.data() + int4_param_index(w, r0, 0);
  const uint8_t* z8 = w.group_zero.data() + int4_param_index(w, r0, 0);
  const size_t group_bytes = static_cast<size_t>(w.group_len) / 2;
  __m256 acc[M], zero_share[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = zero_share[j] = _mm256_setzero_ps();
  __m256i dots[M][kChunk][kInt4RowBlock];
  for (int g0 = 0; g0 < w.groups; g0 += kChunk) {
    const int g1 = std::min(w.groups, g0 + kChunk);
    for (int i = 0; i < kInt4RowBlock; ++i) {
      const uint8_t* row = block_row(w, r0 + i);
      for (int g = g0; g < g1; ++g) {
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) {
          const int8_t* xg = x + static_cast<size_t>(j) * w.ld + static_cast<size_t>(g) * w.group_len;
          __m256i xv[kXVectors];
          #pragma GCC unroll 5
          for (int k = 0; k < kXVectors; ++k) xv[k] = load32(xg + 32 * k);
          dots[j][g - g0][i] = group_dot<FULL, HALF>(row + g * group_bytes, xv);
        }
      }
    }
    for (int g = g0; g < g1; ++g) {
      const __m256 scale = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16 + kInt4RowBlock * g)));
      const __m256 zero = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(z8 + kInt4RowBlock * g))));
      const __m256 scaled_zero = _mm256_mul_ps(scale, zero);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const __m256i* d = dots[j][g - g0];
        const __m256i d0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
        const __m256i d4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[4], d[5]), _mm256_hadd_epi32(d[6], d[7]));
        // d0123: rows 0-3's sums over the low 128-bit halves, then over the high ones.
        const __m256i dot = _mm256_add_epi32(_mm256_permute2x128_si256(d0123, d4567, 0x20),
                                             _mm256_permute2x128_si256(d0123, d4567, 0x31));
        // |dot| <= 128 · 15 · 127 < 2^24: the conversion is exact.
        const __m256 sx = _mm256_set1_ps(x_scale[static_cast<size_t>(j) * w.groups + g]);
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(scale, sx), acc[j]);
        zero_share[j] = _mm256_fmadd_ps(scaled_zero, _mm256_set1_ps(sums[static_cast<size_t>(j) * w.groups + g]), zero_share[j]);
      }
    }
  }
  const int first = std::max(rb, r0), last = std::min(re, r0 + kInt4RowBlock);
  alignas(32) float bias[kInt4RowBlock] = {};
  if (!w.bias.empty()) {
    for (int r = first; r < last; ++r) bias[r - r0] = w.bias[r];
  }
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) {
    alignas(32) float out[kInt4RowBlock];
    _mm256_store_ps(out, _mm256_add_ps(_mm256_sub_ps(acc[j], zero_share[j]), _mm256_load_ps(bias)));
    for (int r = first; r < last; ++r) y[static_cast<size_t>(j) * w.out + r] = out[r - r0];
  }
}

template <int M>
XFT_AVX2 void row_large_groups(const PackedWeight& w, const int8_t* x, const float* unit_scale, const float* sums,
                               float* y, int r) {
  const uint8_t* row = w.int4_row(r);
  const int full_units = w.group_len / 64;
  const bool half = w.group_len % 64 != 0;
  const int per_group = full_units + (half ? 1 : 0);
  const int units = w.groups * per_group;
  const __m256i low4 = _mm256_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = _mm256_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    const int8_t* xg = x + static_cast<size_t>(g) * w.group_len;
    const float* sx = unit_scale + g * per_group;
    __m256 d[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) d[j] = _mm256_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      const __m256i v = load32(bytes + 32 * u);
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(unit_pairs(lo, hi, xg + static_cast<size_t>(j) * w.ld + 64 * u), ones));
        d[j] = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(sx + static_cast<size_t>(j) * units + u), d[j]);
      }
    }
    if (half) {
      const __m256i wv = half_unit(bytes + 32 * full_units);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const __m256i p = _mm256_maddubs_epi16(wv, load32(xg + static_cast<size_t>(j) * w.ld + 64 * full_units));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        d[j] = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(sx + static_cast<size_t>(j) * units + full_units), d[j]);
      }
    }
    const size_t sg = int4_param_index(w, r, g);
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(w.group_scale[sg]));
    const float zero = w.group_zero[sg];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      // The zero point's share, z · Σ x, comes off lane 0 before scaling.
      const __m256 corr = _mm256_setr_ps(zero * sums[static_cast<size_t>(j) * w.groups + g], 0, 0, 0, 0, 0, 0, 0);
      acc[j] = _mm256_fmadd_ps(_mm256_sub_ps(d[j], corr), scale, acc[j]);
    }
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = hsum(acc[j]) + bias;
}

template <int M, int FULL, bool HALF>
XFT_AVX2 void small_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r0 = rb / kInt4RowBlock * kInt4RowBlock; r0 < re; r0 += kInt4RowBlock) {
    block_small_groups<M, FULL, HALF>(w, x, xs.unit_scale, xs.group_sums, y, r0, rb, re);
  }
}

template <int M>
XFT_AVX2 void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  switch (w.group_len) {
    case 32: small_rows<M, 0, true>(w, xs, y, rb, re); return;
    case 64: small_rows<M, 1, false>(w, xs, y, rb, re); return;
    case 96: small_rows<M, 1, true>(w, xs, y, rb, re); return;
    case 128: small_rows<M, 2, false>(w, xs, y, rb, re); return;
    default: break;
  }
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r = rb; r < re; ++r) row_large_groups<M>(w, x, xs.unit_scale, xs.group_sums, y, r);
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
