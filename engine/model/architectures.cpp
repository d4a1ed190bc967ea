#include "engine/model/architectures.h"

namespace xft::engine {

namespace {

constexpr ArchitectureLayout kLayouts[] = {
    {Architecture::qwen1, "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
     "ln_1.weight", "ln_2.weight", TokenMixerKind::attention_fused_qkv, "mlp.w2", "mlp.w1", "mlp.c_proj", nullptr, false},
    {Architecture::qwen2, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", nullptr, false},
    {Architecture::qwen3, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", nullptr, false},
    {Architecture::qwen2_moe, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", "mlp.", false},
    {Architecture::qwen3_moe, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", "mlp.", false},
    {Architecture::qwen3_5, "model.language_model.embed_tokens.weight", "model.language_model.norm.weight",
     "lm_head.weight", "model.language_model.layers.", "input_layernorm.weight", "post_attention_layernorm.weight",
     TokenMixerKind::attention, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", nullptr, false},
    {Architecture::qwen3_5_moe, "model.language_model.embed_tokens.weight", "model.language_model.norm.weight",
     "lm_head.weight", "model.language_model.layers.", "input_layernorm.weight", "post_attention_layernorm.weight",
     TokenMixerKind::attention, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "mlp.", true},
};

}  // namespace

const ArchitectureLayout& architecture_layout(Architecture arch) {
  for (const auto& layout : kLayouts) {
    if (layout.arch == arch) return layout;
  }
  return kLayouts[1];  // unreachable: every Architecture has a row
}

TokenMixerKind token_mixer_kind(const ModelConfig& config, int layer) {
  if (is_linear_attention_layer(config, layer)) return TokenMixerKind::gated_delta_net;
  return architecture_layout(config.arch).mixer;
}

FeedForwardKind feed_forward_kind(const ModelConfig& config, int layer) {
  if (architecture_layout(config.arch).moe_prefix && is_moe_layer(config, layer)) {
    return FeedForwardKind::mixture_of_experts;
  }
  return FeedForwardKind::dense_mlp;
}

}  // namespace xft::engine
