// Batch-invariant GEMM for AVX512-BF16 bf16 weights: many inputs against a
// block of weight rows, each input's outputs bit for bit what
// gemv_bf16_avx512 gives it alone (gemm_bf16_avx512_dot.h: chunk n of a row
// into accumulator n % 4, chunks in increasing order, the same final sum).
// Each accumulator is its own chain, so the GEMM may run them one after the
// other; only the blocking differs from the decode kernel:
//  * a microkernel of kXRows inputs x kWRows weight rows fills one of the
//    four accumulators of each of its 24 outputs over a K block (chunks
//    n = k, k + 4, ...), so each weight load feeds kXRows vdpbf16ps and each
//    x load kWRows (the decode kernel re-reads every weight row per 4 inputs);
//  * K is cut into blocks of kKBlock: the accumulators go to a small
//    per-thread buffer between blocks (each chain just continues), so the
//    inputs' slice stays in L1 while the panel's rows stream past it;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_bf16_avx512_panel_rows) while every chunk of inputs passes over them.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_bf16_avx512_dot.h"

namespace xft::engine {
namespace {

using bf16_avx512_dot::finish;
using bf16_avx512_dot::kAccumulators;
using bf16_avx512_dot::kChunk;
using bf16_avx512_dot::step;

constexpr int kXRows = 6;        // inputs per microkernel
constexpr int kWRows = 4;        // weight rows per microkernel: 24 accumulators
constexpr int kStride = kChunk * kAccumulators;  // elements between chunks of one accumulator
constexpr int kKBlock = 512;     // elements (multiple of kStride): 6 inputs' slice is 6 KiB of L1
constexpr int kMaxPanelRows = 64;
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows

// Accumulator k of R weight rows x M inputs over the chunks of [c0, c1) that
// belong to it, resumed from and saved to acc[(i * M + j) * 4 + k].
template <int R, int M>
XFT_AVX512BF16 void micro(const PackedWeight& w, const uint16_t* x, int r0, int c0, int c1, int k, __m512* acc) {
  __m512 a[R][M];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) a[i][j] = acc[(i * M + j) * kAccumulators + k];
  const size_t ld = static_cast<size_t>(w.ld);
  const uint16_t* wr[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) wr[i] = w.row<uint16_t>(r0 + i);
  for (int c = c0 + kChunk * k; c < c1; c += kStride) {
    __m512i wv[R];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wv[i] = _mm512_loadu_si512(wr[i] + c);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      __m512i xv = _mm512_loadu_si512(x + j * ld + c);
      // One x load for the R products (see gemm_avx2.cpp: folded into each
      // instruction as a memory operand the loads become the bottleneck).
      __asm__("" : "+v"(xv));
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a[i][j] = _mm512_dpbf16_ps(a[i][j], (__m512bh)wv[i], (__m512bh)xv);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) acc[(i * M + j) * kAccumulators + k] = a[i][j];
}

using Micro = void (*)(const PackedWeight&, const uint16_t*, int, int, int, int, __m512*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    case 3: return micro<R, 3>;
    case 4: return micro<R, 4>;
    case 5: return micro<R, 5>;
    default: return micro<R, 6>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re): K block by K block over
// the panel, then every output finished from its four accumulators.
XFT_AVX512BF16 void chunk(const PackedWeight& w, const uint16_t* x, int i0, int mc, float* y, int rb, int re,
                          __m512* acc) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  const uint16_t* xc = x + static_cast<size_t>(i0) * w.ld;
  const int rows = re - rb;
  const size_t per_row = static_cast<size_t>(mc) * kAccumulators;
  for (size_t n = 0; n < static_cast<size_t>(rows) * per_row; ++n) acc[n] = _mm512_setzero_ps();
  for (int c0 = 0; c0 < w.ld; c0 += kKBlock) {
    const int c1 = std::min(w.ld, c0 + kKBlock);
    for (int k = 0; k < kAccumulators; ++k) {
      int r = rb;
      for (; r + kWRows <= re; r += kWRows) full(w, xc, r, c0, c1, k, acc + (r - rb) * per_row);
      for (; r < re; ++r) single(w, xc, r, c0, c1, k, acc + (r - rb) * per_row);
    }
  }
  for (int r = rb; r < re; ++r) {
    for (int j = 0; j < mc; ++j) {
      const __m512* a = acc + (r - rb) * per_row + static_cast<size_t>(j) * kAccumulators;
      y[static_cast<size_t>(i0 + j) * w.out + r] = finish(w, r, a[0], a[1], a[2], a[3]);
    }
  }
}

}  // namespace

int gemm_bf16_avx512_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  alignas(64) static thread_local __m512 acc[kMaxPanelRows * kXRows * kAccumulators];
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  for (int p = row_begin; p < row_end; p += kMaxPanelRows) {
    const int pe = std::min(row_end, p + kMaxPanelRows);
    for (int i0 = 0; i0 < m; i0 += kXRows) chunk(w, xb, i0, std::min(kXRows, m - i0), y, p, pe, acc);
  }
}

}  // namespace xft::engine
