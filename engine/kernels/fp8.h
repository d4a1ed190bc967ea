// FP8 weights as Qwen's FP8 checkpoints publish them (quant_method fp8,
// fmt e4m3, weight_block_size [block_rows, block_cols]): each weight is one
// OCP float8 e4m3fn byte (sign, 4 exponent bits of bias 7, 3 mantissa bits;
// no infinities, 0x7F/0xFF are NaN, largest finite 448), and each
// block_rows x block_cols block of the matrix has one float32 scale
// (weight_scale_inv): weight = e4m3 value * scale of its block. Edge blocks
// are partial (ceil division).
//
// Packed layout (PackedWeight, format fp8): the bytes as stored, [out][ld],
// padding bytes 0 (+0.0); fp8_scale holds the scale rows the Linear's blocks
// brought, and row r's scale for column block b (inputs [b * block_cols,
// (b + 1) * block_cols)) is fp8_scale[fp8_scale_row[r] * fp8_col_blocks + b].
// Fused blocks (q/k/v, gate/up) keep their own row blocking that way. A
// decode step reads ld bytes per row plus 4 bytes per block.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/linear.h"
#include "engine/kernels/linear_internal.h"

namespace xft::engine {

constexpr float kE4m3Max = 448.0f;

// The decode kernels read x staged times kFp8XScale (stage_x_fp8). The SIMD
// kernels place an e4m3 byte's bits in an f32 without rebiasing its
// exponent, which is its value times 2^-120: no multiply per weight (the
// FMA pipes are the limit), and with x scaled up every product stays a
// normal float; the block scale carries the powers of two back, so the sums
// are those of the plain values. Activations stay far below 2^64.
constexpr float kFp8XScale = 0x1p64f;
constexpr float kFp8SimdScaleBack = 0x1p56f;   // 2^120 / 2^64
constexpr float kFp8TableScaleBack = 0x1p-64f; // the scalar kernel's table holds the values themselves
constexpr float kFp8Bf16ScaleBack = 0x1p40f;   // bf16 weights times 2^-104: 2^104 / 2^64

// The 256 e4m3 values as float (NaN for 0x7F and 0xFF).
const float* e4m3_table();
inline float e4m3_to_float(uint8_t bits) { return e4m3_table()[bits]; }

// Round to nearest, ties to even, saturating at ±448 (NaN stays NaN): what
// PyTorch's clamp-then-cast to float8_e4m3fn gives.
uint8_t float_to_e4m3(float value);

// Row r's scales, one per column block.
inline const float* fp8_row_scales(const PackedWeight& w, int r) {
  return w.fp8_scale.data() + static_cast<size_t>(w.fp8_scale_row[r]) * w.fp8_col_blocks;
}

// Fills w's data, ld, scales and block shape from fp8 blocks that share one
// block_cols. Throws std::invalid_argument on inconsistent blocks (the
// loaders check first and report a line).
void pack_fp8(PackedWeight& w, const std::vector<LinearBlock>& blocks);

// Blocks of --dtype fp8 quantized at load (an unquantized checkpoint):
// kFp8LoadBlock x kFp8LoadBlock, as Qwen's FP8 checkpoints block them.
constexpr int kFp8LoadBlock = 128;

// Owning form of an Fp8Rows view.
struct Fp8Quantized {
  std::vector<uint8_t> q;
  std::vector<float> scale;
  int block = 0;
  Fp8Rows view() const { return Fp8Rows{q.data(), scale.data(), block, block}; }
};

// rows x in floats as e4m3 with one scale per block x block block: the
// block's largest magnitude maps to 448 (an all-zero block gets scale 1),
// each weight rounded to nearest even, as FP8 checkpoints are made.
Fp8Quantized quantize_fp8(const float* w, int rows, int in, int block);

// m rows of w.in floats times kFp8XScale into ld-float rows (padding 0);
// with w.use_bf16_dot, ld-bf16 rows with each 64-input chunk laid out as its
// 32 even inputs then its 32 odd ones (gemv_fp8_avx512bf16.cpp).
const void* stage_x_fp8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool = nullptr);
// Its bf16 layout, m rows of ld words into dst (gemv_fp8_avx512bf16.cpp;
// the same bits as f32_to_bf16 on each value times kFp8XScale).
void stage_x_fp8_avx512bf16(const PackedWeight& w, const float* x, int m, uint16_t* dst);

// Row r dequantized: ld floats, padding 0.
void fp8_dequantize_row(const PackedWeight& w, int r, float* dst);

}  // namespace xft::engine
