#include "engine/checkpoint/safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/layout.h"

namespace xft::engine {
namespace {

using json = nlohmann::json;

// The reference implementation refuses larger headers too; it bounds the
// memory a hostile file can make us allocate before anything is validated.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

Expected<DType> parse_dtype(const std::string& name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;  // GPTQ/AWQ packed nibbles, g_idx
  if (name == "F8_E4M3") return DType::f8_e4m3;  // FP8 checkpoints' weights
  return make_error("dtype " + name + " is not supported (supported: F32, F16, BF16, I32, F8_E4M3)");
}

bool is_count(const json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

// Multiplies without wrapping; false when the product exceeds 2^63.
bool checked_multiply(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > (uint64_t(1) << 63) / a) return false;
  out = a * b;
  return true;
}

Expected<SafetensorsEntry> parse_entry(const std::string& name, const json& value,
                                       uint64_t data_size, const std::string& path) {
  auto fail = [&](const std::string& problem) {
    return make_error(path + ": tensor " + name + ": " + problem);
  };
  if (!value.is_object()) return fail("header entry is not an object");
  if (!value.contains("dtype") || !value["dtype"].is_string()) return fail("dtype missing or not a string");
  if (!value.contains("shape") || !value["shape"].is_array()) return fail("shape missing or not a list");
  if (!value.contains("data_offsets") || !value["data_offsets"].is_array() ||
      value["data_offsets"].size() != 2 || !is_count(value["data_offsets"][0]) ||
      !is_count(value["data_offsets"][1])) {
    return fail("data_offsets must be a list of two non-negative integers");
  }
  SafetensorsEntry entry;
  entry.meta.name = name;
  auto dtype = parse_dtype(value["dtype"].get<std::string>());
  if (!dtype) return fail(dtype.error().message);
  entry.meta.dtype = *dtype;
  uint64_t bytes = dtype_size(*dtype);
  for (const json& dim : value["shape"]) {
    if (!is_count(dim) || dim.get<uint64_t>() > (uint64_t(1) << 62)) {
      return fail("shape " + value["shape"].dump() + " has an entry that is not a non-negative integer");
    }
    entry.meta.shape.push_back(int64_t(dim.get<uint64_t>()));
    if (!checked_multiply(bytes, dim.get<uint64_t>(), bytes)) {
      return fail("shape " + value["shape"].dump() + " is impossibly large");
    }
  }
  entry.begin = value["data_offsets"][0].get<uint64_t>();
  entry.end = value["data_offsets"][1].get<uint64_t>();
  std::string offsets = "[" + std::to_string(entry.begin) + "," + std::to_string(entry.end) + "]";
  if (entry.begin > entry.end) return fail("data_offsets " + offsets + " end before they begin");
  if (entry.end > data_size) {
    return fail("data_offsets " + offsets + " reach beyond the data section (" +
                std::to_string(data_size) + " bytes): truncated file or lying header");
  }
  if (entry.end - entry.begin != bytes) {
    return fail("shape " + shape_text(entry.meta.shape) + " of " + dtype_name(*dtype) + " needs " +
                std::to_string(bytes) + " bytes but data_offsets " + offsets + " hold " +
                std::to_string(entry.end - entry.begin));
  }
  return entry;
}

Expected<void> check_metadata(const json& metadata, const std::string& path) {
  if (!metadata.is_object()) return make_error(path + ": __metadata__ must be an object of strings");
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) {
      return make_error(path + ": __metadata__: " + key + " must be a string, got " + value.dump());
    }
  }
  return {};
}

// Tensors must tile the data section exactly, as the reference reader demands:
// an overlap would alias two tensors, a gap hides unaccounted bytes.
Expected<void> check_tiling(std::vector<SafetensorsEntry>& tensors, uint64_t data_size,
                            const std::string& path) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const auto& tensor : tensors) {
    if (tensor.begin < covered) {
      return make_error(path + ": tensor " + tensor.meta.name + ": data_offsets overlap tensor " +
                        previous->meta.name);
    }
    if (tensor.begin > covered) {
      return make_error(path + ": tensor " + tensor.meta.name + ": " +
                        std::to_string(tensor.begin - covered) +
                        " unaccounted bytes before its data_offsets");
    }
    covered = tensor.end;
    previous = &tensor;
  }
  if (covered != data_size) {
    return make_error(path + ": the data section has " + std::to_string(data_size) +
                      " bytes but the tensors account for " + std::to_string(covered));
  }
  return {};
}

}  // namespace

size_t dtype_size(DType dtype) {
  if (dtype == DType::f8_e4m3) return 1;
  return dtype == DType::f32 || dtype == DType::i32 ? 4 : 2;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
    case DType::f8_e4m3: return "F8_E4M3";
  }
  return "?";
}

Expected<SafetensorsHeader> parse_safetensors_header(std::string_view prefix, uint64_t file_size,
                                                     const std::string& path) {
  if (file_size < 8 || prefix.size() < 8) {
    return make_error(path + ": truncated: " + std::to_string(file_size) +
                      " bytes, too short for the 8-byte header length");
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | uint8_t(prefix[i]);
  if (header_size > file_size - 8) {
    return make_error(path + ": header length " + std::to_string(header_size) +
                      " exceeds the file size " + std::to_string(file_size) +
                      " (truncated file or not a safetensors file)");
  }
  if (header_size > kMaxHeaderBytes) {
    return make_error(path + ": header length " + std::to_string(header_size) +
                      " is over the 100 MB limit (not a safetensors file?)");
  }
  if (prefix.size() < 8 + header_size) {
    return make_error(path + ": internal error: header not fully read");
  }
  std::string_view text = prefix.substr(8, header_size);
  if (text.empty() || text[0] != '{') {
    return make_error(path + ": header does not start with '{' (not a safetensors file?)");
  }
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    return make_error(path + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) return make_error(path + ": header is not a JSON object");

  SafetensorsHeader out;
  out.data_start = 8 + header_size;
  uint64_t data_size = file_size - out.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      auto ok = check_metadata(value, path);
      if (!ok) return ok.error();
      continue;
    }
    auto entry = parse_entry(name, value, data_size, path);
    if (!entry) return entry.error();
    out.tensors.push_back(std::move(*entry));
  }
  auto tiled = check_tiling(out.tensors, data_size, path);
  if (!tiled) return tiled.error();
  return out;
}

}  // namespace xft::engine
