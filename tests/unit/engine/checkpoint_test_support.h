// Shared by the checkpoint tests: temp folders, golden files, and a raw
// safetensors writer that can produce any (also broken) file.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/atomic_file.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine::testing {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    path_ = fs::temp_directory_path() / ("xft-ckpt-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline std::vector<std::string> golden_names() {
  return {"qwen1-tiny-s5",     "qwen2-tiny-s7",   "qwen3-tiny-s11", "qwen3moe-tiny-s33",
          "qwen2moe-tiny-s37", "qwen35-tiny-s19", "qwen35moe-tiny-s33"};
}

inline nlohmann::json golden(const std::string& name) {
  std::ifstream in(xft::test::data_dir() + "/golden/" + name + ".json");
  EXPECT_TRUE(in.good()) << "tests/data/golden/" << name << ".json missing";
  return nlohmann::json::parse(in);
}

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

inline std::string le64(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char(value >> (8 * i));
  return out;
}

// A safetensors file from a literal header and data section.
inline void write_raw_file(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << le64(header.size()) << header << data;
}

// A well-formed safetensors file of the given tensors, in the given order.
inline void write_raw_safetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  write_raw_file(path, header.dump(), data);
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline std::string read_text(const std::string& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << (text ? "" : text.error().message);
  return text ? *text : std::string();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace xft::engine::testing
