// Batch-invariant GEMM for AVX512-BF16 bf16 weights: many inputs against a
// block of weight rows, each input's outputs bit for bit what
// gemv_bf16_avx512 gives it alone (gemm_bf16_avx512_dot.h: chunk n of a row
// into accumulator n % 2, chunks in increasing order, the same final sum).
// Only the blocking differs from the decode kernel:
//  * a microkernel of kXRows inputs x kWRows weight rows keeps the two
//    accumulators of its 12 outputs in registers over the whole row, so each
//    weight load feeds kXRows vdpbf16ps and each x load kWRows;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_bf16_avx512_panel_rows) while every chunk of inputs passes over
//    them, the chunk's rows staying in L1;
//  * the first chunk's pass asks the rows one panel further on into L2 as it
//    goes (the thread's next panel, as parallel_for_balanced hands them out):
//    with a few dozen inputs (an expert's share of a prompt) that pass
//    otherwise waits on memory.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_bf16_avx512_dot.h"

namespace xft::engine {
namespace {

using bf16_avx512_dot::finish;
using bf16_avx512_dot::kAccumulators;
using bf16_avx512_dot::kChunk;

constexpr int kXRows = 4;  // inputs per microkernel
constexpr int kWRows = 3;  // weight rows per microkernel: 2 x 12 accumulators
constexpr int kStride = kChunk * kAccumulators;  // elements per step of both accumulators
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// R weight rows from r0 x M inputs from i0, the whole row: y's R x M
// outputs; with ahead > 0 the same columns of the rows `ahead` rows further
// on are asked into L2.
template <int R, int M>
XFT_AVX512BF16 void micro(const PackedWeight& w, const uint16_t* x, int i0, int r0, float* y, int ahead) {
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
  // ld is a multiple of 64: whole steps of both accumulators' chunks.
  for (int c = 0; c < w.ld; c += kStride) {
    #pragma GCC unroll 2
    for (int k = 0; k < kAccumulators; ++k) {
      const int ck = c + kChunk * k;
      __m512i wv[R];
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = _mm512_loadu_si512(wr[i] + ck);
      if (ahead > 0) {
        #pragma GCC unroll 8
        for (int i = 0; i < R; ++i) _mm_prefetch(reinterpret_cast<const char*>(wr[i] + ck + ahead * ld), _MM_HINT_T1);
      }
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
      y[static_cast<size_t>(i0 + j) * w.out + r0 + i] = finish(w, r0 + i, a[0][i][j], a[1][i][j]);
    }
}

using Micro = void (*)(const PackedWeight&, const uint16_t*, int, int, float*, int);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    case 3: return micro<R, 3>;
    default: return micro<R, 4>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re); with ahead > 0 rows
// [rb, re) + ahead are asked into L2 on the way (those within the weight).
void chunk(const PackedWeight& w, const uint16_t* x, int i0, int mc, float* y, int rb, int re, int ahead) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  int r = rb;
  for (; r + kWRows <= re; r += kWRows) full(w, x, i0, r, y, r + kWRows + ahead <= w.out ? ahead : 0);
  for (; r < re; ++r) single(w, x, i0, r, y, r + 1 + ahead <= w.out ? ahead : 0);
}

}  // namespace

int gemm_bf16_avx512_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  const int next_panel = row_end - row_begin;
  for (int i0 = 0; i0 < m; i0 += kXRows) {
    chunk(w, xb, i0, std::min(kXRows, m - i0), y, row_begin, row_end, i0 == 0 ? next_panel : 0);
  }
}

}  // namespace xft::engine
