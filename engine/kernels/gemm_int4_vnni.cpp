// Batch-invariant GEMM for int4 weights on AVX512-VNNI: many inputs against a
// panel of weight rows, each input's outputs bit for bit what gemv_int4_vnni
// gives it alone (both run gemv_int4_vnni_block.h's blocks: exact integer dots
// per group, the float steps per group in increasing order). Only the order
// of the work differs: each tile of 16 weight rows meets every chunk of
// eight inputs in turn while it sits in L1 (12 KiB of rows at 1536 inputs;
// L2 for the longest rows), one nibble masking serving the chunk's eight
// inputs, and the caller hands each thread panels of rows sized to stay in
// L2 (gemm_int4_vnni_panel_rows).
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemv_int4_vnni_block.h"

namespace xft::engine {
namespace {

using int4_vnni_block::run_rows;

// Inputs per pass over a tile: eight on the interleaved layout
// (tile_rows_wide), four where rows go to the AVX2 kernel, which takes four.
int inputs_per_chunk(const PackedWeight& w) { return w.int4_interleaved ? 8 : 4; }
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// The staged inputs j0 .. (their rows, scales and sums are contiguous per input).
Int4StagedX inputs_from(const PackedWeight& w, const Int4StagedX& xs, int j0) {
  Int4StagedX chunk = xs;
  chunk.x = static_cast<const int8_t*>(xs.x) + static_cast<size_t>(j0) * w.ld;
  chunk.unit_scale += static_cast<size_t>(j0) * w.groups * int4_x_blocks_per_group(w);
  chunk.group_sums += static_cast<size_t>(j0) * w.groups;
  return chunk;
}

// The chunk's rows [rb, re); with prefetch_next (the tile's first chunk)
// the next tile is asked into L2 on the way.
void rows_of_chunk(const PackedWeight& w, const Int4StagedX& chunk, int inputs, float* y, int rb, int re,
                   bool prefetch_next) {
  switch (inputs) {
    case 1: run_rows<1>(w, chunk, y, rb, re); break;
    case 2: run_rows<2>(w, chunk, y, rb, re); break;
    case 3: run_rows<3>(w, chunk, y, rb, re); break;
    case 4: run_rows<4>(w, chunk, y, rb, re); break;
    case 5: run_rows<5>(w, chunk, y, rb, re, prefetch_next); break;
    case 6: run_rows<6>(w, chunk, y, rb, re, prefetch_next); break;
    case 7: run_rows<7>(w, chunk, y, rb, re, prefetch_next); break;
    default: run_rows<8>(w, chunk, y, rb, re, prefetch_next); break;
  }
}

}  // namespace

int gemm_int4_vnni_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kInt4TileRows * kInt4TileRows, kInt4TileRows, kMaxPanelRows));
}

void gemm_int4_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  const int per_chunk = inputs_per_chunk(w);
  for (int r0 = row_begin; r0 < row_end;) {
    const int r1 = std::min(row_end, (r0 / kInt4TileRows + 1) * kInt4TileRows);
    for (int j0 = 0; j0 < m; j0 += per_chunk) {
      const int inputs = std::min(per_chunk, m - j0);
      rows_of_chunk(w, inputs_from(w, xs, j0), inputs, y + static_cast<size_t>(j0) * w.out, r0, r1, j0 == 0);
    }
    r0 = r1;
  }
}

}  // namespace xft::engine
