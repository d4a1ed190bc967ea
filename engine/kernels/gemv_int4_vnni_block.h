// The steps of the AVX512-VNNI int4 decode kernel (gemv_int4_vnni.cpp) for
// it and its batch-invariant GEMM (gemm_int4_vnni.cpp): a tile of 16 weight
// rows (the interleaved layout of quant_int4.h) against up to eight inputs,
// each input's outputs depending on the row and that input alone (exact
// integer dots per group, then the same float steps per group in increasing
// order), so both give an input bit for bit the same result
// (kernels_rows_independent_test and kernels_int4_test check it), and the
// AVX2 kernel's bits (TheVnniKernelGivesTheAvx2KernelsBits).
#pragma once

// GCC 12's avx512fintrin.h reads its own undefined vectors (false positives).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

namespace xft::engine::int4_vnni_block {

// Four int8 x (slots s .. s + 3) in every 32-bit lane: vpdpbusd's
// broadcast operand (folded into the instruction as {1to16}).
// acc + the dots of `weights` (u8) with the four int8 x at x broadcast to
// every lane, the broadcast folded into the instruction ({1to16}; GCC keeps
// it a separate vpbroadcastd, one more instruction per 64 weights).
XFT_AVX512VNNI inline __m512i dot_four_x(__m512i acc, __m512i weights, const int8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(weights), "m"(*reinterpret_cast<const int32_t(*)[1]>(x)));
  return acc;
}

// Runs of 64 bytes (eight slots of the 16 rows) taken per step: two while
// few inputs share them, so each vpdpbusd chain waits on its own latency
// half as often; one for three or four inputs, whose chains are enough.
template <int M>
constexpr int kRunsPerStep = M <= 2 ? 2 : 1;

// One group (RUNS runs of 64 bytes from `runs`) of the tile's 16 rows against
// M inputs (xg[j]: input j's slots of the group): per input the exact integer
// dot of each row in its lane. The low nibbles are masked in place; the high
// ones are left in place (the bytes xor their low nibbles: 16 · q), their
// products summed apart and divided by 16 at the end (exact: a multiple of
// 16, |sum| < 2^31).
template <int M, int RUNS>
XFT_AVX512VNNI inline void group_dots(const uint8_t* runs, const int8_t* const (&xg)[M], __m512i (&dot)[M]) {
  constexpr int kStep = kRunsPerStep<M>;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512i low[M][kStep], high[M][kStep];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) {
    #pragma GCC unroll 2
    for (int k = 0; k < kStep; ++k) low[j][k] = high[j][k] = _mm512_setzero_si512();
  }
  #pragma GCC unroll 16
  for (int run = 0; run < RUNS; run += kStep) {
    #pragma GCC unroll 2
    for (int k = 0; k < kStep; ++k) {
      const __m512i v = _mm512_loadu_si512(runs + 64 * (run + k));
      const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_xor_si512(v, lo);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const int8_t* xs = xg[j] + 8 * (run + k);
        low[j][k] = dot_four_x(low[j][k], lo, xs);
        high[j][k] = dot_four_x(high[j][k], hi, xs + 4);
      }
    }
  }
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) {
    __m512i l = low[j][0], h = high[j][0];
    #pragma GCC unroll 2
    for (int k = 1; k < kStep; ++k) {
      l = _mm512_add_epi32(l, low[j][k]);
      h = _mm512_add_epi32(h, high[j][k]);
    }
    dot[j] = _mm512_add_epi32(l, _mm512_srai_epi32(h, 4));
  }
}

// Lanes of rows [first, last) of the tile starting at r0.
inline __mmask16 row_mask(int r0, int first, int last) {
  return static_cast<__mmask16>(((1u << (last - r0)) - 1) & ~((1u << (first - r0)) - 1));
}

// The 16 rows' scales of group g (fp16 bits from s16, the tile's first).
XFT_AVX512VNNI inline __m512 group_scale(const uint16_t* s16, int g) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16 + kInt4TileRows * g)));
}

