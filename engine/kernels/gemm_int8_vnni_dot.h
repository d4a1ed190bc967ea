// The steps of the AVX512-VNNI int8 decode kernel (gemv_int8_vnni.cpp, which
// spells them out itself) for its batch-invariant GEMM (gemm_int8_vnni.cpp),
// so that both give an input bit for bit the same result
// (kernels_rows_independent_test checks it): the exact int32 product of a block of
// kInt8Block weights with the input's quantized block, its scaling into a
// float accumulator, the summation order and the final reduction. An output
// has four float accumulators; block b goes into accumulator b % 4 while four
// whole blocks remain from a multiple of 4, the last 1..3 blocks into
// accumulator 0, blocks in increasing order.
// Included only by the GEMM.
#pragma once

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")))

namespace xft::engine::int8_vnni_dot {

constexpr int kAccumulators = 4;

// Weight block b of a packed row as vpdpbusd's unsigned operand: q + 128.
XFT_VNNI inline __m512i weight_block(const int8_t* row, int b) {
  return _mm512_xor_si512(_mm512_loadu_si512(row + b * kInt8Block), _mm512_set1_epi8(static_cast<char>(0x80)));
}

// Input j's block b: its quantized bytes, the -128 · Σ x_q start of lane 0
// and its scale.
struct InputBlock {
  __m512i q, start;
  __m512 scale;
};
XFT_VNNI inline InputBlock input_block(const PackedWeight& w, const Int8StagedX& x, int j, int b) {
  const size_t block = static_cast<size_t>(j) * (w.ld / kInt8Block) + b;
  return {_mm512_loadu_si512(x.q + static_cast<size_t>(j) * w.ld + b * kInt8Block),
          _mm512_maskz_set1_epi32(1, x.neg_comp[block]), _mm512_set1_ps(x.scale[block])};
}

// acc + scale · (exact int32 dot product of the block), lane by lane.
XFT_VNNI inline __m512 add_block(__m512 acc, __m512i wq, const InputBlock& xb) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(xb.start, wq, xb.q)), xb.scale, acc);
}

// Output r of an input from its four accumulators: summed, times the row's
// scale, plus the bias.
XFT_VNNI inline float finish(const PackedWeight& w, int r, __m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) * w.scales[r] + bias;
}

}  // namespace xft::engine::int8_vnni_dot
