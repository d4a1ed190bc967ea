// AVX512-VNNI int4 decode kernel on int8 activations, staged as for the AVX2
// kernel (stage_x_int4, Int4X::int8: t = round(x / sx) per x block). One
// vpdpbusd multiplies 32 unsigned nibbles (the u8 operand) by 32 int8 x (the
// s8 operand) and adds each 4 into an int32 lane, where the AVX2 kernel needs
// vpmaddubsw, vpaddw and vpmaddwd: the unpacking (one vpand, one vpsrlw +
// vpand per 64 weights) is all that is left beside the products, so the
// kernel streams the half-size rows instead of waiting on the multiplier
// (the AVX512-BF16 kernel widens every nibble to bf16 first).
// The integer dot of a group is exact either way and lands in the same lanes
// (bytes 4i..4i+3 of each 32-byte vector into lane i), and the float work per
// group is the AVX2 kernel's, so each output is bit for bit gemv_int4_avx2's:
// a row's result depends on the row and its input alone, whatever m.
// Groups of up to 128 slots (GPTQ/AWQ's 32, 64, 128 and the load-time
// quantizer's) run here; larger ones go to the AVX2 kernel.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/quant_int4.h"

#define XFT_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))

namespace xft::engine {
namespace {

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

// One row's group against one input: its exact integer dot product, spread
// over 8 int32 lanes.
template <int FULL, bool HALF>
XFT_AVX512VNNI inline __m256i group_dot(const uint8_t* bytes, const __m256i* xv) {
  const __m256i low4 = _mm256_set1_epi8(15);
  __m256i dot = _mm256_setzero_si256();
  #pragma GCC unroll 2
  for (int u = 0; u < FULL; ++u) {
    const __m256i v = load32(bytes + 32 * u);
    dot = _mm256_dpbusd_epi32(dot, _mm256_and_si256(v, low4), xv[2 * u]);
    dot = _mm256_dpbusd_epi32(dot, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4), xv[2 * u + 1]);
  }
  if (HALF) dot = _mm256_dpbusd_epi32(dot, half_unit(bytes + 32 * FULL), xv[2 * FULL]);
  return dot;
}

// Eight rows r0 .. r0 + 7 at once, as gemv_int4_avx2's block_small_groups:
// each row's groups in turn (one sequential stream) into integer dots, then
// per group and input the eight rows' dots summed across lanes into one
// vector (lane i = row r0 + i) for the float work shared by the eight rows.
template <int M, int FULL, bool HALF>
XFT_AVX512VNNI void block_small_groups(const PackedWeight& w, const int8_t* x, const float* x_scale, const float* sums,
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

template <int M, int FULL, bool HALF>
XFT_AVX512VNNI void small_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const int8_t* x = static_cast<const int8_t*>(xs.x);
  for (int r0 = rb / kInt4RowBlock * kInt4RowBlock; r0 < re; r0 += kInt4RowBlock) {
    block_small_groups<M, FULL, HALF>(w, x, xs.unit_scale, xs.group_sums, y, r0, rb, re);
  }
}

template <int M>
void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  switch (w.group_len) {
    case 32: small_rows<M, 0, true>(w, xs, y, rb, re); return;
    case 64: small_rows<M, 1, false>(w, xs, y, rb, re); return;
    case 96: small_rows<M, 1, true>(w, xs, y, rb, re); return;
    case 128: small_rows<M, 2, false>(w, xs, y, rb, re); return;
    default: gemv_int4_avx2(w, &xs, M, y, rb, re); return;
  }
}

}  // namespace

void gemv_int4_vnni(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
