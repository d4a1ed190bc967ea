#include "engine/checkpoint/layout.h"

namespace xft::engine {
namespace {

using Shape = std::vector<int64_t>;

void add(std::vector<ExpectedTensor>& out, std::string name, Shape shape, TensorRole role) {
  out.push_back({std::move(name), std::move(shape), role});
}

void add_qwen1_layer(std::vector<ExpectedTensor>& out, const ModelConfig& c, int layer) {
  std::string p = "transformer.h." + std::to_string(layer) + ".";
  int64_t hidden = c.hidden, projection = int64_t(c.heads) * c.head_dim, inter = c.intermediate;
  add(out, p + "ln_1.weight", {hidden}, TensorRole::norm);
  add(out, p + "attn.c_attn.weight", {3 * projection, hidden}, TensorRole::linear);
  add(out, p + "attn.c_attn.bias", {3 * projection}, TensorRole::bias);
  add(out, p + "attn.c_proj.weight", {hidden, projection}, TensorRole::linear);
  add(out, p + "ln_2.weight", {hidden}, TensorRole::norm);
  add(out, p + "mlp.w1.weight", {inter, hidden}, TensorRole::linear);
  add(out, p + "mlp.w2.weight", {inter, hidden}, TensorRole::linear);
  add(out, p + "mlp.c_proj.weight", {hidden, inter}, TensorRole::linear);
}

void add_qwen2_layer(std::vector<ExpectedTensor>& out, const ModelConfig& c, int layer) {
  std::string p = "model.layers." + std::to_string(layer) + ".";
  int64_t hidden = c.hidden, q = int64_t(c.heads) * c.head_dim, kv = int64_t(c.kv_heads) * c.head_dim;
  add(out, p + "input_layernorm.weight", {hidden}, TensorRole::norm);
  add(out, p + "self_attn.q_proj.weight", {q, hidden}, TensorRole::linear);
  add(out, p + "self_attn.k_proj.weight", {kv, hidden}, TensorRole::linear);
  add(out, p + "self_attn.v_proj.weight", {kv, hidden}, TensorRole::linear);
  if (c.qkv_bias) {
    add(out, p + "self_attn.q_proj.bias", {q}, TensorRole::bias);
    add(out, p + "self_attn.k_proj.bias", {kv}, TensorRole::bias);
    add(out, p + "self_attn.v_proj.bias", {kv}, TensorRole::bias);
  }
  if (c.qk_norm) {
    add(out, p + "self_attn.q_norm.weight", {c.head_dim}, TensorRole::norm);
    add(out, p + "self_attn.k_norm.weight", {c.head_dim}, TensorRole::norm);
  }
  add(out, p + "self_attn.o_proj.weight", {hidden, q}, TensorRole::linear);
  add(out, p + "post_attention_layernorm.weight", {hidden}, TensorRole::norm);
  add(out, p + "mlp.gate_proj.weight", {c.intermediate, hidden}, TensorRole::linear);
  add(out, p + "mlp.up_proj.weight", {c.intermediate, hidden}, TensorRole::linear);
  add(out, p + "mlp.down_proj.weight", {hidden, c.intermediate}, TensorRole::linear);
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
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

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace xft::engine
