// Batch-invariant GEMM for AVX512-BF16 bf16 weights: many inputs against a
// block of weight rows, each input's outputs bit for bit what
// gemv_bf16_avx512 gives it alone (gemm_bf16_avx512_dot.h: chunk n of a row
// into accumulator n % 4, chunks in increasing order, the same final sum).
// Only the blocking differs from the decode kernel:
//  * a microkernel of kXRows inputs x kWRows weight rows keeps the four
//    accumulators of its 6 outputs in registers over the whole row, so each
//    weight load feeds kXRows vdpbf16ps and each x load kWRows;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_bf16_avx512_panel_rows) while every chunk of inputs passes over
//    them, the chunk's rows staying in L1.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_bf16_avx512_dot.h"

namespace xft::engine {
namespace {

using bf16_avx512_dot::finish;
using bf16_avx512_dot::kAccumulators;
using bf16_avx512_dot::kChunk;

constexpr int kXRows = 3;  // inputs per microkernel
constexpr int kWRows = 2;  // weight rows per microkernel: 4 x 6 accumulators
constexpr int kStride = kChunk * kAccumulators;  // elements per step of all four accumulators
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// R weight rows from r0 x M inputs from i0, the whole row: y's R x M outputs.
template <int R, int M>
XFT_AVX512BF16 void micro(const PackedWeight& w, const uint16_t* x, int i0, int r0, float* y) {
  __m512 a[kAccumulators][R][M];
  #pragma GCC unroll 8
  for (int k = 0; k < kAccumulators; ++k)
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) a[k][i][j] = _mm512_setzero_ps();
  const size_t ld = static_cast<size_t>(w.ld);
  const uint16_t* xc = x + static_cast<size_t>(i0) * ld;
  const uint16_t* wr[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) wr[i] = w.row<uint16_t>(r0 + i);
  // ld is a multiple of 64: steps of 4 chunks, then maybe the first 2 of a step.
  for (int c = 0; c < w.ld; c += kStride) {
    const int chunks = std::min(kAccumulators, (w.ld - c) / kChunk);
    #pragma GCC unroll 4
    for (int k = 0; k < kAccumulators; ++k) {
      if (k >= chunks) break;
      const int ck = c + kChunk * k;
      __m512i wv[R];
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = _mm512_loadu_si512(wr[i] + ck);
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) {
        __m512i xv = _mm512_loadu_si512(xc + j * ld + ck);
        // One x load for the R products (see gemm_avx2.cpp: folded into each
        // instruction as a memory operand the loads become the bottleneck).
        __asm__("" : "+v"(xv));
        #pragma GCC unroll 8
        for (int i = 0; i < R; ++i) a[k][i][j] = _mm512_dpbf16_ps(a[k][i][j], (__m512bh)wv[i], (__m512bh)xv);
      }
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      y[static_cast<size_t>(i0 + j) * w.out + r0 + i] = finish(w, r0 + i, a[0][i][j], a[1][i][j], a[2][i][j], a[3][i][j]);
    }
}

using Micro = void (*)(const PackedWeight&, const uint16_t*, int, int, float*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    default: return micro<R, 3>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re).
void chunk(const PackedWeight& w, const uint16_t* x, int i0, int mc, float* y, int rb, int re) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  int r = rb;
  for (; r + kWRows <= re; r += kWRows) full(w, x, i0, r, y);
  for (; r < re; ++r) single(w, x, i0, r, y);
}

}  // namespace

int gemm_bf16_avx512_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  for (int i0 = 0; i0 < m; i0 += kXRows) chunk(w, xb, i0, std::min(kXRows, m - i0), y, row_begin, row_end);
}

}  // namespace xft::engine