// Each input's outputs of the tile's rows [rb, re) from its two sums: acc
// (the scaled dots) less zero_share (the zero points' part), plus the bias.
template <int M>
XFT_AVX512VNNI inline void store_outputs(const PackedWeight& w, const __m512 (&acc)[M], const __m512 (&zero_share)[M],
                                         float* y, int r0, int rb, int re) {
  const int first = std::max(rb, r0), last = std::min(re, r0 + kInt4TileRows);
  const __mmask16 mask = row_mask(r0, first, last);
  const __m512 bias = w.bias.empty() ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, w.bias.data() + r0);
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) {
    _mm512_mask_storeu_ps(y + static_cast<size_t>(j) * w.out + r0, mask, _mm512_add_ps(_mm512_sub_ps(acc[j], zero_share[j]), bias));
  }
}

// The 16 rows r0 .. r0 + 15 of a tile, outputs stored for rows [rb, re):
// one sequential stream of the tile's bytes, group after group, each
// group's dots already one vector per input (lane i = row r0 + i); the float
// steps per group and lane are gemv_int4_avx2's (one convert, one FMA by
// s · sx, one FMA for the zero points' s · z · Σx, taken off at the end).
template <int M, int RUNS>
XFT_AVX512VNNI inline void tile_rows(const PackedWeight& w, const int8_t* x, const float* x_scale, const float* sums,
                                     float* y, int r0, int rb, int re) {
  const uint8_t* tile = int4_tile(w, r0);
  const uint16_t* s16 = w.group_scale.data() + int4_param_index(w, r0, 0);
  const uint8_t* z8 = w.group_zero.data() + int4_param_index(w, r0, 0);
  __m512 acc[M], zero_share[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = zero_share[j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const int8_t* xg[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) xg[j] = x + static_cast<size_t>(j) * w.ld + static_cast<size_t>(g) * w.group_len;
    __m512i dot[M];
    group_dots<M, RUNS>(tile + static_cast<size_t>(g) * RUNS * 64, xg, dot);
    const __m512 scale = group_scale(s16, g);
    const __m512 zero = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z8 + kInt4TileRows * g))));
    const __m512 scaled_zero = _mm512_mul_ps(scale, zero);
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      // |dot| <= 128 · 15 · 127 < 2^24: the conversion is exact.
      const __m512 sx = _mm512_set1_ps(x_scale[static_cast<size_t>(j) * w.groups + g]);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[j]), _mm512_mul_ps(scale, sx), acc[j]);
      zero_share[j] = _mm512_fmadd_ps(scaled_zero, _mm512_set1_ps(sums[static_cast<size_t>(j) * w.groups + g]), zero_share[j]);
    }
  }
  store_outputs<M>(w, acc, zero_share, y, r0, rb, re);
}

// One group of the tile's 16 rows against M (5 .. 8) inputs, the GEMM's
// chunk: one accumulator per input takes both nibbles' products (the high
// nibbles shifted down, one more instruction per 64 bytes), so eight
// inputs' chains, their float sums and the nibbles fit the 32 registers.
// The integer dots are group_dots' exactly (integer sums in any order).
// `next`, where not null, is the same group of the next tile, asked into L2
// a line per run.
template <int M, int RUNS>
XFT_AVX512VNNI inline void group_dots_wide(const uint8_t* runs, const uint8_t* next, const int8_t* const (&xg)[M],
                                           __m512i (&dot)[M]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) dot[j] = _mm512_setzero_si512();
  #pragma GCC unroll 16
  for (int run = 0; run < RUNS; ++run) {
    if (next) _mm_prefetch(reinterpret_cast<const char*>(next + 64 * run), _MM_HINT_T1);
    const __m512i v = _mm512_loadu_si512(runs + 64 * run);
    const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      const int8_t* xs = xg[j] + 8 * run;
      dot[j] = dot_four_x(dot[j], lo, xs);
      dot[j] = dot_four_x(dot[j], hi, xs + 4);
    }
  }
}

