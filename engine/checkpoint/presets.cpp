#include "engine/checkpoint/presets.h"

#include <algorithm>
#include <filesystem>

#include "common/atomic_file.h"

namespace xft::engine {
namespace {

struct Preset {
  const char* name;
  const char* config_json;
};

// Values copied from each model's config.json on the Hugging Face hub (the
// -Instruct variants where base and instruct differ, e.g. max positions).
constexpr Preset kPresets[] = {
    {"qwen2.5-0.5b", R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":896,
      "intermediate_size":4864,"num_hidden_layers":24,"num_attention_heads":14,
      "num_key_value_heads":2,"vocab_size":151936,"max_position_embeddings":32768,
      "rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":true,
      "torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen2.5-1.5b", R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":1536,
      "intermediate_size":8960,"num_hidden_layers":28,"num_attention_heads":12,
      "num_key_value_heads":2,"vocab_size":151936,"max_position_embeddings":32768,
      "rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":true,
      "torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen2.5-7b", R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":3584,
      "intermediate_size":18944,"num_hidden_layers":28,"num_attention_heads":28,
      "num_key_value_heads":4,"vocab_size":152064,"max_position_embeddings":32768,
      "rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":false,
      "torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen2.5-72b", R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":8192,
      "intermediate_size":29568,"num_hidden_layers":80,"num_attention_heads":64,
      "num_key_value_heads":8,"vocab_size":152064,"max_position_embeddings":32768,
      "rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":false,
      "torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen3-0.6b", R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":1024,
      "intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,
      "num_key_value_heads":8,"head_dim":128,"vocab_size":151936,
      "max_position_embeddings":40960,"rms_norm_eps":1e-06,"rope_theta":1000000,
      "attention_bias":false,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
      "bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen3-30b-a3b", R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":2048,
      "intermediate_size":6144,"moe_intermediate_size":768,"num_experts":128,"num_experts_per_tok":8,
      "norm_topk_prob":true,"decoder_sparse_step":1,"mlp_only_layers":[],"num_hidden_layers":48,
      "num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"vocab_size":151936,
      "max_position_embeddings":40960,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"attention_bias":false,
      "tie_word_embeddings":false,"torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen3-235b-a22b", R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":4096,
      "intermediate_size":12288,"moe_intermediate_size":1536,"num_experts":128,"num_experts_per_tok":8,
      "norm_topk_prob":true,"decoder_sparse_step":1,"mlp_only_layers":[],"num_hidden_layers":94,
      "num_attention_heads":64,"num_key_value_heads":4,"head_dim":128,"vocab_size":151936,
      "max_position_embeddings":40960,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"attention_bias":false,
      "tie_word_embeddings":false,"torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen2-57b-a14b", R"({"architectures":["Qwen2MoeForCausalLM"],"hidden_size":3584,
      "intermediate_size":18944,"moe_intermediate_size":2560,"shared_expert_intermediate_size":20480,
      "num_experts":64,"num_experts_per_tok":8,"norm_topk_prob":false,"decoder_sparse_step":1,
      "num_hidden_layers":28,"num_attention_heads":28,"num_key_value_heads":4,"vocab_size":151936,
      "max_position_embeddings":32768,"rms_norm_eps":1e-06,"rope_theta":1000000.0,
      "tie_word_embeddings":false,"torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen1.5-moe-a2.7b", R"({"architectures":["Qwen2MoeForCausalLM"],"hidden_size":2048,
      "intermediate_size":5632,"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,
      "num_experts":60,"num_experts_per_tok":4,"norm_topk_prob":false,"decoder_sparse_step":1,
      "num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":16,"vocab_size":151936,
      "max_position_embeddings":8192,"rms_norm_eps":1e-06,"rope_theta":1000000.0,
      "tie_word_embeddings":false,"torch_dtype":"bfloat16","bos_token_id":151643,"eos_token_id":151645})"},
    {"qwen3.5-0.8b", R"({"architectures":["Qwen3_5ForConditionalGeneration"],"model_type":"qwen3_5","text_config":{"hidden_size":1024,"intermediate_size":3584,
      "num_hidden_layers":24,"num_attention_heads":8,"num_key_value_heads":2,"linear_num_key_heads":16,
      "linear_num_value_heads":16,"tie_word_embeddings":true,
      "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
      "full_attention_interval":4,"vocab_size":248320,"max_position_embeddings":262144,"rms_norm_eps":1e-06,
      "attn_output_gate":true,"attention_bias":false,"hidden_act":"silu","dtype":"bfloat16","eos_token_id":248044,
      "rope_parameters":{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}}})"},
    {"qwen3.5-27b", R"({"architectures":["Qwen3_5ForConditionalGeneration"],"model_type":"qwen3_5","text_config":{"hidden_size":5120,"intermediate_size":17408,
      "num_hidden_layers":64,"num_attention_heads":24,"num_key_value_heads":4,"linear_num_key_heads":16,
      "linear_num_value_heads":48,"tie_word_embeddings":false,
      "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
      "full_attention_interval":4,"vocab_size":248320,"max_position_embeddings":262144,"rms_norm_eps":1e-06,
      "attn_output_gate":true,"attention_bias":false,"hidden_act":"silu","dtype":"bfloat16","eos_token_id":248044,
      "rope_parameters":{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}}})"},
    {"qwen3.5-35b-a3b", R"({"architectures":["Qwen3_5MoeForConditionalGeneration"],"model_type":"qwen3_5_moe","text_config":{"hidden_size":2048,"num_hidden_layers":40,
      "num_attention_heads":16,"num_key_value_heads":2,"num_experts":256,"num_experts_per_tok":8,
      "moe_intermediate_size":512,"shared_expert_intermediate_size":512,"linear_num_key_heads":16,
      "linear_num_value_heads":32,"tie_word_embeddings":false,
      "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
      "full_attention_interval":4,"vocab_size":248320,"max_position_embeddings":262144,"rms_norm_eps":1e-06,
      "attn_output_gate":true,"attention_bias":false,"hidden_act":"silu","dtype":"bfloat16","eos_token_id":248044,
      "rope_parameters":{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}}})"},
    {"qwen3.5-122b-a10b", R"({"architectures":["Qwen3_5MoeForConditionalGeneration"],"model_type":"qwen3_5_moe","text_config":{"hidden_size":3072,"num_hidden_layers":48,
      "num_attention_heads":32,"num_key_value_heads":2,"num_experts":256,"num_experts_per_tok":8,
      "moe_intermediate_size":1024,"shared_expert_intermediate_size":1024,"linear_num_key_heads":16,
      "linear_num_value_heads":64,"tie_word_embeddings":false,
      "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
      "full_attention_interval":4,"vocab_size":248320,"max_position_embeddings":262144,"rms_norm_eps":1e-06,
      "attn_output_gate":true,"attention_bias":false,"hidden_act":"silu","dtype":"bfloat16","eos_token_id":248044,
      "rope_parameters":{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}}})"},
    {"qwen3.5-397b-a17b", R"({"architectures":["Qwen3_5MoeForConditionalGeneration"],"model_type":"qwen3_5_moe","text_config":{"hidden_size":4096,"num_hidden_layers":60,
      "num_attention_heads":32,"num_key_value_heads":2,"num_experts":512,"num_experts_per_tok":10,
      "moe_intermediate_size":1024,"shared_expert_intermediate_size":1024,"linear_num_key_heads":16,
      "linear_num_value_heads":64,"tie_word_embeddings":false,
      "head_dim":256,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_value_head_dim":128,
      "full_attention_interval":4,"vocab_size":248320,"max_position_embeddings":262144,"rms_norm_eps":1e-06,
      "attn_output_gate":true,"attention_bias":false,"hidden_act":"silu","dtype":"bfloat16","eos_token_id":248044,
      "rope_parameters":{"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}}})"},
    {"qwen-72b", R"({"architectures":["QWenLMHeadModel"],"hidden_size":8192,
      "intermediate_size":49152,"num_hidden_layers":80,"num_attention_heads":64,
      "kv_channels":128,"vocab_size":152064,"seq_length":32768,
      "max_position_embeddings":32768,"layer_norm_epsilon":1e-06,
      "rotary_emb_base":1000000,"rotary_pct":1.0,"no_bias":true,"bf16":true,
      "eos_token_id":151643})"},
};

