// Batch-invariant GEMM for int8 weights on AVX512-VNNI: many inputs against a
// block of weight rows, each input's outputs bit for bit what gemv_int8_vnni
// gives it alone (gemm_int8_vnni_dot.h: the same exact block products, block b
// into accumulator b % 4 and the last 1..3 blocks into accumulator 0, in
// increasing order, the same final sum). Each accumulator is its own chain, so
// the GEMM fills them one after the other; only the blocking differs:
//  * a microkernel of kXRows inputs x kWRows weight rows fills one accumulator
//    of each of its 20 outputs over a K block, so each weight block feeds
//    kXRows vpdpbusd and each input block kWRows;
//  * K is cut into kKBlocks blocks at a time: the accumulators go to a small
//    per-thread buffer between them, so the inputs' slice stays in L1 while
//    the panel's rows stream past it;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_int8_vnni_panel_rows).
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_int8_vnni_dot.h"

namespace xft::engine {
namespace {

using int8_vnni_dot::add_block;
using int8_vnni_dot::blocks_in_fours;
using int8_vnni_dot::finish;
using int8_vnni_dot::input_block;
using int8_vnni_dot::InputBlock;
using int8_vnni_dot::kAccumulators;
using int8_vnni_dot::weight_block;

constexpr int kXRows = 5;     // inputs per microkernel
constexpr int kWRows = 4;     // weight rows per microkernel: 20 accumulators
constexpr int kKBlocks = 16;  // blocks of kInt8Block per K step (multiple of 4): 5 inputs' slice is 5 KiB
constexpr int kMaxPanelRows = 64;
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows

// R weight rows from r0 x M inputs from i0 over blocks from, from + step, ...
// below to, into a[i][j].
template <int R, int M>
XFT_VNNI inline void blocks(const PackedWeight& w, const Int8StagedX& x, int i0, int r0, int from, int to, int step,
                            __m512 (&a)[R][M]) {
  for (int b = from; b < to; b += step) {
    __m512i wq[R];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wq[i] = weight_block(w, r0 + i, b);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      const InputBlock xb = input_block(w, x, i0 + j, b);
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a[i][j] = add_block(a[i][j], wq[i], xb);
    }
  }
}

// Accumulator k of R weight rows x M inputs over the blocks of [b0, b1) that
// belong to it, resumed from and saved to acc[(i * M + j) * 4 + k].
template <int R, int M>
XFT_VNNI void micro(const PackedWeight& w, const Int8StagedX& x, int i0, int r0, int b0, int b1, int k, __m512* acc) {
  __m512 a[R][M];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) a[i][j] = acc[(i * M + j) * kAccumulators + k];
  const int fours = blocks_in_fours(w);
  blocks<R, M>(w, x, i0, r0, b0 + k, std::min(b1, fours), kAccumulators, a);
  if (k == 0) blocks<R, M>(w, x, i0, r0, std::max(b0, fours), b1, 1, a);
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) acc[(i * M + j) * kAccumulators + k] = a[i][j];
}

using Micro = void (*)(const PackedWeight&, const Int8StagedX&, int, int, int, int, int, __m512*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    case 3: return micro<R, 3>;
    case 4: return micro<R, 4>;
    default: return micro<R, 5>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re): K step by K step over
// the panel, then every output finished from its four accumulators.
XFT_VNNI void chunk(const PackedWeight& w, const Int8StagedX& x, int i0, int mc, float* y, int rb, int re,
                    __m512* acc) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  const int rows = re - rb, total = w.ld / kInt8Block;
  const size_t per_row = static_cast<size_t>(mc) * kAccumulators;
  for (size_t n = 0; n < static_cast<size_t>(rows) * per_row; ++n) acc[n] = _mm512_setzero_ps();
  for (int b0 = 0; b0 < total; b0 += kKBlocks) {
    const int b1 = std::min(total, b0 + kKBlocks);
    for (int k = 0; k < kAccumulators; ++k) {
      int r = rb;
      for (; r + kWRows <= re; r += kWRows) full(w, x, i0, r, b0, b1, k, acc + (r - rb) * per_row);
      for (; r < re; ++r) single(w, x, i0, r, b0, b1, k, acc + (r - rb) * per_row);
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

int gemm_int8_vnni_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  alignas(64) static thread_local __m512 acc[kMaxPanelRows * kXRows * kAccumulators];
  const Int8StagedX& xs = *static_cast<const Int8StagedX*>(x);
  for (int p = row_begin; p < row_end; p += kMaxPanelRows) {
    const int pe = std::min(row_end, p + kMaxPanelRows);
    for (int i0 = 0; i0 < m; i0 += kXRows) chunk(w, xs, i0, std::min(kXRows, m - i0), y, p, pe, acc);
  }
}

}  // namespace xft::engine
