// The AMX GEMM, one template over the tile unit (amx_tiles.h): instantiated
// for the real instructions in amx_hardware.cpp and for the emulator in
// amx_linear.cpp. Not part of the public API.
//
// Blocking: weight tiles come in panels of one block of 16 output rows by
// the whole padded input (AmxPackedWeight's layout, or an int4 panel
// dequantized by the caller); two blocks (32 outputs) at a time against up
// to 32 input rows: tiles 0..3 accumulate C (rows 0-15 / 16-31 x block 0 /
// 1), 4..5 hold A (x rows), 6..7 hold B (weight). A thread keeps its two
// panels in L2 while it walks all row chunks of x, so the weight comes from
// memory once per call whatever m is.
//
// Invariance: every output (row i, column n) is zero, then the tiles of the
// input in ascending order, each one TDPBF16PS / TDPBSSD whose result for row
// i reads only row i of A; the chunk row i falls in, how many rows share its
// tile and how the tiles are configured change nothing in that sequence, so
// a row's bits are the same for every m (tests/unit/engine/kernels_amx_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/amx_tiles.h"

namespace xft::engine {

// One thread's share of an AMX call: output blocks [block_begin, block_end).
struct AmxGemmTask {
  const uint8_t* x = nullptr;      // staged rows: bf16 or int8, zero padded to k_tiles tiles
  size_t x_stride = 0;             // bytes between rows of x
  const float* x_scale = nullptr;  // int8: per row
  int m = 0;
  int k_tiles = 0;
  float* y = nullptr;  // [m][out]
  int out = 0;
  const float* bias = nullptr;       // [out] or null
  const float* row_scale = nullptr;  // int8: per output row
  int block_begin = 0, block_end = 0;
};

enum class AmxDot { bf16, int8 };

constexpr int kAmxBlockRows = 16;     // outputs per weight tile (B has 16 columns)
constexpr int kAmxTileBytes = 1024;   // 16 rows x 64 bytes
constexpr int kAmxChunkRows = 32;     // x rows per pass: two A tiles

// Tile config for a chunk of r0 (1..16) + r1 (0..16) x rows; tiles of the
// absent second half stay unconfigured (any use would fault).
inline AmxTileConfig amx_chunk_config(int r0, int r1) {
  AmxTileConfig config;
  for (int t : {0, 1, 4}) amx_set_tile(config, t, r0, kAmxRowBytes);
  if (r1 > 0) {
    for (int t : {2, 3, 5}) amx_set_tile(config, t, r1, kAmxRowBytes);
  }
  for (int t : {6, 7}) amx_set_tile(config, t, kAmxMaxRows, kAmxRowBytes);
  return config;
}

// Writes one accumulator tile (stored as 16 x 16 words) to y rows
// [row0, row0 + rows) and the outputs of block `block`.
template <AmxDot dot>
void amx_finish_tile(const AmxGemmTask& task, const uint8_t* words, int row0, int rows, int block) {
  const int col0 = block * kAmxBlockRows;
  const int cols = std::min(kAmxBlockRows, task.out - col0);
  for (int i = 0; i < rows; ++i) {
    float* y = task.y + static_cast<size_t>(row0 + i) * task.out + col0;
    for (int j = 0; j < cols; ++j) {
      float value;
      if constexpr (dot == AmxDot::bf16) {
        std::memcpy(&value, words + (i * kAmxBlockRows + j) * 4, 4);
      } else {
        int32_t acc;
        std::memcpy(&acc, words + (i * kAmxBlockRows + j) * 4, 4);
        value = static_cast<float>(acc) * task.x_scale[row0 + i] * task.row_scale[col0 + j];
      }
      y[j] = task.bias ? value + task.bias[col0 + j] : value;
    }
  }
}

// C(Ct) += A(At) . B(Bt) with the format's instruction.
template <class Tiles, AmxDot dot, int C, int A, int B>
inline void amx_mul() {
  if constexpr (dot == AmxDot::bf16) Tiles::template dpbf16ps<C, A, B>();
  else Tiles::template dpbssd<C, A, B>();
}

// panel(block, slot) returns block's weight tiles, [k_tiles][1024 bytes];
// slot 0 or 1 tells a caller that builds panels which buffer to fill.
template <class Tiles, AmxDot dot, class Panel>
void amx_gemm(const AmxGemmTask& task, Panel&& panel) {
  alignas(64) uint8_t words[4][kAmxTileBytes];
  int configured_r0 = -1, configured_r1 = -1;
  for (int block = task.block_begin; block < task.block_end; block += 2) {
    const bool pair = block + 1 < task.block_end;
    const uint8_t* b0 = panel(block, 0);
    const uint8_t* b1 = pair ? panel(block + 1, 1) : nullptr;
    for (int m0 = 0; m0 < task.m; m0 += kAmxChunkRows) {
      const int r0 = std::min(kAmxMaxRows, task.m - m0);
      const int r1 = std::clamp(task.m - m0 - kAmxMaxRows, 0, kAmxMaxRows);
      if (r0 != configured_r0 || r1 != configured_r1) {
        Tiles::configure(amx_chunk_config(r0, r1));
        configured_r0 = r0;
        configured_r1 = r1;
      }
      Tiles::template zero<0>();
      if (pair) Tiles::template zero<1>();
      if (r1) {
        Tiles::template zero<2>();
        if (pair) Tiles::template zero<3>();
      }
      const uint8_t* a0 = task.x + static_cast<size_t>(m0) * task.x_stride;
      const uint8_t* a1 = a0 + static_cast<size_t>(kAmxMaxRows) * task.x_stride;
      for (int kt = 0; kt < task.k_tiles; ++kt) {
        const size_t k_bytes = static_cast<size_t>(kt) * kAmxRowBytes;
        const size_t tile_offset = static_cast<size_t>(kt) * kAmxTileBytes;
        Tiles::template load<4>(a0 + k_bytes, task.x_stride);
        if (r1) Tiles::template load<5>(a1 + k_bytes, task.x_stride);
        Tiles::template load<6>(b0 + tile_offset, kAmxRowBytes);
        amx_mul<Tiles, dot, 0, 4, 6>();
        if (r1) amx_mul<Tiles, dot, 2, 5, 6>();
        if (pair) {
          Tiles::template load<7>(b1 + tile_offset, kAmxRowBytes);
          amx_mul<Tiles, dot, 1, 4, 7>();
          if (r1) amx_mul<Tiles, dot, 3, 5, 7>();
        }
      }
      constexpr size_t kWordRow = kAmxBlockRows * 4;
      Tiles::template store<0>(words[0], kWordRow);
      amx_finish_tile<dot>(task, words[0], m0, r0, block);
      if (pair) {
        Tiles::template store<1>(words[1], kWordRow);
        amx_finish_tile<dot>(task, words[1], m0, r0, block + 1);
      }
      if (r1) {
        Tiles::template store<2>(words[2], kWordRow);
        amx_finish_tile<dot>(task, words[2], m0 + kAmxMaxRows, r1, block);
        if (pair) {
          Tiles::template store<3>(words[3], kWordRow);
          amx_finish_tile<dot>(task, words[3], m0 + kAmxMaxRows, r1, block + 1);
        }
      }
    }
  }
  Tiles::release();
}

}  // namespace xft::engine
