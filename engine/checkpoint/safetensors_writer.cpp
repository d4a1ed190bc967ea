#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>

#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/safetensors.h"

namespace xft::engine {
namespace {

struct FileCloser {
  void operator()(FILE* file) const { std::fclose(file); }
};

// Rows per read so that a large tensor never sits in memory whole.
int64_t rows_per_chunk(const std::vector<int64_t>& shape) {
  int64_t cols = shape.size() >= 2 ? std::max<int64_t>(shape.back(), 1) : 1;
  return std::max<int64_t>(1, (int64_t(1) << 24) / cols);
}

// One header entry: "NAME":{"dtype":..,"shape":..,"data_offsets":[BEGIN,END]}.
std::string header_entry(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                         uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape_text(shape) + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

using File = std::unique_ptr<FILE, FileCloser>;

// Creates PATH and writes the 8-byte length and the header, padded to 8 bytes.
Expected<File> open_with_header(const std::string& path, std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  File file(std::fopen(path.c_str(), "wb"));
  if (!file) return make_error("cannot create " + path + ": " + std::strerror(errno));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  if (std::fwrite(length, 1, 8, file.get()) != 8 ||
      std::fwrite(header.data(), 1, header.size(), file.get()) != header.size())
    return make_error("cannot write " + path + ": " + std::strerror(errno));
  return file;
}

}  // namespace

Expected<void> write_safetensors(const std::string& path, const std::vector<StoredTensor>& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (offset) header += ",";
    header += header_entry(t.name, dtype_name(t.dtype), t.shape, offset, offset + t.data.size());
    offset += t.data.size();
  }
  auto file = open_with_header(path, header + "}");
  if (!file) return file.error();
  bool ok = true;
  for (const auto& t : tensors) {
    ok = ok && std::fwrite(t.data.data(), 1, t.data.size(), file->get()) == t.data.size();
  }
  if (!ok || std::fflush(file->get()) != 0) return make_error("cannot write " + path + ": " + std::strerror(errno));
  return {};
}

Expected<void> write_safetensors_bf16(const std::string& path, const WeightSource& source,
                                      const std::vector<std::string>& names) {
  std::vector<TensorMeta> metas;
  std::string header = "{";
  uint64_t offset = 0;
  for (const auto& name : names) {
    auto meta = source.meta(name);
    if (!meta) return meta.error();
    const bool f32 = meta->dtype == DType::f32;
    uint64_t bytes = f32 ? 4 : 2;
    for (int64_t dim : meta->shape) bytes *= uint64_t(dim);
    if (metas.size()) header += ",";
    header += header_entry(name, f32 ? "F32" : "BF16", meta->shape, offset, offset + bytes);
    offset += bytes;
    metas.push_back(std::move(*meta));
  }
  auto file = open_with_header(path, header + "}");
  if (!file) return file.error();
  bool ok = true;
  for (const auto& meta : metas) {
    // Rows as slicing counts them: a vector's elements, else every dimension but the last.
    int64_t rows = meta.shape.empty() ? 1 : meta.shape[0];
    for (size_t i = 1; i + 1 < meta.shape.size(); ++i) rows *= meta.shape[i];
    int64_t step = rows_per_chunk(meta.shape);
    if (meta.dtype == DType::f32) {  // vectors only (Qwen3.5's A_log and gated norm)
      auto values = source.read_f32(meta.name);
      if (!values) return values.error();
      ok = std::fwrite(values->data(), 4, values->size(), file->get()) == values->size();
      continue;
    }
    for (int64_t row = 0; ok && row < rows; row += step) {
      auto values = source.read_bf16(meta.name, Slice{row, std::min(rows, row + step)});
      if (!values) return values.error();
      // The format is little-endian, as is every machine this runs on (x86-64, aarch64).
      ok = std::fwrite(values->data(), 2, values->size(), file->get()) == values->size();
    }
  }
  if (!ok || std::fflush(file->get()) != 0) {
    return make_error("cannot write " + path + ": " + std::strerror(errno));
  }
  return {};
}

}  // namespace xft::engine
