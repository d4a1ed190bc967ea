// Resolving a (rows, cols) Slice request against a tensor's shape; shared
// by the file-backed and the generated weight sources.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"

namespace xft::engine {

struct Region {
  int64_t row_begin = 0, row_end = 0;  // rows of a 2-D tensor (elements of a 1-D one)
  int64_t col_begin = 0, col_end = 1;
  int64_t cols = 1;                    // row length of the full tensor
  int64_t rows_out() const { return row_end - row_begin; }
  int64_t cols_out() const { return col_end - col_begin; }
  int64_t count() const { return rows_out() * cols_out(); }
};

Expected<Region> resolve_region(const std::string& name, const std::vector<int64_t>& shape,
                                Slice rows, Slice cols);

// Numeric conversions, round-to-nearest-even where precision is lost.
float bf16_bits_to_f32(uint16_t bits);
uint16_t f32_to_bf16_bits(float value);
float f16_bits_to_f32(uint16_t bits);

}  // namespace xft::engine