// tile_rows for M (5 .. 8) inputs: the same float steps per group, lane and
// input in the same order, so the same bits. The zero points' sums, which
// need no dots, run in a second pass over the groups, keeping eight more
// vectors out of the loop that holds the dots. With prefetch_next the next
// tile's bytes are asked into L2 on the way: the GEMM's first chunk of
// inputs meets each tile first, from memory, and at a few dozen inputs per
// expert that first pass would otherwise wait on it.
template <int M, int RUNS>
XFT_AVX512VNNI inline void tile_rows_wide(const PackedWeight& w, const int8_t* x, const float* x_scale, const float* sums,
                                          float* y, int r0, int rb, int re, bool prefetch_next) {
  const uint8_t* tile = int4_tile(w, r0);
  const uint8_t* next_tile = prefetch_next && r0 + kInt4TileRows < w.out ? int4_tile(w, r0 + kInt4TileRows) : nullptr;
  const uint16_t* s16 = w.group_scale.data() + int4_param_index(w, r0, 0);
  const uint8_t* z8 = w.group_zero.data() + int4_param_index(w, r0, 0);
  __m512 acc[M];
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) acc[j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const int8_t* xg[M];
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) xg[j] = x + static_cast<size_t>(j) * w.ld + static_cast<size_t>(g) * w.group_len;
    __m512i dot[M];
    const size_t at = static_cast<size_t>(g) * RUNS * 64;
    group_dots_wide<M, RUNS>(tile + at, next_tile ? next_tile + at : nullptr, xg, dot);
    const __m512 scale = group_scale(s16, g);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      const __m512 sx = _mm512_set1_ps(x_scale[static_cast<size_t>(j) * w.groups + g]);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[j]), _mm512_mul_ps(scale, sx), acc[j]);
    }
  }
  __m512 zero_share[M];
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) zero_share[j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const __m512 zero = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z8 + kInt4TileRows * g))));
    const __m512 scaled_zero = _mm512_mul_ps(group_scale(s16, g), zero);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      zero_share[j] = _mm512_fmadd_ps(scaled_zero, _mm512_set1_ps(sums[static_cast<size_t>(j) * w.groups + g]), zero_share[j]);
    }
  }
  store_outputs<M>(w, acc, zero_share, y, r0, rb, re);
}

// Rows [rb, re) of M inputs, tile by tile (prefetch_next: tile_rows_wide's).
template <int M, int RUNS>
XFT_AVX512VNNI inline void tiles(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re, bool prefetch_next) {
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r0 = rb / kInt4TileRows * kInt4TileRows; r0 < re; r0 += kInt4TileRows) {
    if constexpr (M <= 4) {
      tile_rows<M, RUNS>(w, x, xs.unit_scale, xs.group_sums, y, r0, rb, re);
    } else {
      tile_rows_wide<M, RUNS>(w, x, xs.unit_scale, xs.group_sums, y, r0, rb, re, prefetch_next);
    }
  }
}

// Rows [rb, re) of M (1 .. 8) inputs. Weights packed row-major (groups of more
// than 128 slots) go to the AVX2 kernel (the same bits), four inputs at most.
template <int M>
inline void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re, bool prefetch_next = false) {
  if (!w.int4_interleaved) return gemv_int4_avx2(w, &xs, M, y, rb, re);
  switch (w.group_len) {
    case 32: tiles<M, 4>(w, xs, y, rb, re, prefetch_next); return;
    case 64: tiles<M, 8>(w, xs, y, rb, re, prefetch_next); return;
    case 96: tiles<M, 12>(w, xs, y, rb, re, prefetch_next); return;
    default: tiles<M, 16>(w, xs, y, rb, re, prefetch_next); return;  // 128, kInt4InterleavedMaxGroup
  }
}

}  // namespace xft::engine::int4_vnni_block
