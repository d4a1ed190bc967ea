// Which blocks make up a layer of each supported architecture, and what the
// checkpoint calls its tensors: the one table the model is composed from.
// A layer is a token mixer then a feed-forward, each after its RMSNorm and
// added to the residual stream. New families (e.g. Qwen3.5's hybrid layers)
// add a row and, where needed, a block kind.
#pragma once

#include "engine/checkpoint/config.h"

namespace xft::engine {

enum class TokenMixerKind {
  attention_fused_qkv,  // Qwen1: attn.c_attn stacks q, k, v; attn.c_proj
  attention,            // Qwen2/Qwen3 and their MoE: self_attn.{q,k,v,o}_proj (Qwen3.5: q_proj also holds the output gate)
  gated_delta_net,      // Qwen3.5's linear-attention layers: linear_attn.* (blocks/gated_delta_net.h)
};

enum class FeedForwardKind {
  dense_mlp,           // SwiGLU of intermediate_size
  mixture_of_experts,  // engine/model/blocks/moe.h
};

struct ArchitectureLayout {
  Architecture arch;
  const char* embed;         // token embedding table
  const char* final_norm;
  const char* lm_head;       // untied output head
  const char* layer_prefix;  // + layer index + "."
  const char* input_norm;    // before the token mixer (under the layer)
  const char* post_norm;     // before the feed-forward (under the layer)
  TokenMixerKind mixer;
  // The dense MLP's projections (under the layer; Qwen1: c_proj(w1(x) * silu(w2(x)))).
  const char* mlp_gate;
  const char* mlp_up;
  const char* mlp_down;
  const char* moe_prefix;  // the sparse block's tensors (under the layer); null: never sparse
  bool fused_experts;      // experts stacked in experts.gate_up_proj / experts.down_proj (blocks/fused_experts.h)
};

const ArchitectureLayout& architecture_layout(Architecture arch);

// The feed-forward of layer `layer`: the mixture of experts where the
// architecture has one and config.json makes the layer sparse (is_moe_layer).
FeedForwardKind feed_forward_kind(const ModelConfig& config, int layer);

// The token mixer of layer `layer`: Gated DeltaNet where layer_types says
// linear_attention, else the architecture's attention.
TokenMixerKind token_mixer_kind(const ModelConfig& config, int layer);

}  // namespace xft::engine
