// 4-bit weights: quantization at load (round to nearest, a scale and a zero
// point per group of input columns) and the packed layout the decode kernels
// stream.
//
// Packed layout (PackedWeight, format int4). The input columns are put in
// group order (GPTQ desc_act lists a row's group in g_idx, so one group's
// columns are scattered; sorting them makes every group contiguous) and each
// group is padded with zero activations to the same group_len, a multiple of
// 32: slot g * group_len + k holds the k-th input of group g (slot_input maps
// back). A row is ld / 2 bytes; group g starts at byte g * group_len / 2 and
// is cut into units of 64 slots (32 bytes), the last unit of 32 slots (16
// bytes) when group_len % 64 == 32:
//   64-slot unit: byte j (0..31) holds slot j in its low nibble, slot 32 + j in its high one
//   32-slot unit: byte j (0..15) holds slot j in its low nibble, slot 16 + j in its high one
// so one byte load, a mask and a shift give 32 consecutive slots, the width
// of one vdpbf16ps (32 pairs) or four 8-wide float FMAs. Scales (f16) and
// zeros (u8) are in blocks of kInt4RowBlock rows, [out / 8][groups][8] (out
// rounded up; int4_param_index), so one 16-byte load gives the scales of
// eight rows for a group, one vector of the AVX2 kernel; a decode step reads
// ld / 2 + 3 · groups bytes per row.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/linear.h"
#include "engine/kernels/linear_internal.h"

namespace xft::engine {

constexpr int kInt4RowBlock = 8;

// Index of row r's group g in PackedWeight::group_scale / group_zero.
inline size_t int4_param_index(const PackedWeight& w, int r, int g) {
  return (static_cast<size_t>(r / kInt4RowBlock) * w.groups + g) * kInt4RowBlock + r % kInt4RowBlock;
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
// int4 blocks that share one group_of. Throws std::invalid_argument on
// inconsistent blocks (the loaders check first and report a line).
void pack_int4(PackedWeight& w, const std::vector<LinearBlock>& blocks);

// Nibble of slot s (0 <= s < ld) of packed row `row`.
uint8_t int4_nibble(const PackedWeight& w, const uint8_t* row, int s);

// Row r dequantized in slot order: ld floats, padding slots 0.
void int4_dequantize_slots(const PackedWeight& w, int r, float* dst);

// One input row of w.in floats into ld slots (padding 0).
void int4_gather_x(const PackedWeight& w, const float* x, float* dst);

}  // namespace xft::engine
