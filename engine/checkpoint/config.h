// A model's shape and hyper-parameters, read from Hugging Face config.json
// (Qwen1 QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::engine {

enum class Architecture { qwen1, qwen2, qwen3 };

// config.json quantization_config of a 4-bit checkpoint (layouts in
// engine/model/quantized_weights.h). Every projection of every layer is
// quantized; embeddings, norms, biases and lm_head are not.
enum class QuantMethod { none, gptq, awq };
struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  int bits = 16;
  int group_size = -1;         // input rows per group; -1: one group per matrix
  bool desc_act = false;       // GPTQ: g_idx gives each input row's group
  bool sym = true;
  bool zero_minus_one = false; // GPTQ classic checkpoint_format: stored zero = zero - 1
  int groups(int in) const { return group_size > 0 ? (in + group_size - 1) / group_size : 1; }
};

struct ModelConfig {
  Architecture arch = Architecture::qwen2;
  std::string architecture_name;  // as written in config.json
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;          // explicit for Qwen3, hidden/heads otherwise
  int intermediate = 0;      // MLP width per branch (Qwen1: config value / 2)
  int vocab = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false;     // Qwen1 c_attn bias, Qwen2 q/k/v bias
  bool qk_norm = false;      // Qwen3 q_norm / k_norm
  double rope_theta = 10000.0;
  int max_positions = 0;
  double rms_eps = 1e-6;
  std::string torch_dtype;   // as written ("bfloat16", ...)
  std::vector<int> eos_ids;  // from config.json / generation_config.json
  int bos_id = -1;
  QuantConfig quant;
};

// "gptq-int4", "awq-int4" or "" for an unquantized checkpoint.
std::string quant_format_name(const QuantConfig& quant);

// Parses config.json text; `path` is only used in error messages
// ("config.json: field: what is wrong").
Expected<ModelConfig> parse_config(const std::string& json_text, const std::string& path);
Expected<ModelConfig> load_config(const std::string& model_dir);

}  // namespace xft::engine