const Preset* find_preset(const std::string& name) {
  for (const auto& preset : kPresets) {
    if (name == preset.name) return &preset;
  }
  return nullptr;
}

std::string preset_list() {
  std::string out;
  for (const auto& preset : kPresets) out += (out.empty() ? "" : ", ") + std::string(preset.name);
  return out;
}

}  // namespace

std::vector<std::string> fake_model_preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.emplace_back(preset.name);
  return names;
}

Expected<std::string> fake_model_preset_json(const std::string& name) {
  const Preset* preset = find_preset(name);
  if (!preset) {
    return make_error("unknown fake model \"" + name + "\" (presets: " + preset_list() +
                      "; or give a config.json path)");
  }
  return std::string(preset->config_json);
}

Expected<ModelConfig> with_layers(ModelConfig config, int layers) {
  if (layers < 1 || layers > config.layers) {
    return make_error("--layers: " + std::to_string(layers) + " is outside [1, " + std::to_string(config.layers) +
                      "] (the model's num_hidden_layers)");
  }
  config.layers = layers;
  if (!config.linear.is_linear.empty()) config.linear.is_linear.resize(layers);
  auto& only = config.moe.mlp_only_layers;
  only.erase(std::remove_if(only.begin(), only.end(), [&](int l) { return l >= layers; }), only.end());
  return config;
}

Expected<ModelConfig> fake_model_config(const std::string& name_or_path) {
  if (const Preset* preset = find_preset(name_or_path)) {
    auto config = parse_config(preset->config_json, "preset " + name_or_path);
    // Chat models stop on <|im_end|> as well as <|endoftext|> (their generation_config.json).
    const bool qwen35 = config && (config->arch == Architecture::qwen3_5 || config->arch == Architecture::qwen3_5_moe);
    if (qwen35) config->eos_ids = {248046, 248044};
    else if (config && config->arch != Architecture::qwen1) config->eos_ids = {151645, 151643};
    return config;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(name_or_path, ec)) return load_config(name_or_path);
  if (std::filesystem::is_regular_file(name_or_path, ec)) {
    auto text = read_file(name_or_path);
    if (!text) return text.error();
    return parse_config(*text, name_or_path);
  }
  return make_error("unknown fake model \"" + name_or_path + "\" (presets: " + preset_list() +
                    "; or give a config.json path or a model directory)");
}

}  // namespace xft::engine
