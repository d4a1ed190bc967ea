// The steps of the AVX512-VNNI int8 kernels, shared by the decode kernel
// (gemv_int8_vnni.cpp) and its batch-invariant GEMM (gemm_int8_vnni.cpp): a
// tile of 16 weight rows (int8_tiled, linear_internal.h) against up to
// kInt8TileMaxInputs inputs, each input's outputs depending on the row and
// that input alone, so both give an input bit for bit the same result
// (kernels_rows_independent_test checks it). Per row and input block b (64
// inputs, x quantized per block, stage_x_int8): the exact int32 dot of the
// block in the row's lane (the q + 128 offset cancelled by starting every
// lane at -128 · Σ x_q), converted to float exactly (|dot| <= 64 · 127 · 127
// < 2^24) and added times the block's x scale by one FMA, blocks in
// increasing order; at the end times the row's scale, plus the bias.
#pragma once

// GCC 12's avx512fintrin.h reads its own undefined vectors (false positives).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/linear_internal.h"

#define XFT_INT8_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")))

namespace xft::engine::int8_vnni_tile {

constexpr int kInt8TileMaxInputs = 8;

// acc + the dots of `weights` (u8, one row per lane) with the four int8 x at
// x broadcast to every lane; the broadcast folded into the instruction
// ({1to16}: GCC would keep it a separate vpbroadcastd).
XFT_INT8_VNNI inline __m512i dot_four_x(__m512i acc, __m512i weights, const int8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(weights), "m"(*reinterpret_cast<const int32_t(*)[1]>(x)));
  return acc;
}

// Independent integer chains per input and block: enough vpdpbusd in flight
// to cover its latency whatever M is (the chains are summed exactly).
template <int M>
constexpr int kChains = M == 1 ? 4 : M == 2 ? 2 : 1;

// Lanes of rows [first, last) of the tile starting at r0.
inline __mmask16 row_mask(int r0, int first, int last) {
  return static_cast<__mmask16>(((1u << (last - r0)) - 1) & ~((1u << (first - r0)) - 1));
}

// The 16 rows r0 .. r0 + 15 of a tile against M inputs (x: the staged
// inputs, input j at row j), outputs stored for rows [rb, re): the tile's
// bytes read as one sequential stream, block after block.
template <int M>
XFT_INT8_VNNI inline void tile_rows(const PackedWeight& w, const Int8StagedX& x, float* y, int r0, int rb, int re) {
  constexpr int kC = kChains<M>;
  const int blocks = w.ld / kInt8Block;
  const uint8_t* tile = int8_tile(w, r0);
  __m512 acc[M];
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) acc[j] = _mm512_setzero_ps();
  for (int b = 0; b < blocks; ++b) {
    const uint8_t* runs = tile + static_cast<size_t>(b) * kInt8TileRows * kInt8Block;
    __m512i dot[M][kC];
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      dot[j][0] = _mm512_set1_epi32(x.neg_comp[static_cast<size_t>(j) * blocks + b]);
      #pragma GCC unroll 4
      for (int c = 1; c < kC; ++c) dot[j][c] = _mm512_setzero_si512();
    }
    #pragma GCC unroll 16
    for (int run = 0; run < kInt8Block / 4; ++run) {
      const __m512i v = _mm512_loadu_si512(runs + 64 * run);
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) {
        const int8_t* xq = x.q + static_cast<size_t>(j) * w.ld + b * kInt8Block + 4 * run;
        dot[j][run % kC] = dot_four_x(dot[j][run % kC], v, xq);
      }
    }
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      __m512i d = dot[j][0];
      #pragma GCC unroll 4
      for (int c = 1; c < kC; ++c) d = _mm512_add_epi32(d, dot[j][c]);
      const __m512 sx = _mm512_set1_ps(x.scale[static_cast<size_t>(j) * blocks + b]);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sx, acc[j]);
    }
  }
  const int first = std::max(rb, r0), last = std::min(re, r0 + kInt8TileRows);
  const __mmask16 mask = row_mask(r0, first, last);
  const __m512 scale = _mm512_maskz_loadu_ps(mask, w.scales.data() + r0);
  const __m512 bias = w.bias.empty() ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, w.bias.data() + r0);
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) {
    _mm512_mask_storeu_ps(y + static_cast<size_t>(j) * w.out + r0, mask, _mm512_add_ps(_mm512_mul_ps(acc[j], scale), bias));
  }
}

// Rows [rb, re) of M inputs, tile by tile.
template <int M>
XFT_INT8_VNNI inline void run_rows(const PackedWeight& w, const Int8StagedX& x, float* y, int rb, int re) {
  for (int r0 = rb / kInt8TileRows * kInt8TileRows; r0 < re; r0 += kInt8TileRows) tile_rows<M>(w, x, y, r0, rb, re);
}

// Rows [rb, re) of m (1 .. kInt8TileMaxInputs) inputs.
inline void run_inputs(const PackedWeight& w, const Int8StagedX& x, int m, float* y, int rb, int re) {
  switch (m) {
    case 1: run_rows<1>(w, x, y, rb, re); break;
    case 2: run_rows<2>(w, x, y, rb, re); break;
    case 3: run_rows<3>(w, x, y, rb, re); break;
    case 4: run_rows<4>(w, x, y, rb, re); break;
    case 5: run_rows<5>(w, x, y, rb, re); break;
    case 6: run_rows<6>(w, x, y, rb, re); break;
    case 7: run_rows<7>(w, x, y, rb, re); break;
    default: run_rows<8>(w, x, y, rb, re); break;
  }
}

}  // namespace xft::engine::int8_vnni_tile
