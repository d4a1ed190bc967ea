// Batch-invariant GEMM for int8 weights on AVX512-VNNI: many inputs against a
// block of weight rows, each input's outputs bit for bit what gemv_int8_vnni
// gives it alone (gemm_int8_vnni_dot.h: the same exact block products, block b
// into accumulator b % 4 and the last 1..3 blocks into accumulator 0, in
// increasing order, the same final sum). Only the blocking differs:
//  * a microkernel of kXRows inputs x kWRows weight rows keeps the four
//    accumulators of its 6 outputs in registers over the whole row, so each
//    weight block feeds kXRows vpdpbusd and each input block kWRows;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_int8_vnni_panel_rows) while every chunk of inputs passes over
//    them, the chunk's rows staying in L1.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_int8_vnni_dot.h"

namespace xft::engine {
namespace {

using int8_vnni_dot::add_block;
using int8_vnni_dot::finish;
using int8_vnni_dot::input_block;
using int8_vnni_dot::InputBlock;
using int8_vnni_dot::kAccumulators;
using int8_vnni_dot::weight_block;

constexpr int kXRows = 3;  // inputs per microkernel
constexpr int kWRows = 2;  // weight rows per microkernel: 4 x 6 accumulators
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// Block b of R weight rows x M inputs from i0 into a[i][j].
template <int R, int M>
XFT_VNNI inline void block(const PackedWeight& w, const int8_t* const (&rows)[R], const Int8StagedX& x, int i0, int b,
                           __m512 (&a)[R][M]) {
  __m512i wq[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) wq[i] = weight_block(rows[i], b);
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) {
    const InputBlock xb = input_block(w, x, i0 + j, b);
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) a[i][j] = add_block(a[i][j], wq[i], xb);
  }
}

// R weight rows from r0 x M inputs from i0, the whole row: y's R x M outputs.
template <int R, int M>
XFT_VNNI void micro(const PackedWeight& w, const Int8StagedX& x, int i0, int r0, float* y) {
  __m512 a[kAccumulators][R][M];
  #pragma GCC unroll 8
  for (int k = 0; k < kAccumulators; ++k)
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) a[k][i][j] = _mm512_setzero_ps();
  const int blocks = w.ld / kInt8Block;
  const int8_t* rows[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) rows[i] = w.row<int8_t>(r0 + i);
  int b = 0;
  for (; b + kAccumulators <= blocks; b += kAccumulators) {
    #pragma GCC unroll 4
    for (int k = 0; k < kAccumulators; ++k) block<R, M>(w, rows, x, i0, b + k, a[k]);
  }
  for (; b < blocks; ++b) block<R, M>(w, rows, x, i0, b, a[0]);
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      y[static_cast<size_t>(i0 + j) * w.out + r0 + i] = finish(w, r0 + i, a[0][i][j], a[1][i][j], a[2][i][j], a[3][i][j]);
    }
}

using Micro = void (*)(const PackedWeight&, const Int8StagedX&, int, int, float*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    default: return micro<R, 3>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re).
void chunk(const PackedWeight& w, const Int8StagedX& x, int i0, int mc, float* y, int rb, int re) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  int r = rb;
  for (; r + kWRows <= re; r += kWRows) full(w, x, i0, r, y);
  for (; r < re; ++r) single(w, x, i0, r, y);
}

}  // namespace

int gemm_int8_vnni_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const Int8StagedX& xs = *static_cast<const Int8StagedX*>(x);
  for (int i0 = 0; i0 < m; i0 += kXRows) chunk(w, xs, i0, std::min(kXRows, m - i0), y, row_begin, row_end);
}

}  // namespace xft::engine
