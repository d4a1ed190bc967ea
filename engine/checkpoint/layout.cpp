#include "engine/checkpoint/layout.h"

namespace xft::engine {
namespace {

using Shape = std::vector<int64_t>;

void add(std::vector<ExpectedTensor>& out, std::string name, Shape shape, TensorRole role,
         DType dtype = DType::bf16) {
  out.push_back({std::move(name), std::move(shape), role, dtype});
}

// A projection's weight "<base>.weight" [rows, cols], or its quantized tensors.
void add_linear(std::vector<ExpectedTensor>& out, const ModelConfig& c, const std::string& base, int64_t rows,
                int64_t cols) {
  for (auto& t : projection_tensors(c, base, rows, cols)) out.push_back(std::move(t));
}

void add_qwen1_layer(std::vector<ExpectedTensor>& out, const ModelConfig& c, int layer) {
  std::string p = "transformer.h." + std::to_string(layer) + ".";
  int64_t hidden = c.hidden, projection = int64_t(c.heads) * c.head_dim, inter = c.intermediate;
  add(out, p + "ln_1.weight", {hidden}, TensorRole::norm);
  add_linear(out, c, p + "attn.c_attn", 3 * projection, hidden);
  add(out, p + "attn.c_attn.bias", {3 * projection}, TensorRole::bias);
  add_linear(out, c, p + "attn.c_proj", hidden, projection);
  add(out, p + "ln_2.weight", {hidden}, TensorRole::norm);
  add_linear(out, c, p + "mlp.w1", inter, hidden);
  add_linear(out, c, p + "mlp.w2", inter, hidden);
  add_linear(out, c, p + "mlp.c_proj", hidden, inter);
}

void add_qwen2_layer(std::vector<ExpectedTensor>& out, const ModelConfig& c, int layer) {
  std::string p = "model.layers." + std::to_string(layer) + ".";
  int64_t hidden = c.hidden, q = int64_t(c.heads) * c.head_dim, kv = int64_t(c.kv_heads) * c.head_dim;
  add(out, p + "input_layernorm.weight", {hidden}, TensorRole::norm);
  add_linear(out, c, p + "self_attn.q_proj", q, hidden);
  add_linear(out, c, p + "self_attn.k_proj", kv, hidden);
  add_linear(out, c, p + "self_attn.v_proj", kv, hidden);
  if (c.qkv_bias) {
    add(out, p + "self_attn.q_proj.bias", {q}, TensorRole::bias);
    add(out, p + "self_attn.k_proj.bias", {kv}, TensorRole::bias);
    add(out, p + "self_attn.v_proj.bias", {kv}, TensorRole::bias);
  }
  if (c.qk_norm) {
    add(out, p + "self_attn.q_norm.weight", {c.head_dim}, TensorRole::norm);
    add(out, p + "self_attn.k_norm.weight", {c.head_dim}, TensorRole::norm);
  }
  add_linear(out, c, p + "self_attn.o_proj", hidden, q);
  add(out, p + "post_attention_layernorm.weight", {hidden}, TensorRole::norm);
  if (!is_moe_layer(c, layer)) {
    add_linear(out, c, p + "mlp.gate_proj", c.intermediate, hidden);
    add_linear(out, c, p + "mlp.up_proj", c.intermediate, hidden);
    add_linear(out, c, p + "mlp.down_proj", hidden, c.intermediate);
    return;
  }
  // The sparse block as transformers names it: router, experts one tensor
  // each, then (Qwen2-MoE) the shared expert and its gate.
  const MoeConfig& moe = c.moe;
  add(out, p + "mlp.gate.weight", {moe.experts, hidden}, TensorRole::linear);
  for (int e = 0; e < moe.experts; ++e) {
    const std::string expert = p + "mlp.experts." + std::to_string(e) + ".";
    add_linear(out, c, expert + "gate_proj", moe.expert_intermediate, hidden);
    add_linear(out, c, expert + "up_proj", moe.expert_intermediate, hidden);
    add_linear(out, c, expert + "down_proj", hidden, moe.expert_intermediate);
  }
  if (moe.shared_expert_intermediate > 0) {
    add_linear(out, c, p + "mlp.shared_expert.gate_proj", moe.shared_expert_intermediate, hidden);
    add_linear(out, c, p + "mlp.shared_expert.up_proj", moe.shared_expert_intermediate, hidden);
    add_linear(out, c, p + "mlp.shared_expert.down_proj", hidden, moe.shared_expert_intermediate);
    add(out, p + "mlp.shared_expert_gate.weight", {1, hidden}, TensorRole::linear);
  }
}

// Qwen3.5's gated attention: q_proj holds each head's query and output gate.
void add_qwen35_attention(std::vector<ExpectedTensor>& out, const ModelConfig& c, const std::string& p) {
  const int64_t hidden = c.hidden, q = int64_t(c.heads) * c.head_dim, kv = int64_t(c.kv_heads) * c.head_dim;
  add_linear(out, c, p + "self_attn.q_proj", c.attn_output_gate ? 2 * q : q, hidden);
  add_linear(out, c, p + "self_attn.k_proj", kv, hidden);
  add_linear(out, c, p + "self_attn.v_proj", kv, hidden);
  add(out, p + "self_attn.q_norm.weight", {c.head_dim}, TensorRole::zero_centred_norm);
  add(out, p + "self_attn.k_norm.weight", {c.head_dim}, TensorRole::zero_centred_norm);
  add_linear(out, c, p + "self_attn.o_proj", hidden, q);
}

// Gated DeltaNet, in the order transformers writes it.
void add_gated_delta_net(std::vector<ExpectedTensor>& out, const ModelConfig& c, const std::string& p) {
  const LinearAttentionConfig& l = c.linear;
  const int64_t hidden = c.hidden;
  add_linear(out, c, p + "linear_attn.in_proj_qkv", l.conv_channels(), hidden);
  add_linear(out, c, p + "linear_attn.in_proj_z", l.value_dim(), hidden);
  add_linear(out, c, p + "linear_attn.in_proj_b", l.value_heads, hidden);
  add_linear(out, c, p + "linear_attn.in_proj_a", l.value_heads, hidden);
  add(out, p + "linear_attn.conv1d.weight", {l.conv_channels(), 1, l.conv_kernel}, TensorRole::linear);
  add(out, p + "linear_attn.dt_bias", {l.value_heads}, TensorRole::norm);
  add(out, p + "linear_attn.A_log", {l.value_heads}, TensorRole::decay_log, DType::f32);
  add(out, p + "linear_attn.norm.weight", {l.value_head_dim}, TensorRole::norm, DType::f32);
  add_linear(out, c, p + "linear_attn.out_proj", hidden, l.value_dim());
}

void add_qwen35_layer(std::vector<ExpectedTensor>& out, const ModelConfig& c, int layer) {
  const std::string p = "model.language_model.layers." + std::to_string(layer) + ".";
  const int64_t hidden = c.hidden;
  add(out, p + "input_layernorm.weight", {hidden}, TensorRole::zero_centred_norm);
  if (is_linear_attention_layer(c, layer)) {
    add_gated_delta_net(out, c, p);
  } else {
    add_qwen35_attention(out, c, p);
  }
  add(out, p + "post_attention_layernorm.weight", {hidden}, TensorRole::zero_centred_norm);
  if (!is_moe_layer(c, layer)) {
    add_linear(out, c, p + "mlp.gate_proj", c.intermediate, hidden);
    add_linear(out, c, p + "mlp.up_proj", c.intermediate, hidden);
    add_linear(out, c, p + "mlp.down_proj", hidden, c.intermediate);
    return;
  }
  // Experts fused in two stacks: gate_up_proj [E, 2I, H] (gate rows, then
  // up rows, of each expert) and down_proj [E, H, I].
  const MoeConfig& moe = c.moe;
  const int64_t inter = moe.expert_intermediate, shared = moe.shared_expert_intermediate;
  add(out, p + "mlp.gate.weight", {moe.experts, hidden}, TensorRole::linear);
  if (c.quant.method != QuantMethod::none) {
    // The quantized checkpoints (Qwen3.5-*-FP8, GPTQ-Int4, AWQ) store each
    // expert's projections apart, each with its scales.
    for (int e = 0; e < moe.experts; ++e) {
      const std::string expert = p + "mlp.experts." + std::to_string(e) + ".";
      add_linear(out, c, expert + "gate_proj", inter, hidden);
      add_linear(out, c, expert + "up_proj", inter, hidden);
      add_linear(out, c, expert + "down_proj", hidden, inter);
    }
  } else {
    add(out, p + "mlp.experts.gate_up_proj", {moe.experts, 2 * inter, hidden}, TensorRole::linear);
    add(out, p + "mlp.experts.down_proj", {moe.experts, hidden, inter}, TensorRole::linear);
  }
  add_linear(out, c, p + "mlp.shared_expert.gate_proj", shared, hidden);
  add_linear(out, c, p + "mlp.shared_expert.up_proj", shared, hidden);
  add_linear(out, c, p + "mlp.shared_expert.down_proj", hidden, shared);
  add(out, p + "mlp.shared_expert_gate.weight", {1, hidden}, TensorRole::linear);
}

std::vector<ExpectedTensor> expected_qwen35_tensors(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  add(out, "model.language_model.embed_tokens.weight", {c.vocab, c.hidden}, TensorRole::embedding);
  for (int layer = 0; layer < c.layers; ++layer) add_qwen35_layer(out, c, layer);
  add(out, "model.language_model.norm.weight", {c.hidden}, TensorRole::zero_centred_norm);
  if (!c.tie_embeddings) add(out, "lm_head.weight", {c.vocab, c.hidden}, TensorRole::embedding);
  return out;
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  if (c.arch == Architecture::qwen3_5 || c.arch == Architecture::qwen3_5_moe) return expected_qwen35_tensors(c);
  std::vector<ExpectedTensor> out;
  bool qwen1 = c.arch == Architecture::qwen1;
  add(out, qwen1 ? "transformer.wte.weight" : "model.embed_tokens.weight", {c.vocab, c.hidden},
      TensorRole::embedding);
  for (int layer = 0; layer < c.layers; ++layer) {
    if (qwen1) {
      add_qwen1_layer(out, c, layer);
    } else {
      add_qwen2_layer(out, c, layer);
    }
  }
  add(out, qwen1 ? "transformer.ln_f.weight" : "model.norm.weight", {c.hidden}, TensorRole::norm);
  if (!c.tie_embeddings) add(out, "lm_head.weight", {c.vocab, c.hidden}, TensorRole::embedding);
  return out;
}

std::vector<ExpectedTensor> projection_tensors(const ModelConfig& c, const std::string& base, int64_t rows,
                                               int64_t cols) {
  const QuantConfig& q = c.quant;
  if (q.method == QuantMethod::none || !q.converts(base)) {
    return {{base + ".weight", {rows, cols}, TensorRole::linear, DType::bf16}};
  }
  if (q.method == QuantMethod::fp8) {
    const int64_t block_rows = (rows + q.block_rows - 1) / q.block_rows;
    const int64_t block_cols = (cols + q.block_cols - 1) / q.block_cols;
    return {{base + ".weight", {rows, cols}, TensorRole::quantized, DType::f8_e4m3},
            {base + ".weight_scale_inv", {block_rows, block_cols}, TensorRole::quantized, DType::f32}};
  }
  const int64_t groups = q.groups(int(cols));
  const auto quantized = TensorRole::quantized;
  if (q.method == QuantMethod::gptq) {
    return {{base + ".qweight", {cols / 8, rows}, quantized, DType::i32},
            {base + ".qzeros", {groups, rows / 8}, quantized, DType::i32},
            {base + ".scales", {groups, rows}, quantized, DType::f16},
            {base + ".g_idx", {cols}, quantized, DType::i32}};
  }
  return {{base + ".qweight", {cols, rows / 8}, quantized, DType::i32},
          {base + ".qzeros", {groups, rows / 8}, quantized, DType::i32},
          {base + ".scales", {groups, rows}, quantized, DType::f16}};
}

ParameterCount count_parameters(const ModelConfig& config) {
  ModelConfig plain = config;
  plain.quant = QuantConfig{};  // the logical weights, not their packed tensors
  ParameterCount count;
  for (const auto& tensor : expected_tensors(plain)) {
    uint64_t elements = 1;
    for (int64_t dim : tensor.shape) elements *= static_cast<uint64_t>(dim);
    count.total += elements;
  }
  const MoeConfig& moe = config.moe;
  const uint64_t unused_experts = static_cast<uint64_t>(moe.experts - moe.experts_per_token);
  const uint64_t expert = 3ull * static_cast<uint64_t>(moe.expert_intermediate) * static_cast<uint64_t>(config.hidden);
  // The vision tower (never loaded) is not counted.
  count.active = count.total;
  for (int layer = 0; layer < config.layers; ++layer) {
    if (is_moe_layer(config, layer)) count.active -= unused_experts * expert;
  }
  return count;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace xft::engine
