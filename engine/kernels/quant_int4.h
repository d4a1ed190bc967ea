// 4-bit weights: quantization at load (round to nearest, a scale and a zero
// point per group of input columns) and the packed layout the decode kernels
// stream.
//
// Packed layouts (PackedWeight, format int4). The input columns are put in
// group order (GPTQ desc_act lists a row's group in g_idx, so one group's
// columns are scattered; sorting them makes every group contiguous) and each
// group is padded with zero activations to the same group_len, a multiple of
// 32: slot g * group_len + k holds the k-th input of group g (slot_input maps
// back). ld = groups * group_len slots per row.
//
// Row-major (int4_interleaved false): a row is ld / 2 bytes; group g starts
// at byte g * group_len / 2 and is cut into units of 64 slots (32 bytes), the
// last unit of 32 slots (16 bytes) when group_len % 64 == 32:
//   64-slot unit: byte j (0..31) holds slot j in its low nibble, slot 32 + j in its high one
//   32-slot unit: byte j (0..15) holds slot j in its low nibble, slot 16 + j in its high one
// so one byte load, a mask and a shift give 32 consecutive slots, the width
// of one vdpbf16ps (32 pairs) or four 8-wide float FMAs. Scales (f16) and
// zeros (u8) are in blocks of kInt4RowBlock rows, [out / 8][groups][8] (out
// rounded up; int4_param_index), so one 16-byte load gives the scales of
// eight rows for a group, one vector of the AVX2 kernel.
//
// Interleaved (int4_interleaved true; the AVX512-VNNI kernel's, groups of at
// most 128 slots): tiles of kInt4TileRows (16) rows, out rounded up with zero
// rows. Tile t holds 16 · ld / 2 bytes from byte t · 8 · ld; its slots come
// eight at a time, and each eight slots s .. s + 7 (s a multiple of 8) of the
// 16 rows are 64 bytes, 4 per row:
//   byte 4i + k (row i of the tile, k 0..3) holds slot s + k in its low nibble, s + 4 + k in its high one
// so one 64-byte load holds four consecutive slots of 16 rows in each half
// of its nibbles: vpdpbusd against four broadcast x bytes leaves row i's
// partial dot in lane i, and a group's 16 dots need no reduction across
// lanes. Scales and zeros are in blocks of 16 rows, [out / 16][groups][16].
// A decode step reads ld / 2 + 3 · groups bytes per row in both layouts.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/linear.h"
#include "engine/kernels/linear_internal.h"

namespace xft::engine {

constexpr int kInt4RowBlock = 8;
constexpr int kInt4TileRows = 16;
// The largest group_len packed interleaved (the VNNI kernel's int32 dots and
// its one x block per group stop there).
constexpr int kInt4InterleavedMaxGroup = 128;

// Rows per block of PackedWeight::group_scale / group_zero.
inline int int4_param_rows(const PackedWeight& w) { return w.int4_interleaved ? kInt4TileRows : kInt4RowBlock; }

// Index of row r's group g in PackedWeight::group_scale / group_zero.
inline size_t int4_param_index(const PackedWeight& w, int r, int g) {
  const int rows = int4_param_rows(w);
  return (static_cast<size_t>(r / rows) * w.groups + g) * rows + r % rows;
}

// First byte of the interleaved tile holding row r.
inline const uint8_t* int4_tile(const PackedWeight& w, int r) {
  return w.data.as<uint8_t>() + static_cast<size_t>(r / kInt4TileRows) * kInt4TileRows * (w.ld / 2);
}

// Owning storage behind an Int4Rows view.
struct Int4Matrix {
  int rows = 0;
  int in = 0;
  int groups = 0;
  std::vector<uint8_t> q;          // [rows][in]
  std::vector<uint16_t> scale_f16; // [rows][groups]
  std::vector<uint8_t> zero;       // [rows][groups]
  std::vector<int32_t> group_of;   // [in]
  Int4Rows view() const { return Int4Rows{q.data(), scale_f16.data(), zero.data(), group_of.data(), groups}; }
};

// Round-to-nearest asymmetric quantization of float rows [rows][in] in
// groups of `group_size` consecutive columns (the last may be shorter):
// s = f16((max - min) / 15), z = clamp(round(-min / s), 0, 15),
// q = clamp(round(w / s) + z, 0, 15). Groups of zeros get s = 0 (exact).
Int4Matrix quantize_int4(const float* w, int rows, int in, int group_size);

// Fills w's data, ld, groups, group_len, scales, zeros and slot_input from
// int4 blocks that share one group_of; interleaved for the AVX512-VNNI
// kernel (w.use_int8_dot) when group_len <= kInt4InterleavedMaxGroup. Throws std::invalid_argument on
// inconsistent blocks (the loaders check first and report a line).
void pack_int4(PackedWeight& w, const std::vector<LinearBlock>& blocks);

// Nibble of slot s (0 <= s < ld) of row r.
uint8_t int4_nibble(const PackedWeight& w, int r, int s);

// Row r dequantized in slot order: ld floats, padding slots 0.
void int4_dequantize_slots(const PackedWeight& w, int r, float* dst);

// One input row of w.in floats into ld slots (padding 0).
void int4_gather_x(const PackedWeight& w, const float* x, float* dst);

}  // namespace xft::engine
