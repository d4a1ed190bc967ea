// A model's shape and hyper-parameters, read from Hugging Face config.json
// (Qwen1 QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM, the
// mixture-of-experts Qwen2MoeForCausalLM and Qwen3MoeForCausalLM, and the
// hybrid Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration,
// whose text model's settings sit under text_config).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::engine {

enum class Architecture { qwen1, qwen2, qwen3, qwen2_moe, qwen3_moe, qwen3_5, qwen3_5_moe };

// The sparse feed-forward of Qwen2-MoE / Qwen3-MoE (transformers'
// Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock). experts == 0: a dense model.
struct MoeConfig {
  int experts = 0;                    // num_experts
  int experts_per_token = 0;          // num_experts_per_tok (top-k)
  int expert_intermediate = 0;        // moe_intermediate_size: each expert's SwiGLU width
  int shared_expert_intermediate = 0; // shared_expert_intermediate_size (Qwen2-MoE); 0: none
  bool norm_topk_prob = false;        // renormalize the chosen experts' probabilities to sum 1
  int decoder_sparse_step = 1;        // layer i is sparse when (i + 1) % step == 0 ...
  std::vector<int> mlp_only_layers;   // ... and i is not listed here
};

// config.json quantization_config of a 4-bit checkpoint (layouts in
// engine/model/quantized_weights.h) or an FP8 one (quant_method fp8, fmt
// e4m3, weight_block_size: engine/kernels/fp8.h). Every projection of every
// layer is quantized, except the modules an FP8 checkpoint lists in
// modules_to_not_convert (Qwen3.5's in_proj_a/in_proj_b); embeddings, norms,
// biases, lm_head and the MoE router (and the shared-expert gate) are not.
enum class QuantMethod { none, gptq, awq, fp8 };
struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  int bits = 16;
  int group_size = -1;         // input rows per group; -1: one group per matrix
  bool desc_act = false;       // GPTQ: g_idx gives each input row's group
  bool sym = true;
  bool zero_minus_one = false; // GPTQ classic checkpoint_format: stored zero = zero - 1
  int block_rows = 0;          // fp8: weight_block_size [block_rows, block_cols],
  int block_cols = 0;          //      one weight_scale_inv per block
  std::vector<std::string> modules_to_not_convert;  // fp8: full names, suffixes or parents of modules
  // Whether the projection `module` ("...linear_attn.in_proj_a") is stored
  // quantized: an entry names it, a parent of it or its last dotted parts.
  bool converts(const std::string& module) const;
  bool four_bit() const { return method == QuantMethod::gptq || method == QuantMethod::awq; }
  int groups(int in) const { return group_size > 0 ? (in + group_size - 1) / group_size : 1; }
};

// Qwen3.5's Gated DeltaNet layers (transformers' Qwen3_5GatedDeltaNet):
// key heads of key_head_dim for q and k, value heads of value_head_dim (a
// multiple of the key heads, each group of value heads reading one key head),
// a causal depthwise conv of conv_kernel taps over q|k|v.
struct LinearAttentionConfig {
  int key_heads = 0;
  int value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;
  std::vector<char> is_linear;  // per layer (layer_types); empty: no linear-attention layer
  int key_dim() const { return key_heads * key_head_dim; }
  int value_dim() const { return value_heads * value_head_dim; }
  int conv_channels() const { return 2 * key_dim() + value_dim(); }
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
  MoeConfig moe;
  // Qwen3.5: rotary on the first rotary_dim elements of each head (0: all of
  // head_dim); q_proj twice as wide with a sigmoid output gate per head; norms
  // stored zero-centred and applied as x * (1 + w); the linear-attention layers.
  int rotary_dim = 0;
  bool attn_output_gate = false;
  bool zero_centred_norms = false;
  LinearAttentionConfig linear;
};

// Whether layer `layer` is a Gated DeltaNet (linear-attention) layer.
bool is_linear_attention_layer(const ModelConfig& config, int layer);

// Whether layer `layer` runs the mixture of experts (else the dense MLP of
// intermediate_size), by transformers' rule for Qwen2-MoE and Qwen3-MoE.
bool is_moe_layer(const ModelConfig& config, int layer);

// "gptq-int4", "awq-int4", "fp8" or "" for an unquantized checkpoint.
std::string quant_format_name(const QuantConfig& quant);

// Parses config.json text; `path` is only used in error messages
// ("config.json: field: what is wrong").
Expected<ModelConfig> parse_config(const std::string& json_text, const std::string& path);
Expected<ModelConfig> load_config(const std::string& model_dir);

}  // namespace xft::engine
