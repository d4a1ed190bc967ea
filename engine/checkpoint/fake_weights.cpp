#include "engine/checkpoint/fake_weights.h"

#include <atomic>
#include <cmath>
#include <unordered_map>

#include "engine/checkpoint/slicing.h"

namespace xft::engine {
namespace {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class FakeWeightSource final : public WeightSource {
 public:
  FakeWeightSource(const ModelConfig& config, uint64_t seed) : config_(config) {
    for (auto& tensor : expected_tensors(config)) {
      std::string name = tensor.name;
      uint64_t hash = test_tensor_hash(seed, name);
      tensors_.emplace(std::move(name), Entry{std::move(tensor), hash});
    }
  }

  const ModelConfig& config() const override { return config_; }
  bool has(const std::string& name) const override { return tensors_.count(name) != 0; }

  Expected<TensorMeta> meta(const std::string& name) const override {
    auto entry = find(name);
    if (!entry) return entry.error();
    return TensorMeta{name, (*entry)->tensor.dtype == DType::f32 ? DType::f32 : DType::bf16, (*entry)->tensor.shape};
  }

  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows,
                                        Slice cols) const override {
    auto entry = find(name);
    if (entry && (*entry)->tensor.dtype == DType::f32) return generate_f32(**entry, name, rows, cols);
    return generate<float>(name, rows, cols, [](uint16_t bits) { return bf16_bits_to_f32(bits); });
  }

  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows,
                                            Slice cols) const override {
    return generate<uint16_t>(name, rows, cols, [](uint16_t bits) { return bits; });
  }

  uint64_t bytes_read() const override { return bytes_read_.load(); }

 private:
  struct Entry {
    ExpectedTensor tensor;
    uint64_t hash;
  };

  Expected<const Entry*> find(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      return make_error("tensor " + name + ": not part of the generated " + config_.architecture_name +
                        " test model");
    }
    return &it->second;
  }

  // The few tensors stored as F32 (Qwen3.5's A_log and gated norm): the
  // float32 value itself, never rounded to bfloat16.
  Expected<std::vector<float>> generate_f32(const Entry& entry, const std::string& name, Slice rows, Slice cols) const {
    auto region = resolve_region(name, entry.tensor.shape, rows, cols);
    if (!region) return region.error();
    std::vector<float> out;
    out.reserve(size_t(region->count()));
    for (int64_t r = region->row_begin; r < region->row_end; ++r) {
      for (int64_t c = region->col_begin; c < region->col_end; ++c) {
        out.push_back(test_value_f32(entry.hash, uint64_t(r) * uint64_t(region->cols) + uint64_t(c), entry.tensor.role,
                                     fan_in_of(entry.tensor.shape)));
      }
    }
    bytes_read_ += out.size() * sizeof(float);
    return out;
  }

  // `in` is always the last dimension (conv1d [C, 1, K], fused experts [E, rows, in]).
  static int64_t fan_in_of(const std::vector<int64_t>& shape) { return shape.size() >= 2 ? shape.back() : 1; }

  template <class T, class Convert>
  Expected<std::vector<T>> generate(const std::string& name, Slice rows, Slice cols,
                                    Convert convert) const {
    auto entry = find(name);
    if (!entry) return entry.error();
    const ExpectedTensor& tensor = (*entry)->tensor;
    auto region = resolve_region(name, tensor.shape, rows, cols);
    if (!region) return region.error();
    int64_t fan_in = fan_in_of(tensor.shape);
    std::vector<T> out(size_t(region->count()));
    size_t next = 0;
    for (int64_t r = region->row_begin; r < region->row_end; ++r) {
      uint64_t row_start = uint64_t(r) * uint64_t(region->cols);
      for (int64_t c = region->col_begin; c < region->col_end; ++c) {
        out[next++] = convert(test_value_bf16((*entry)->hash, row_start + uint64_t(c), tensor.role, fan_in));
      }
    }
    bytes_read_ += out.size() * (tensor.dtype == DType::f32 ? sizeof(float) : sizeof(uint16_t));  // as stored
    return out;
  }

  ModelConfig config_;
  std::unordered_map<std::string, Entry> tensors_;
  mutable std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace

uint64_t test_tensor_hash(uint64_t seed, const std::string& name) {
  std::string key = std::to_string(seed) + ":" + name;
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char byte : key) {
    hash ^= byte;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

float test_value_f32(uint64_t tensor_hash, uint64_t index, TensorRole role, int64_t fan_in) {
  uint64_t x = splitmix64(tensor_hash + index);
  double u = double(x >> 11) * 0x1.0p-53;
  double v = 2.0 * u - 1.0;
  const double sqrt3 = std::sqrt(3.0);
  double value = 0;
  switch (role) {
    case TensorRole::embedding: value = v * sqrt3; break;
    case TensorRole::linear: value = v * sqrt3 / std::sqrt(double(fan_in)); break;
    case TensorRole::bias: value = v * 0.1 * sqrt3; break;
    case TensorRole::norm: value = 1.0 + v * 0.1 * sqrt3; break;
    case TensorRole::zero_centred_norm: value = v * 0.1 * sqrt3; break;
    case TensorRole::decay_log: value = v * std::log(4.0); break;
    case TensorRole::quantized: break;
  }
  return float(value);
}

uint16_t test_value_bf16(uint64_t tensor_hash, uint64_t index, TensorRole role, int64_t fan_in) {
  return f32_to_bf16_bits(test_value_f32(tensor_hash, index, role, fan_in));
}

std::unique_ptr<WeightSource> make_fake_weights(const ModelConfig& config, uint64_t seed) {
  return std::make_unique<FakeWeightSource>(config, seed);
}

}  // namespace xft::engine
