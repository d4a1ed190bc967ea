// The steps of the AVX512-VNNI int4 decode kernel (gemv_int4_vnni.cpp) for
// it and its batch-invariant GEMM (gemm_int4_vnni.cpp): blocks of eight
// weight rows against up to four inputs, each input's outputs depending on
// the row and that input alone (exact integer dots per group, then the same
// float steps per group in increasing order), so both give an input bit for
// bit the same result (kernels_rows_independent_test and kernels_int4_test
// check it), and the AVX2 kernel's bits (TheVnniKernelGivesTheAvx2KernelsBits).
#pragma once

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))

namespace xft::engine::int4_vnni_block {

XFT_AVX512VNNI inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 32 slots of a half unit (16 bytes) in order: low nibbles, then high ones.
XFT_AVX512VNNI inline __m256i half_unit(const uint8_t* bytes) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i low4 = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low4), _mm_and_si128(v, low4));
}

// Packed row r, or the last row for the lanes of a block past the end (their
// results are not stored).
inline const uint8_t* block_row(const PackedWeight& w, int r) { return w.int4_row(r < w.out ? r : w.out - 1); }

// One row's group against M inputs (xg[j]: input j's slots of the group):
// the nibbles unpacked once, then per input its exact integer dot product,
// spread over 8 int32 lanes.
template <int M, int FULL, bool HALF>
XFT_AVX512VNNI inline void group_dots(const uint8_t* bytes, const int8_t* const (&xg)[M], __m256i (&dot)[M]) {
  constexpr int kUnits = 2 * FULL + (HALF ? 1 : 0);
  const __m256i low4 = _mm256_set1_epi8(15);
  __m256i nibbles[kUnits];
  #pragma GCC unroll 2
  for (int u = 0; u < FULL; ++u) {
    const __m256i v = load32(bytes + 32 * u);
    nibbles[2 * u] = _mm256_and_si256(v, low4);
    nibbles[2 * u + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  }
  if (HALF) nibbles[2 * FULL] = half_unit(bytes + 32 * FULL);
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) {
    dot[j] = _mm256_setzero_si256();
    #pragma GCC unroll 5
    for (int k = 0; k < kUnits; ++k) dot[j] = _mm256_dpbusd_epi32(dot[j], nibbles[k], load32(xg[j] + 32 * k));
  }
}

// A pass's float work (about 40 instructions per group and input) holds no weight
// loads; past about 32 groups it outlasts the out-of-order window, so the
// memory stream would stall there (on long rows, K = 8960, the kernel read
// DRAM slower than the int8 one). The float loop therefore prefetches, spread
// over its groups, what the next pass reads: the next groups of these eight
// rows, or the next block's first ones. Shorter passes overlap on their own,
// where the extra prefetches only slowed the hardware prefetcher.
constexpr int kPrefetchMinGroups = 32;

// The bytes the next pass reads: `rows` rows of `lines_per_row` cache lines
// from `first`, a row apart; spread as `per_group` lines per group of the
// float loop (none when total is 0).
struct NextPass {
  const uint8_t* first = nullptr;
  size_t row_stride = 0, lines_per_row = 0, total = 0, per_group = 0;
};

inline NextPass next_pass_of(const PackedWeight& w, int r0, int g0, int g1, int chunk) {
  NextPass next;
  const int groups = g1 - g0;
  if (groups < kPrefetchMinGroups) return next;
  const bool same_rows = g1 < w.groups;
  const int first_row = same_rows ? r0 : r0 + kInt4RowBlock;
  const int rows = std::min(kInt4RowBlock, w.out - first_row);
  if (rows <= 0) return next;
  const int first_group = same_rows ? g1 : 0;
  const size_t group_bytes = static_cast<size_t>(w.group_len) / 2;
  next.first = w.int4_row(first_row) + first_group * group_bytes;
  next.row_stride = w.row_bytes();
  next.lines_per_row = (static_cast<size_t>(std::min(w.groups - first_group, chunk)) * group_bytes + 63) / 64;
  next.total = next.lines_per_row * rows;
  next.per_group = (next.total + groups - 1) / groups;
  return next;
}

// Eight rows r0 .. r0 + 7 at once, as gemv_int4_avx2's block_small_groups:
// each row's groups in turn (one sequential stream) into integer dots, then
// per group and input the eight rows' dots summed across lanes into one
// vector (lane i = row r0 + i) for the float work shared by the eight rows.
template <int M, int FULL, bool HALF>
XFT_AVX512VNNI inline void block_small_groups(const PackedWeight& w, const int8_t* x, const float* x_scale, const float* sums,
                                       float* y, int r0, int rb, int re) {
  constexpr int kChunk = 96 / M;  // groups per pass: a pass's dots stay in L1 (24 KiB)
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
        const int8_t* xg[M];
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) xg[j] = x + static_cast<size_t>(j) * w.ld + static_cast<size_t>(g) * w.group_len;
        __m256i d[M];
        group_dots<M, FULL, HALF>(row + g * group_bytes, xg, d);
        #pragma GCC unroll 4
        for (int j = 0; j < M; ++j) dots[j][g - g0][i] = d[j];
      }
    }
    const NextPass next = next_pass_of(w, r0, g0, g1, kChunk);
    size_t line = 0;
    for (int g = g0; g < g1; ++g) {
      for (const size_t end = std::min(next.total, line + next.per_group); line < end; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(next.first + line / next.lines_per_row * next.row_stride + 64 * (line % next.lines_per_row)),
                     _MM_HINT_T1);
      }
      const __m256 scale = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16 + kInt4RowBlock * g)));
      const __m256 zero = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(z8 + kInt4RowBlock * g))));
      const __m256 scaled_zero = _mm256_mul_ps(scale, zero);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const __m256i* d = dots[j][g - g0];
        const __m256i d0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
        const __m256i d4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[4], d[5]), _mm256_hadd_epi32(d[6], d[7]));
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

// Rows [rb, re) of M inputs, block by block.
template <int M, int FULL, bool HALF>
XFT_AVX512VNNI inline void small_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r0 = rb / kInt4RowBlock * kInt4RowBlock; r0 < re; r0 += kInt4RowBlock) {
    block_small_groups<M, FULL, HALF>(w, x, xs.unit_scale, xs.group_sums, y, r0, rb, re);
  }
}

// Rows [rb, re) of M (1..4) inputs; groups of more than 128 slots go to the
// AVX2 kernel (the same bits).
template <int M>
inline void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  switch (w.group_len) {
    case 32: small_rows<M, 0, true>(w, xs, y, rb, re); return;
    case 64: small_rows<M, 1, false>(w, xs, y, rb, re); return;
    case 96: small_rows<M, 1, true>(w, xs, y, rb, re); return;
    case 128: small_rows<M, 2, false>(w, xs, y, rb, re); return;
    default: gemv_int4_avx2(w, &xs, M, y, rb, re); return;
  }
}

}  // namespace xft::engine::int4_vnni_block
