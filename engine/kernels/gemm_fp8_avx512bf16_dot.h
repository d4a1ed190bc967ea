// What the AVX512-BF16 fp8 decode kernel (gemv_fp8_avx512bf16.cpp) and its
// batch-invariant GEMM (gemm_fp8_avx512bf16.cpp) share so that both give an
// input bit for bit the same result (kernels_rows_independent_test checks
// it): the e4m3 -> bf16 conversion, the summation order and the final
// reduction. Per output and column block, 64-byte chunks in increasing
// order, the chunk's even weights into one accumulator and its odd weights
// into another (one vdpbf16ps each); the block's two accumulators summed,
// times the block scale, into the output's total; the total reduced as
// finish() does. Included only by those two files.
//
// Conversion: a 16-bit lane whose high byte is the e4m3 byte, shifted right
// arithmetically by 4, holds the sign at bit 15 and exponent and mantissa at
// bits 10..4; keeping those and setting bit 11 gives the bf16 with exponent
// e + 16, the value times 2^-104 (fp8.h). vdpbf16ps treats bf16 subnormals
// as zero, so that bias keeps every e4m3 normal a bf16 normal, and e4m3
// subnormals (exponent field 0; a real checkpoint holds about one weight in
// 10^4) are patched from an 8-entry table where a 64-byte chunk has any.
//
// Lanes: the 64 bytes of a chunk as 32 words; the odd bytes are the high
// bytes as loaded, the even ones after a 16-bit shift left by 8. stage_x_fp8
// lays x out per chunk as its 32 even inputs then its 32 odd ones.
#pragma once

// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/fp8.h"

#define XFT_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace xft::engine::fp8_avx512bf16_dot {

constexpr int kChunk = 64;  // e4m3 bytes per conversion: two vdpbf16ps per input

// bf16 bits of m · 2^-113, the e4m3 subnormal m/8 · 2^-6 times 2^-104
// (index: mantissa m; entries 8..31 are never selected).
XFT_AVX512BF16 inline __m512i subnormal_table() {
  alignas(64) static const uint16_t table[32] = {0x0000, 0x0700, 0x0780, 0x07C0, 0x0800, 0x0820, 0x0840, 0x0860};
  return _mm512_load_si512(table);
}

// Words whose high byte is an e4m3 code, as bf16 (normals only).
XFT_AVX512BF16 inline __m512i high_bytes_as_bf16(__m512i words) {
  // 0xEA: (A & B) | C.
  return _mm512_ternarylogic_epi32(_mm512_srai_epi16(words, 4), _mm512_set1_epi16(static_cast<short>(0x87F0)),
                                   _mm512_set1_epi16(0x0800), 0xEA);
}

// Lanes whose high byte has exponent 0 replaced by the exact subnormal, sign kept.
XFT_AVX512BF16 inline __m512i patch_subnormals(__m512i bf16, __m512i words, __m512i table) {
  const __mmask32 subnormal = _mm512_testn_epi16_mask(words, _mm512_set1_epi16(0x7800));
  const __m512i magnitude = _mm512_permutexvar_epi16(_mm512_srli_epi16(words, 8), table);
  const __m512i sign = _mm512_and_si512(words, _mm512_set1_epi16(static_cast<short>(0x8000)));
  return _mm512_mask_mov_epi16(bf16, subnormal, _mm512_or_si512(magnitude, sign));
}

// A chunk's 64 weights as bf16: the 32 even ones and the 32 odd ones.
struct Chunk {
  __m512i even, odd;
};

XFT_AVX512BF16 inline Chunk chunk_as_bf16(const uint8_t* q, __m512i table) {
  const __m512i odd_words = _mm512_loadu_si512(q);
  const __m512i even_words = _mm512_slli_epi16(odd_words, 8);
  Chunk c{high_bytes_as_bf16(even_words), high_bytes_as_bf16(odd_words)};
  if (__builtin_expect(_mm512_testn_epi8_mask(odd_words, _mm512_set1_epi8(0x78)) != 0, 0)) {
    c.even = patch_subnormals(c.even, even_words, table);
    c.odd = patch_subnormals(c.odd, odd_words, table);
  }
  return c;
}

// Inputs [begin, end) of column block b.
inline int block_begin(const PackedWeight& w, int b) { return b * w.fp8_block_cols; }
inline int block_end(const PackedWeight& w, int b) {
  const int end = block_begin(w, b) + w.fp8_block_cols;
  return end < w.ld ? end : w.ld;
}

// An input's staged chunk: its 32 even inputs, then its 32 odd ones.
struct XChunk {
  __m512i even, odd;
};
XFT_AVX512BF16 inline XChunk load_x(const uint16_t* x) {
  return {_mm512_loadu_si512(x), _mm512_loadu_si512(x + 32)};
}

// One chunk's products into a block's even and odd accumulators.
XFT_AVX512BF16 inline void add_chunk(__m512& even, __m512& odd, __m512i w_even, __m512i w_odd, XChunk x) {
  even = _mm512_dpbf16_ps(even, (__m512bh)w_even, (__m512bh)x.even);
  odd = _mm512_dpbf16_ps(odd, (__m512bh)w_odd, (__m512bh)x.odd);
}

// The multiplier of column block b of a row whose scales are `scale`.
XFT_AVX512BF16 inline __m512 block_multiplier(const float* scale, int b) {
  return _mm512_set1_ps(scale[b] * kFp8Bf16ScaleBack);
}

// A finished block into the output's total.
XFT_AVX512BF16 inline __m512 add_block(__m512 total, __m512 even, __m512 odd, __m512 multiplier) {
  return _mm512_fmadd_ps(_mm512_add_ps(even, odd), multiplier, total);
}

// Output r of an input from its total, plus the bias.
XFT_AVX512BF16 inline float finish(const PackedWeight& w, int r, __m512 total) {
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  return _mm512_reduce_add_ps(total) + bias;
}

}  // namespace xft::engine::fp8_avx512bf16_dot
