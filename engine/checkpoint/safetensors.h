// The safetensors format: 8-byte little-endian header length N, N bytes of
// JSON header {name: {dtype, shape, data_offsets}}, then the data section.
// The parser trusts nothing in the header: every size and offset is checked
// against the file before any byte of tensor data is touched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"

namespace xft::engine {

struct SafetensorsEntry {
  TensorMeta meta;
  uint64_t begin = 0;  // offsets within the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t data_start = 0;  // 8 + header length
  std::vector<SafetensorsEntry> tensors;  // in data order
};

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// Parses and validates the header of a file of `file_size` bytes whose first
// bytes are `prefix` (at least the 8-byte length plus the header when the
// file is that long). `path` prefixes every error message.
Expected<SafetensorsHeader> parse_safetensors_header(std::string_view prefix, uint64_t file_size,
                                                     const std::string& path);

// Writes `names` from `source` as bfloat16 into one safetensors file in the
// given order: compact header, no __metadata__, padded with spaces to a
// multiple of 8 (the layout the deterministic test model is hashed in).
// One tensor's bytes as stored (little-endian).
struct StoredTensor {
  std::string name;
  DType dtype = DType::bf16;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Writes whole in-memory tensors (any dtype) in the given order, laid out
// as write_safetensors_bf16 does.
Expected<void> write_safetensors(const std::string& path, const std::vector<StoredTensor>& tensors);

Expected<void> write_safetensors_bf16(const std::string& path, const WeightSource& source,
                                      const std::vector<std::string>& names);

}  // namespace xft::engine
