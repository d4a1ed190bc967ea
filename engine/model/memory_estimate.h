// What one tensor-parallel rank of a model will hold, from config.json and
// the chosen formats alone (no weight is read): the weights of its slice
// (attention heads, linear-attention value heads, MLP width, every expert's
// slice and the shared expert; router, norms, embedding and head as the
// loader keeps them), the KV cache of one sequence of max_context positions
// and that sequence's linear-attention state. The same walk over the
// rank's tensors gives the bytes a load reads (the load progress total).
#pragma once

#include <cstdint>
#include <functional>

#include "common/expected.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/linear.h"
#include "engine/model/partition.h"

namespace xft::engine {

// How many bytes each kind of tensor of the rank's slice takes.
struct TensorBytes {
  // A projection [out, in] in the model's projection format (bf16, int8, int4, fp8).
  std::function<double(uint64_t out, uint64_t in)> projection;
  // A projection kept unquantized: the MoE router and Qwen2-MoE's shared-expert gate.
  std::function<double(uint64_t out, uint64_t in)> float_projection;
  // The vocabulary head [vocab slice, hidden].
  std::function<double(uint64_t out, uint64_t in)> head;
  double vector_unit = 2;  // per element of a norm or bias
  double table_unit = 2;   // per element of the embedding table
  bool embedding_held = true;  // false: a tied int4 model embeds from the head's rows
};

// The rank's weights.
uint64_t rank_weight_bytes(const ModelConfig& config, const RankPartition& part, const TensorBytes& bytes);

struct RankMemory {
  uint64_t weight_bytes = 0;  // as Model::weight_bytes() will report it
  uint64_t kv_bytes = 0;      // one sequence of max_context positions
  // One sequence's linear-attention state (Qwen3.5's Gated DeltaNet layers:
  // conv inputs and a [dk][dv] matrix per value head), whatever its length.
  uint64_t state_bytes = 0;
  int max_context = 0;        // as Model::load clamps it
  uint64_t total() const { return weight_bytes + kv_bytes + state_bytes; }
};

// checkpoint_dtype: the dtype of the checkpoint's unquantized tensors (the
// embedding is kept bf16 from bf16, else float); max_context 0: the loader's default.
Expected<RankMemory> estimate_rank_memory(const ModelConfig& config, WeightFormat dtype, KvFormat kv,
                                          int tp_size, int tp_rank, int max_context,
                                          DType checkpoint_dtype = DType::bf16);

}  // namespace xft::engine
