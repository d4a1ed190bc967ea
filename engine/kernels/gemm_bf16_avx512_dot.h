// What the AVX512-BF16 decode kernel (gemv_bf16_avx512.cpp) and its
// batch-invariant GEMM (gemm_bf16_avx512.cpp) share so that both give an input
// bit for bit the same result: the summation order and the final reduction.
// An output has two float accumulators; 32-element chunk n of the row (x
// staged as bf16) goes into accumulator n % 2 by one vdpbf16ps, chunks in
// increasing order; the two are then summed as finish() does. Two chains
// cover the instruction's latency at decode (one input streams at about
// 30 GB/s per core; two chains allow some 80), and leave the GEMM's
// microkernel room for 4 inputs x 3 rows in registers (with four, 3 x 2:
// nearly a load per vdpbf16ps). Included only by those two files.
#pragma once

// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace xft::engine::bf16_avx512_dot {

constexpr int kChunk = 32;       // bf16 elements per vdpbf16ps
constexpr int kAccumulators = 2;

// Output r of an input from its two accumulators, plus the bias.
XFT_AVX512BF16 inline float finish(const PackedWeight& w, int r, __m512 a0, __m512 a1) {
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) + bias;
}

}  // namespace xft::engine::bf16_avx512_dot
