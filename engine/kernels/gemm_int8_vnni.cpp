// Batch-invariant GEMM for int8 weights on AVX512-VNNI: many inputs against a
// panel of weight rows, each input's outputs bit for bit what gemv_int8_vnni
// gives it alone (both run gemv_int8_vnni_tile.h's tiles: an exact integer
// dot per row and block, the float steps per block in increasing order).
// Only the order of the work differs: the caller hands each thread panels
// of rows sized to stay in L2 (gemm_int8_vnni_panel_rows), and each chunk of
// up to kInputsPerChunk inputs (16 KiB at 2048 inputs: L1) passes over the
// panel's tiles of 16 rows, one 64-byte weight load feeding a vpdpbusd per
// input of the chunk. Chunks outside, tiles inside: a prompt's staged
// inputs (1 MiB at 512 x 2048) would not stay in L2 for every tile.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemv_int8_vnni_tile.h"

namespace xft::engine {
namespace {

// Inputs per pass over a tile: eight vpdpbusd per weight load, and their
// eight accumulators (plus eight float ones) still in registers.
constexpr int kInputsPerChunk = int8_vnni_tile::kInt8TileMaxInputs;
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a panel's rows
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// The staged inputs j0 .. (their rows, compensations and scales are contiguous per input).
Int8StagedX inputs_from(const PackedWeight& w, const Int8StagedX& xs, int j0) {
  const size_t blocks = static_cast<size_t>(w.ld) / kInt8Block;
  Int8StagedX chunk = xs;
  chunk.q += static_cast<size_t>(j0) * w.ld;
  chunk.neg_comp += j0 * blocks;
  chunk.scale += j0 * blocks;
  return chunk;
}

}  // namespace

int gemm_int8_vnni_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kInt8TileRows * kInt8TileRows, kInt8TileRows, kMaxPanelRows));
}

void gemm_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const Int8StagedX& xs = *static_cast<const Int8StagedX*>(x);
  // Chunks of nearly equal size (33 inputs: 7, 7, 7, 6, 6), not a short
  // last one whose weight loads would each feed few vpdpbusd.
  const int chunks = (m + kInputsPerChunk - 1) / kInputsPerChunk;
  for (int c = 0, j0 = 0; c < chunks; ++c) {
    const int inputs = (m - j0) / (chunks - c) + ((m - j0) % (chunks - c) != 0);
    const Int8StagedX chunk = inputs_from(w, xs, j0);
    int8_vnni_tile::run_inputs(w, chunk, inputs, y + static_cast<size_t>(j0) * w.out, row_begin, row_end);
    j0 += inputs;
  }
}

}  // namespace xft::engine
