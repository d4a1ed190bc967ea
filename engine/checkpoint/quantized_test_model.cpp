// The deterministic test model as a 4-bit GPTQ or AWQ checkpoint, or an FP8
// one: each projection of the plain weights quantized per group (block) and
// stored exactly as the published layouts are (engine/model/quantized_weights.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/checkpoint/fake_weights.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/slicing.h"
#include "engine/checkpoint/test_model.h"
#include "engine/kernels/fp8.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// Projections that read one input share its g_idx (q/k/v, gate/up, the Gated
// DeltaNet's in_proj_qkv/z/b/a): act-order ranks that input's channels once.
std::string input_key(const std::string& base) {
  const size_t dot = base.rfind('.');
  const std::string owner = base.substr(0, dot), leaf = base.substr(dot + 1);
  if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") return owner + ".qkv";
  if (leaf == "gate_proj" || leaf == "up_proj" || leaf == "w1" || leaf == "w2") return owner + ".gate_up";
  if (leaf.starts_with("in_proj_")) return owner + ".in_proj";
  return base;
}

std::vector<int32_t> group_index(const std::string& base, int in, int group_size, bool desc_act, uint64_t seed) {
  const int g = group_size > 0 ? group_size : in;
  std::vector<int32_t> g_idx(in);
  std::vector<int> order(in);
  for (int c = 0; c < in; ++c) order[c] = c;
  if (desc_act) {
    std::mt19937_64 rng(test_tensor_hash(seed, input_key(base)));
    std::shuffle(order.begin(), order.end(), rng);
  }
  for (int k = 0; k < in; ++k) g_idx[order[k]] = k / g;
  return g_idx;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct Quantized {
  std::vector<uint8_t> q;      // [out][in]
  std::vector<uint8_t> zero;   // [groups][out]
  std::vector<uint16_t> scale; // [groups][out]
};

Quantized quantize(const std::vector<float>& w, int out, int in, const std::vector<int32_t>& g_idx, int groups,
                   int min_zero) {
  Quantized r;
  r.q.resize(size_t(out) * in);
  r.zero.resize(size_t(groups) * out);
  r.scale.resize(size_t(groups) * out);
  for (int o = 0; o < out; ++o) {
    std::vector<float> lo(groups, 0.0f), hi(groups, 0.0f);
    for (int c = 0; c < in; ++c) {
      lo[g_idx[c]] = std::min(lo[g_idx[c]], w[size_t(o) * in + c]);
      hi[g_idx[c]] = std::max(hi[g_idx[c]], w[size_t(o) * in + c]);
    }
    std::vector<float> s(groups), z(groups);
    for (int g = 0; g < groups; ++g) {
      const uint16_t s16 = f32_to_f16(std::max((hi[g] - lo[g]) / 15.0f, 1e-6f));
      r.scale[size_t(g) * out + o] = s16;
      s[g] = f16_bits_to_f32(s16);
      z[g] = std::clamp(std::nearbyint(-lo[g] / s[g]), float(min_zero), 15.0f);
      r.zero[size_t(g) * out + o] = uint8_t(z[g]);
    }
    for (int c = 0; c < in; ++c) {
      const int g = g_idx[c];
      r.q[size_t(o) * in + c] = uint8_t(std::clamp(std::nearbyint(w[size_t(o) * in + c] / s[g]) + z[g], 0.0f, 15.0f));
    }
  }
  return r;
}

std::vector<StoredTensor> quantized_projection(const ModelConfig& config, const std::vector<float>& w,
                                               const std::string& base, int out, int in, const TestModelSpec& spec) {
  const QuantConfig& qc = config.quant;
  const bool gptq = qc.method == QuantMethod::gptq;
  const int groups = qc.groups(in);
  const std::vector<int32_t> g_idx = group_index(base, in, qc.group_size, gptq && qc.desc_act, spec.seed);
  const Quantized q = quantize(w, out, in, g_idx, groups, qc.zero_minus_one ? 1 : 0);
  std::vector<int32_t> qweight, qzeros(size_t(groups) * (out / 8), 0);
  if (gptq) {
    qweight.assign(size_t(in / 8) * out, 0);
    for (int o = 0; o < out; ++o) {
      for (int c = 0; c < in; ++c) {
        qweight[size_t(c / 8) * out + o] |= int32_t(uint32_t(q.q[size_t(o) * in + c]) << (4 * (c % 8)));
      }
    }
  } else {
    int position[8];  // nibble that holds column 8k + j
    for (int i = 0; i < 8; ++i) position[kAwqOrder[i]] = i;
    qweight.assign(size_t(in) * (out / 8), 0);
    for (int o = 0; o < out; ++o) {
      for (int c = 0; c < in; ++c) {
        qweight[size_t(c) * (out / 8) + o / 8] |= int32_t(uint32_t(q.q[size_t(o) * in + c]) << (4 * position[o % 8]));
      }
    }
    for (int g = 0; g < groups; ++g) {
      for (int o = 0; o < out; ++o) {
        qzeros[size_t(g) * (out / 8) + o / 8] |= int32_t(uint32_t(q.zero[size_t(g) * out + o]) << (4 * position[o % 8]));
      }
    }
  }
  if (gptq) {
    for (int g = 0; g < groups; ++g) {
      for (int o = 0; o < out; ++o) {
        const uint32_t stored = (q.zero[size_t(g) * out + o] - (qc.zero_minus_one ? 1u : 0u)) & 15u;
        qzeros[size_t(g) * (out / 8) + o / 8] |= int32_t(stored << (4 * (o % 8)));
      }
    }
  }
  std::vector<StoredTensor> tensors;
  for (const auto& t : projection_tensors(config, base, out, in)) {
    StoredTensor raw{t.name, t.dtype, t.shape, {}};
    const std::string leaf = t.name.substr(base.size() + 1);
    if (leaf == "qweight") raw.data = bytes_of(qweight);
    else if (leaf == "qzeros") raw.data = bytes_of(qzeros);
    else if (leaf == "scales") raw.data = bytes_of(q.scale);
    else raw.data = bytes_of(g_idx);
    tensors.push_back(std::move(raw));
  }
  return tensors;
}

// FP8 as Qwen's checkpoints store it: per block_rows x block_cols block,
// scale = max|w| / 448 (1 for an all-zero block), q = e4m3(w / scale).
std::vector<StoredTensor> fp8_projection(const QuantConfig& qc, const std::vector<float>& w, const std::string& base,
                                         int out, int in) {
  const int br = qc.block_rows, bc = qc.block_cols;
  const int row_blocks = (out + br - 1) / br, col_blocks = (in + bc - 1) / bc;
  std::vector<float> scale(size_t(row_blocks) * col_blocks);
  std::vector<uint8_t> q(size_t(out) * in);
  for (int rb = 0; rb < row_blocks; ++rb) {
    for (int cb = 0; cb < col_blocks; ++cb) {
      const int r1 = std::min(out, (rb + 1) * br), c1 = std::min(in, (cb + 1) * bc);
      float max_abs = 0.0f;
      for (int r = rb * br; r < r1; ++r) {
        for (int c = cb * bc; c < c1; ++c) max_abs = std::max(max_abs, std::fabs(w[size_t(r) * in + c]));
      }
      const float s = max_abs > 0.0f ? max_abs / kE4m3Max : 1.0f;
      scale[size_t(rb) * col_blocks + cb] = s;
      for (int r = rb * br; r < r1; ++r) {
        for (int c = cb * bc; c < c1; ++c) q[size_t(r) * in + c] = float_to_e4m3(w[size_t(r) * in + c] / s);
      }
    }
  }
  return {{base + ".weight", DType::f8_e4m3, {out, in}, std::move(q)},
          {base + ".weight_scale_inv", DType::f32, {row_blocks, col_blocks}, bytes_of(scale)}};
}

// The MoE router and Qwen2-MoE's shared-expert gate stay unquantized in FP8 checkpoints.
bool unquantized_linear(const std::string& name) {
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with(".mlp.gate.weight") || ends_with(".mlp.shared_expert_gate.weight");
}

// One projection [out][in] in the checkpoint's format: FP8 blocks or 4-bit groups.
std::vector<StoredTensor> packed_projection(const ModelConfig& config, const std::vector<float>& w,
                                            const std::string& base, int out, int in, const TestModelSpec& spec) {
  if (config.quant.method == QuantMethod::fp8) return fp8_projection(config.quant, w, base, out, in);
  return quantized_projection(config, w, base, out, in, spec);
}

// Qwen3.5-MoE's fused stack gate_up_proj [E, 2I, H] (each expert's gate
// rows, then its up rows) or down_proj [E, H, I], written as the quantized
// Qwen3.5-MoE checkpoints store it (Qwen3.5-*-FP8, the GPTQ-Int4 and AWQ
// ones): experts.<e>.gate_proj / up_proj / down_proj, each with its scales.
Expected<std::vector<StoredTensor>> split_expert_tensors(const ModelConfig& config, const WeightSource& plain,
                                                         const ExpectedTensor& stack, const TestModelSpec& spec) {
  auto w = plain.read_f32(stack.name);
  if (!w) return w.error();
  const int experts = int(stack.shape[0]), rows = int(stack.shape[1]), cols = int(stack.shape[2]);
  const bool gate_up = stack.name.size() >= 12 && stack.name.compare(stack.name.size() - 12, 12, "gate_up_proj") == 0;
  const std::string prefix = stack.name.substr(0, stack.name.rfind('.') + 1);  // "...mlp.experts."
  std::vector<StoredTensor> out;
  for (int e = 0; e < experts; ++e) {
    const float* expert = w->data() + size_t(e) * rows * cols;
    const int parts = gate_up ? 2 : 1, part_rows = rows / parts;
    for (int part = 0; part < parts; ++part) {
      const std::string name = prefix + std::to_string(e) + (gate_up ? (part == 0 ? ".gate_proj" : ".up_proj") : ".down_proj");
      std::vector<float> block(expert + size_t(part) * part_rows * cols, expert + size_t(part + 1) * part_rows * cols);
      for (auto& p : packed_projection(config, block, name, part_rows, cols, spec)) out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace

Expected<std::vector<StoredTensor>> quantized_test_tensors(const ModelConfig& config, const WeightSource& plain,
                                                        const TestModelSpec& spec) {
  if (config.quant.method == QuantMethod::none) {
    return make_error("quantized test checkpoint: config.json has no quantization_config for these weights");
  }
  std::vector<StoredTensor> tensors;
  ModelConfig plain_config = config;
  plain_config.quant = QuantConfig{};
  for (const auto& t : expected_tensors(plain_config)) {
    if (t.shape.size() == 3 && t.role == TensorRole::linear && t.name.find(".mlp.experts.") != std::string::npos) {
      auto experts = split_expert_tensors(config, plain, t, spec);
      if (!experts) return experts.error();
      for (auto& p : *experts) tensors.push_back(std::move(p));
      continue;
    }
    // 2-D only: Qwen3.5's depthwise conv1d weight [C, 1, K] stays as it is.
    const bool projection = t.role == TensorRole::linear && t.shape.size() == 2 && !unquantized_linear(t.name) &&
                            config.quant.converts(t.name.substr(0, t.name.size() - std::string(".weight").size()));
    if (!projection && t.dtype == DType::f32) {  // Qwen3.5's A_log and gated-norm weight
      auto values = plain.read_f32(t.name);
      if (!values) return values.error();
      tensors.push_back({t.name, DType::f32, t.shape, bytes_of(*values)});
      continue;
    }
    if (!projection) {
      auto values = plain.read_bf16(t.name);
      if (!values) return values.error();
      tensors.push_back({t.name, DType::bf16, t.shape, bytes_of(*values)});
      continue;
    }
    const std::string base = t.name.substr(0, t.name.size() - std::string(".weight").size());
    auto w = plain.read_f32(t.name);
    if (!w) return w.error();
    for (auto& p : packed_projection(config, *w, base, int(t.shape[0]), int(t.shape[1]), spec)) {
      tensors.push_back(std::move(p));
    }
  }
  return tensors;
}

}  // namespace xft::engine
