#include "engine/model/architectures.h"

namespace xft::engine {

namespace {

constexpr ArchitectureLayout kLayouts[] = {
    {Architecture::qwen1, "transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight", "transformer.h.",
     "ln_1.weight", "ln_2.weight", TokenMixerKind::attention_fused_qkv, "mlp.w2", "mlp.w1", "mlp.c_proj", nullptr},
    {Architecture::qwen2, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", nullptr},
    {Architecture::qwen3, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", nullptr},
    {Architecture::qwen2_moe, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", "mlp."},
    {Architecture::qwen3_moe, "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.",
     "input_layernorm.weight", "post_attention_layernorm.weight", TokenMixerKind::attention, "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", "mlp."},
};

}  // namespace

const ArchitectureLayout& architecture_layout(Architecture arch) {
  for (const auto& layout : kLayouts) {
    if (layout.arch == arch) return layout;
  }
  return kLayouts[1];  // unreachable: every Architecture has a row
}

FeedForwardKind feed_forward_kind(const ModelConfig& config, int layer) {
  if (architecture_layout(config.arch).moe_prefix && is_moe_layer(config, layer)) {
    return FeedForwardKind::mixture_of_experts;
  }
  return FeedForwardKind::dense_mlp;
}

}  // namespace xft::engine
