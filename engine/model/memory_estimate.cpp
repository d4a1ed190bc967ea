#include "engine/model/memory_estimate.h"

#include <algorithm>

#include "engine/model/architectures.h"
#include "engine/model/blocks/gated_delta_net.h"

namespace xft::engine {

namespace {

// This rank's slice of one Gated DeltaNet layer, as GatedDeltaNet::load keeps
// it: in_proj (q, k of the key heads its value heads read, v, z, b, a rows),
// out_proj's columns of its value heads, and float conv taps, A_log, dt_bias
// and the head norm.
double gated_delta_net_bytes(const ModelConfig& c, const RankPartition& part, const TensorBytes& bytes) {
  if (c.linear.is_linear.empty()) return 0;
  const LinearAttentionConfig& l = c.linear;
  const LinearAttentionSlice slice = linear_attention_slice(c, part.tp_size, part.tp_rank);
  const uint64_t key_heads = slice.key_heads.size(), value_heads = slice.value_heads.size();
  const uint64_t channels = 2 * key_heads * l.key_head_dim + value_heads * l.value_head_dim;
  const uint64_t projected = channels + value_heads * (l.value_head_dim + 2);
  const double floats = double(l.conv_kernel) * channels + 2.0 * value_heads + l.value_head_dim;
  return bytes.projection(projected, c.hidden) + bytes.projection(c.hidden, value_heads * l.value_head_dim) +
         floats * sizeof(float);
}

// One sequence's state in the rank's linear-attention layers, as
// GatedDeltaNet::new_state sizes it.
uint64_t linear_state_bytes(const ModelConfig& c, const RankPartition& part) {
  if (c.linear.is_linear.empty()) return 0;
  const LinearAttentionConfig& l = c.linear;
  const LinearAttentionSlice slice = linear_attention_slice(c, part.tp_size, part.tp_rank);
  const uint64_t key_heads = slice.key_heads.size(), value_heads = slice.value_heads.size();
  const uint64_t channels = 2 * key_heads * l.key_head_dim + value_heads * l.value_head_dim;
  const uint64_t per_layer = (uint64_t(l.conv_kernel - 1) * channels + value_heads * l.key_head_dim * l.value_head_dim) *
                             sizeof(float);
  uint64_t total = 0;
  for (int layer = 0; layer < c.layers; ++layer) {
    if (token_mixer_kind(c, layer) == TokenMixerKind::gated_delta_net) total += per_layer;
  }
  return total;
}

}  // namespace

uint64_t rank_weight_bytes(const ModelConfig& c, const RankPartition& part, const TensorBytes& bytes) {
  const uint64_t d = c.head_dim, hidden = c.hidden;
  const uint64_t q = part.attention.q_heads.size() * d, kv = part.attention.kv_heads.size() * d;
  const uint64_t qkv_out = q + 2 * kv + (c.attn_output_gate ? q : 0);
  double attention = bytes.projection(qkv_out, hidden) + bytes.projection(hidden, q);
  attention += bytes.vector_unit * ((c.qkv_bias ? q + 2 * kv : 0) + (c.qk_norm ? 2 * d : 0));
  const double layer_norms = bytes.vector_unit * 2 * hidden;
  const auto swiglu = [&](uint64_t width) {
    return width == 0 ? 0.0 : bytes.projection(2 * width, hidden) + bytes.projection(hidden, width);
  };
  const double dense_mlp = swiglu(part.mlp.size());
  const MoeConfig& moe = c.moe;
  double sparse = bytes.float_projection(moe.experts, hidden) + double(moe.experts) * swiglu(part.expert.size());
  if (moe.shared_expert_intermediate > 0) {
    sparse += swiglu(part.shared_expert.size()) + bytes.float_projection(1, hidden);
  }
  const double linear_attention = gated_delta_net_bytes(c, part, bytes);
  double total = 0;
  for (int l = 0; l < c.layers; ++l) {
    total += (token_mixer_kind(c, l) == TokenMixerKind::gated_delta_net ? linear_attention : attention) +
             layer_norms + (feed_forward_kind(c, l) == FeedForwardKind::mixture_of_experts ? sparse : dense_mlp);
  }
  const uint64_t vocab = part.vocab.size();
  if (bytes.embedding_held) total += bytes.table_unit * vocab * hidden;
  total += bytes.head(vocab, hidden) + bytes.vector_unit * hidden;
  return static_cast<uint64_t>(total);
}

Expected<RankMemory> estimate_rank_memory(const ModelConfig& c, WeightFormat dtype, KvFormat kv, int tp_size,
                                          int tp_rank, int max_context, DType checkpoint_dtype) {
  const bool quantize_at_load = dtype == WeightFormat::int4 && c.quant.method == QuantMethod::none;
  auto part = partition_model(c, tp_size, tp_rank, quantize_at_load ? kInt4DefaultGroup : 1);
  if (!part) return part.error();
  // As Model::load_layer and load_weights pick them.
  const WeightFormat projections = c.quant.method == QuantMethod::none  ? dtype
                                   : c.quant.method == QuantMethod::fp8 ? WeightFormat::fp8
                                                                        : WeightFormat::int4;
  const WeightFormat head = dtype == WeightFormat::fp8 ? WeightFormat::bf16 : dtype;
  TensorBytes held;
  held.projection = [projections](uint64_t out, uint64_t in) { return double(Linear::packed_bytes(projections, out, in)); };
  held.float_projection = [](uint64_t out, uint64_t in) { return double(Linear::packed_bytes(WeightFormat::f32, out, in)); };
  held.head = [head](uint64_t out, uint64_t in) { return double(Linear::packed_bytes(head, out, in)); };
  held.vector_unit = sizeof(float);
  held.table_unit = checkpoint_dtype == DType::bf16 ? 2 : 4;
  held.embedding_held = !(c.tie_embeddings && dtype == WeightFormat::int4);

  RankMemory memory;
  memory.weight_bytes = rank_weight_bytes(c, *part, held);
  int context = max_context > 0 ? max_context : 8192;
  if (c.max_positions > 0) context = std::min(context, c.max_positions);
  memory.max_context = context;
  uint64_t attention_layers = 0;
  for (int l = 0; l < c.layers; ++l) attention_layers += token_mixer_kind(c, l) != TokenMixerKind::gated_delta_net;
  // Keys and values of the rank's KV heads at every position.
  memory.kv_bytes = attention_layers * part->attention.kv_heads.size() * uint64_t(c.head_dim) * context * 2 *
                    kv_element_bytes(kv);
  memory.state_bytes = linear_state_bytes(c, *part);
  return memory;
}

}  // namespace xft::engine
