// Batch-invariant GEMM for int4 weights on AVX512-BF16: many inputs against a
// block of weight rows, each input's outputs bit for bit what gemv_int4_avx512
// gives it alone (gemm_int4_avx512_dot.h: the same unpacking, per-group sums,
// group steps in increasing order and final sum). Only the blocking differs:
//  * a microkernel of kXRows inputs x kWRows weight rows unpacks each unit of
//    nibbles once for kXRows inputs (the decode kernel unpacks it again per 4
//    inputs) and loads each input's slots once for kWRows rows;
//  * the outputs' accumulators stay in registers over the whole row;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_int4_avx512_panel_rows) while every chunk of inputs passes over
//    them, the chunk's rows staying in L1.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_int4_avx512_dot.h"

namespace xft::engine {
namespace {

using int4_avx512_dot::add_group;
using int4_avx512_dot::dot;
using int4_avx512_dot::finish;
using int4_avx512_dot::group_params;
using int4_avx512_dot::GroupParams;
using int4_avx512_dot::unpack_half_unit;
using int4_avx512_dot::unpack_unit;

constexpr int kXRows = 4;      // inputs per microkernel
constexpr int kWRows = 2;      // weight rows per microkernel: 8 outputs, 16 group sums
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// R weight rows from r0 x M inputs from i0, the whole row: y's R x M outputs.
template <int R, int M>
XFT_AVX512BF16 void micro(const PackedWeight& w, const Int4StagedX& xs, int i0, int r0, float* y) {
  const uint16_t* x = static_cast<const uint16_t*>(xs.x) + static_cast<size_t>(i0) * w.ld;
  const float* sums = xs.group_sums + static_cast<size_t>(i0) * w.groups;
  const int full_units = w.group_len / 64;
  const bool half_unit = w.group_len % 64 != 0;
  __m512 a[R][M];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) a[i][j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes[R];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) bytes[i] = w.int4_row(r0 + i) + static_cast<size_t>(g) * w.group_len / 2;
    const uint16_t* xg = x + static_cast<size_t>(g) * w.group_len;
    __m512 d0[R][M], d1[R][M];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) d0[i][j] = d1[i][j] = _mm512_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      __m512i lo[R], hi[R];
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) unpack_unit(bytes[i] + 32 * u, lo[i], hi[i]);
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) {
        const uint16_t* xj = xg + static_cast<size_t>(j) * w.ld + 64 * u;
        #pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          d0[i][j] = dot(d0[i][j], lo[i], xj);
          d1[i][j] = dot(d1[i][j], hi[i], xj + 32);
        }
      }
    }
    if (half_unit) {
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const __m512i wv = unpack_half_unit(bytes[i] + 32 * full_units);
        #pragma GCC unroll 8
        for (int j = 0; j < M; ++j) d0[i][j] = dot(d0[i][j], wv, xg + static_cast<size_t>(j) * w.ld + 64 * full_units);
      }
    }
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const GroupParams p = group_params(w, r0 + i, g);
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) a[i][j] = add_group(a[i][j], d0[i][j], d1[i][j], p, sums[static_cast<size_t>(j) * w.groups + g]);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) y[static_cast<size_t>(i0 + j) * w.out + r0 + i] = finish(w, r0 + i, a[i][j]);
}

using Micro = void (*)(const PackedWeight&, const Int4StagedX&, int, int, float*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    case 3: return micro<R, 3>;
    default: return micro<R, 4>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re).
void chunk(const PackedWeight& w, const Int4StagedX& xs, int i0, int mc, float* y, int rb, int re) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  int r = rb;
  for (; r + kWRows <= re; r += kWRows) full(w, xs, i0, r, y);
  for (; r < re; ++r) single(w, xs, i0, r, y);
}

}  // namespace

int gemm_int4_avx512_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_int4_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  for (int i0 = 0; i0 < m; i0 += kXRows) chunk(w, xs, i0, std::min(kXRows, m - i0), y, row_begin, row_end);
}

}  // namespace xft::engine
