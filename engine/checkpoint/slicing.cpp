#include "engine/checkpoint/slicing.h"

#include <cmath>
#include <cstring>

#include "engine/checkpoint/layout.h"

namespace xft::engine {
namespace {

Expected<void> resolve_axis(const std::string& name, const char* axis, int64_t size, Slice slice,
                            int64_t& begin, int64_t& end) {
  begin = slice.begin;
  end = slice.end < 0 ? size : slice.end;
  if (begin < 0 || begin > end || end > size) {
    return make_error("tensor " + name + ": " + axis + " slice [" + std::to_string(slice.begin) +
                      "," + std::to_string(slice.end) + ") is outside [0," + std::to_string(size) +
                      ")");
  }
  return {};
}

}  // namespace

Expected<Region> resolve_region(const std::string& name, const std::vector<int64_t>& shape,
                                Slice rows, Slice cols) {
  // A tensor of more dimensions (conv1d [C, 1, K], fused experts [E, rows,
  // in]) is sliced as the matrix of its leading dimensions by its last.
  std::vector<int64_t> matrix = shape;
  if (shape.size() > 2) {
    int64_t leading = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) leading *= shape[i];
    matrix = {leading, shape.back()};
  }
  Region region;
  int64_t row_count = matrix.empty() ? 1 : matrix[0];
  auto ok = resolve_axis(name, "row", row_count, rows, region.row_begin, region.row_end);
  if (!ok) return ok.error();
  if (matrix.size() == 2) {
    region.cols = matrix[1];
    ok = resolve_axis(name, "column", matrix[1], cols, region.col_begin, region.col_end);
    if (!ok) return ok.error();
  }
  return region;
}

float bf16_bits_to_f32(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t f32_to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // keep NaN a NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

float f16_bits_to_f32(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {  // subnormal half: value = mantissa * 2^-24, exact in float
    float value = std::ldexp(float(mantissa), -24);
    std::memcpy(&out, &value, 4);
    out |= sign;
  }
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

}  // namespace xft::engine
