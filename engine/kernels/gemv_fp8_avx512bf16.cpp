// AVX512-BF16 fp8 decode: each e4m3 byte becomes an exact bf16 in registers
// and vdpbf16ps multiplies 32 pairs at once, against x rounded to bf16 once
// (stage_x_fp8), as the bf16 and int4 decode kernels do. Half the multiply
// instructions of the float kernel and no widening shuffle: the conversion
// is two shifts and a ternary logic op per 32 weights
// (gemm_fp8_avx512bf16_dot.h, which also fixes the summation order the
// batch-invariant GEMM keeps: the same for every M, so batching never
// changes a row).
#include "engine/kernels/gemm_fp8_avx512bf16_dot.h"

namespace xft::engine {
namespace {

using namespace fp8_avx512bf16_dot;

// Any block width: the chunks of each column block, then the block into the total.
template <int M>
XFT_AVX512BF16 void row_kernel(const PackedWeight& w, const uint16_t* x, float* y, int r, __m512i table) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* scale = fp8_row_scales(w, r);
  __m512 total[M];
  for (int j = 0; j < M; ++j) total[j] = _mm512_setzero_ps();
  for (int b = 0; b < w.fp8_col_blocks; ++b) {
    const int end = block_end(w, b);
    __m512 even[M], odd[M];
    for (int j = 0; j < M; ++j) even[j] = odd[j] = _mm512_setzero_ps();
    for (int c = block_begin(w, b); c < end; c += kChunk) {
      const Chunk chunk = chunk_as_bf16(q + c, table);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        add_chunk(even[j], odd[j], chunk.even, chunk.odd, load_x(x + static_cast<size_t>(j) * w.ld + c));
      }
    }
    const __m512 multiplier = block_multiplier(scale, b);
    for (int j = 0; j < M; ++j) total[j] = add_block(total[j], even[j], odd[j], multiplier);
  }
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, total[j]);
}

// Qwen's 128-column blocks over whole rows (kFp8LoadBlock, and every FP8
// checkpoint published): the same sums as row_kernel in the same order, with
// a block's two chunks unrolled, no per-block bounds and the block
// multipliers formed at load, so that the conversion sets the pace. On Zen 4
// every 512-bit operation takes two passes through 256-bit pipes and the
// generic loop reached only about 35 GB/s per core with the weight in cache,
// close to the ~30 GB/s one thread must stream; each operation saved per
// chunk counts.
constexpr int kWideBlock = 2 * kChunk;
inline bool whole_wide_blocks(const PackedWeight& w) {
  return w.fp8_block_cols == kWideBlock && w.ld == w.fp8_col_blocks * kWideBlock &&
         w.fp8_scale_bf16_dot.size() == w.fp8_scale.size() && w.fp8_row_exponent_zero.size() == static_cast<size_t>(w.out);
}

// A chunk of a row without exponent-0 bytes: no test, nothing to patch.
XFT_AVX512BF16 inline Chunk chunk_as_bf16_normals(const uint8_t* q) {
  const __m512i odd_words = _mm512_loadu_si512(q);
  return {high_bytes_as_bf16(_mm512_slli_epi16(odd_words, 8)), high_bytes_as_bf16(odd_words)};
}

template <int M, bool kPatch>
XFT_AVX512BF16 void row_kernel_wide(const PackedWeight& w, const uint16_t* x, float* y, int r, __m512i table) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* multipliers = w.fp8_scale_bf16_dot.data() + static_cast<size_t>(w.fp8_scale_row[r]) * w.fp8_col_blocks;
  __m512 total[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) total[j] = _mm512_setzero_ps();
  for (int c = 0; c < w.ld; c += kWideBlock) {
    const Chunk first = kPatch ? chunk_as_bf16(q + c, table) : chunk_as_bf16_normals(q + c);
    const Chunk second = kPatch ? chunk_as_bf16(q + c + kChunk, table) : chunk_as_bf16_normals(q + c + kChunk);
    const __m512 multiplier = _mm512_set1_ps(multipliers[c / kWideBlock]);
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) {
      const uint16_t* xj = x + static_cast<size_t>(j) * w.ld + c;
      __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
      add_chunk(even, odd, first.even, first.odd, load_x(xj));
      add_chunk(even, odd, second.even, second.odd, load_x(xj + kChunk));
      total[j] = add_block(total[j], even, odd, multiplier);
    }
  }
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, total[j]);
}

// Row r of M inputs, the patching conversion only where the row has an exponent-0 byte.
template <int M>
XFT_AVX512BF16 void row_wide(const PackedWeight& w, const uint16_t* x, float* y, int r, __m512i table) {
  if (w.fp8_row_exponent_zero[r]) row_kernel_wide<M, true>(w, x, y, r, table);
  else row_kernel_wide<M, false>(w, x, y, r, table);
}

// Rows one at a time, each one sequential stream: bench_moe (experts'
// decode, fp8, 2-core Zen 4 VM) measured two threads at 78-83 % of a read
// pass at 61-63 GB/s this way against 49-51 % with four rows side by side
// per thread (eight streams in all), and one thread at 86 % against 82 %.
// A software prefetch ahead of the stream made it slower here (unlike bf16,
// whose conversion-free loop leaves the core waiting on memory).
template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
  const __m512i table = subnormal_table();
  if (!whole_wide_blocks(w)) {
    for (int r = rb; r < re; ++r) row_kernel<M>(w, x, y, r, table);
  } else {
    for (int r = rb; r < re; ++r) row_wide<M>(w, x, y, r, table);
  }
}

// Even (or odd) elements of a 32-float pair of vectors: index table for
// permutex2var over (lo, hi).
XFT_AVX512BF16 inline __m512i pick_every_other(int first) {
  alignas(64) int32_t index[16];
  for (int k = 0; k < 16; ++k) index[k] = first + 2 * k;
  return _mm512_load_si512(index);
}

}  // namespace

XFT_AVX512BF16 void stage_x_fp8_avx512bf16(const PackedWeight& w, const float* x, int m, uint16_t* dst) {
  const __m512i even = pick_every_other(0), odd = pick_every_other(1);
  const __m512 x_scale = _mm512_set1_ps(kFp8XScale);
  for (int r = 0; r < m; ++r) {
    const float* src = x + static_cast<size_t>(r) * w.in;
    uint16_t* row = dst + static_cast<size_t>(r) * w.ld;
    for (int chunk = 0; chunk < w.ld; chunk += kChunk) {
      __m512 v[4];
      for (int k = 0; k < 4; ++k) {
        const int c = chunk + 16 * k;
        const int valid = w.in - c <= 0 ? 0 : w.in - c >= 16 ? 16 : w.in - c;  // zero past the row's end
        const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
        v[k] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, src + c), x_scale);
      }
      // cvtne2ps: the second operand's 16 values become the low 16 words.
      const __m512bh evens = _mm512_cvtne2ps_pbh(_mm512_permutex2var_ps(v[2], even, v[3]),
                                                 _mm512_permutex2var_ps(v[0], even, v[1]));
      const __m512bh odds = _mm512_cvtne2ps_pbh(_mm512_permutex2var_ps(v[2], odd, v[3]),
                                                _mm512_permutex2var_ps(v[0], odd, v[1]));
      _mm512_store_si512(row + chunk, (__m512i)evens);
      _mm512_store_si512(row + chunk + 32, (__m512i)odds);
    }
  }
}

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
