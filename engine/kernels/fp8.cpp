#include "engine/kernels/fp8.h"

#include "engine/kernels/ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace xft::engine {
namespace {

float decode_e4m3(uint8_t bits) {
  const int exponent = (bits >> 3) & 15, mantissa = bits & 7;
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 · 2^-6
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

}  // namespace

const float* e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = decode_e4m3(static_cast<uint8_t>(b));
    return t;
  }();
  return table.data();
}

uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (magnitude >= kE4m3Max) return sign | 0x7E;
  int code = 0;
  if (magnitude < std::ldexp(1.0f, -6)) {
    // Subnormal steps of 2^-9; rounding up to 8 gives the smallest normal, code 0x08.
    code = static_cast<int>(std::nearbyint(std::ldexp(magnitude, 9)));
  } else {
    int exponent = 0;
    std::frexp(magnitude, &exponent);  // magnitude = f · 2^exponent, f in [0.5, 1)
    const int unbiased = exponent - 1;
    // Mantissa in eighths, exact in float; nearbyint rounds ties to even, and
    // a carry to 8 moves the code into the next binade as it should.
    const float eighths = std::ldexp(magnitude, 3 - unbiased) - 8.0f;
    code = ((unbiased + 7) << 3) + static_cast<int>(std::nearbyint(eighths));
  }
  if (code > 0x7E) code = 0x7E;
  return sign | static_cast<uint8_t>(code);
}

Fp8Quantized quantize_fp8(const float* w, int rows, int in, int block) {
  Fp8Quantized out;
  out.block = block;
  const int row_blocks = (rows + block - 1) / block, col_blocks = (in + block - 1) / block;
  out.q.resize(static_cast<size_t>(rows) * in);
  out.scale.resize(static_cast<size_t>(row_blocks) * col_blocks);
  for (int rb = 0; rb < row_blocks; ++rb) {
    const int r_end = std::min(rows, (rb + 1) * block);
    for (int cb = 0; cb < col_blocks; ++cb) {
      const int c_end = std::min(in, (cb + 1) * block);
      float amax = 0.0f;
      for (int r = rb * block; r < r_end; ++r) {
        for (int c = cb * block; c < c_end; ++c) amax = std::max(amax, std::fabs(w[static_cast<size_t>(r) * in + c]));
      }
      const float scale = amax > 0.0f ? amax / kE4m3Max : 1.0f;
      out.scale[static_cast<size_t>(rb) * col_blocks + cb] = scale;
      for (int r = rb * block; r < r_end; ++r) {
        for (int c = cb * block; c < c_end; ++c) {
          const size_t i = static_cast<size_t>(r) * in + c;
          out.q[i] = float_to_e4m3(w[i] / scale);
        }
      }
    }
  }
  return out;
}

void pack_fp8(PackedWeight& w, const std::vector<LinearBlock>& blocks) {
  const int block_cols = blocks.front().fp8->block_cols;
  if (block_cols <= 0 || block_cols % kRowAlign != 0) {
    throw std::invalid_argument("Linear: fp8 block columns must be a positive multiple of 64");
  }
  w.ld = (w.in + kRowAlign - 1) / kRowAlign * kRowAlign;
  w.fp8_block_cols = block_cols;
  w.fp8_col_blocks = (w.in + block_cols - 1) / block_cols;
  w.data.resize(static_cast<size_t>(w.out) * w.ld);
  std::memset(w.data.as<uint8_t>(), 0, static_cast<size_t>(w.out) * w.ld);
  w.fp8_scale.clear();
  w.fp8_scale_row.resize(w.out);
  int r = 0;
  for (const LinearBlock& block : blocks) {
    const Fp8Rows& src = *block.fp8;
    if (src.block_cols != block_cols || src.block_rows <= 0) {
      throw std::invalid_argument("Linear: fused fp8 blocks must share one block width");
    }
    const int first_scale_row = static_cast<int>(w.fp8_scale.size()) / w.fp8_col_blocks;
    const int scale_rows = (block.rows + src.block_rows - 1) / src.block_rows;
    w.fp8_scale.insert(w.fp8_scale.end(), src.scale, src.scale + static_cast<size_t>(scale_rows) * w.fp8_col_blocks);
    for (int i = 0; i < block.rows; ++i, ++r) {
      std::memcpy(w.data.as<uint8_t>() + static_cast<size_t>(r) * w.ld, src.q + static_cast<size_t>(i) * w.in, w.in);
      w.fp8_scale_row[r] = first_scale_row + i / src.block_rows;
    }
  }
  w.fp8_scale_bf16_dot.resize(w.fp8_scale.size());
  for (size_t i = 0; i < w.fp8_scale.size(); ++i) w.fp8_scale_bf16_dot[i] = w.fp8_scale[i] * kFp8Bf16ScaleBack;
  w.fp8_row_exponent_zero.resize(w.out);
  for (int row = 0; row < w.out; ++row) {
    const uint8_t* q = w.row<uint8_t>(row);
    w.fp8_row_exponent_zero[row] = std::any_of(q, q + w.ld, [](uint8_t b) { return (b & 0x78) == 0; });
  }
}

const void* stage_x_fp8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool) {
  if (w.use_bf16_dot) {  // only where the CPU has AVX512-BF16
    buffer.resize(static_cast<size_t>(m) * w.ld * sizeof(uint16_t));
    stage_rows(pool, m, [&](int r0, int r1) {
      stage_x_fp8_avx512bf16(w, x + static_cast<size_t>(r0) * w.in, r1 - r0,
                             buffer.as<uint16_t>() + static_cast<size_t>(r0) * w.ld);
    });
    return buffer.as<void>();
  }
  buffer.resize(static_cast<size_t>(m) * w.ld * sizeof(float));
  stage_rows(pool, m, [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r) {
      const float* src = x + static_cast<size_t>(r) * w.in;
      float* dst = buffer.as<float>() + static_cast<size_t>(r) * w.ld;
      for (int c = 0; c < w.in; ++c) dst[c] = src[c] * kFp8XScale;
      std::memset(dst + w.in, 0, sizeof(float) * (w.ld - w.in));
    }
  });
  return buffer.as<void>();
}

void fp8_dequantize_row(const PackedWeight& w, int r, float* dst) {
  const uint8_t* q = w.row<uint8_t>(r);
  const float* scale = fp8_row_scales(w, r);
  const float* table = e4m3_table();
  for (int c = 0; c < w.ld; ++c) dst[c] = table[q[c]] * scale[c / w.fp8_block_cols];
}

}  // namespace xft::engine
