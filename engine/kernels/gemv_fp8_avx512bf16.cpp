// AVX512-BF16 fp8 decode: each e4m3 byte becomes an exact bf16 in registers
// and vdpbf16ps multiplies 32 pairs at once, against x rounded to bf16 once
// (stage_x_fp8), as the bf16 and int4 decode kernels do. Half the multiply
// instructions of the float kernel and no widening shuffle: the conversion
// is two shifts and a ternary logic op per 32 weights.
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
// Accumulation: per column block, two accumulators (even, odd chunks' halves)
// per input, their sum times the block scale into the input's total: the same
// order for every M, so batching never changes a row.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/fp8.h"

#define XFT_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace xft::engine {
namespace {

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

template <int M>
XFT_AVX512BF16 void row_kernel(const PackedWeight& w, const uint16_t* x, float* y, int r, __m512i table) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* scale = fp8_row_scales(w, r);
  __m512 total[M];
  for (int j = 0; j < M; ++j) total[j] = _mm512_setzero_ps();
  for (int b = 0; b < w.fp8_col_blocks; ++b) {
    const int begin = b * w.fp8_block_cols;
    const int end = begin + w.fp8_block_cols < w.ld ? begin + w.fp8_block_cols : w.ld;
    __m512 even[M], odd[M];
    for (int j = 0; j < M; ++j) even[j] = odd[j] = _mm512_setzero_ps();
    for (int c = begin; c < end; c += 64) {
      const Chunk chunk = chunk_as_bf16(q + c, table);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const uint16_t* xj = x + static_cast<size_t>(j) * w.ld + c;
        even[j] = _mm512_dpbf16_ps(even[j], (__m512bh)chunk.even, (__m512bh)_mm512_loadu_si512(xj));
        odd[j] = _mm512_dpbf16_ps(odd[j], (__m512bh)chunk.odd, (__m512bh)_mm512_loadu_si512(xj + 32));
      }
    }
    const __m512 s = _mm512_set1_ps(scale[b] * kFp8Bf16ScaleBack);
    for (int j = 0; j < M; ++j) total[j] = _mm512_fmadd_ps(_mm512_add_ps(even[j], odd[j]), s, total[j]);
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = _mm512_reduce_add_ps(total[j]) + bias;
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
  const __m512i table = subnormal_table();
  for (int r = rb; r < re; ++r) row_kernel<M>(w, x, y, r, table);
}

}  // namespace

void gemv_fp8_avx512bf16(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xb, y, row_begin, row_end); break;
    case 2: run_rows<2>(w, xb, y, row_begin, row_end); break;
    case 3: run_rows<3>(w, xb, y, row_begin, row_end); break;
    default: run_rows<4>(w, xb, y, row_begin, row_end); break;
  }
}

}  // namespace xft::engine
