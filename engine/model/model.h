// The Qwen decoder (Qwen1 QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM,
// Qwen2MoeForCausalLM, Qwen3MoeForCausalLM) on one tensor-parallel rank: the
// rank loads only its slice (partition.h), runs every layer on it and meets
// the other ranks in two allreduces per layer (after the token mixer and
// after the feed-forward). The same code serves one rank
// (SingleRankCommunicator: the collectives do nothing), ranks as threads in
// one process (tests) and MPI ranks.
//
// A layer is composed from blocks the architecture table picks
// (architectures.h), on m token rows:
//   h += allreduce(mixer(rmsnorm(h, ln_1)))        blocks/attention.h
//   h += allreduce(feed_forward(rmsnorm(h, ln_2)))  blocks/dense_mlp.h or blocks/moe.h
// then logits = rmsnorm(h, ln_f) · Wheadᵀ over this rank's vocabulary slice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/weights.h"
#include "engine/comm/communicator.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/blocks/attention.h"
#include "engine/model/blocks/feed_forward.h"
#include "engine/model/blocks/gated_delta_net.h"
#include "engine/model/partition.h"

namespace xft::engine {

struct ModelOptions {
  WeightFormat dtype = WeightFormat::bf16;
  KvFormat kv = KvFormat::bf16;
  int tp_rank = 0;
  int tp_size = 1;
  Communicator* comm = nullptr;  // null: a single rank
  std::vector<int> cpus;         // OS cpu ids for this rank's threads; empty: not pinned
  int threads = 0;               // 0: cpus.size(), else every cpu this process may use
  int max_context = 0;           // KV positions per sequence; 0: min(max_positions, 8192)
  // Every token row gets the same bits whatever shares its pass (other
  // sequences, or the rest of its prompt when a prompt is cut into chunks):
  // every row goes through the GEMV kernels and attends on its own (the
  // server's continuous batching; oneDNN's matmul sums in another order).
  bool batch_invariant = false;
  // Told how far the load is, in bytes of stored weights this rank reads
  // (done, total; total estimated from config.json, so done may pass it
  // before the last call, which is (total, total)). Called from the loader
  // threads one at a time.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// One conversation's state on this rank: its KV cache and the tokens seen.
class Sequence {
 public:
  int length() const { return static_cast<int>(tokens_.size()); }  // positions cached
  int capacity() const { return capacity_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t kv_bytes() const;
  // Bytes of the linear-attention layers' state (Qwen3.5): fixed per sequence.
  size_t linear_state_bytes() const;
  // Forgets positions n and later (a chat turn re-tokenized differently);
  // their cache slots are simply overwritten by what comes next.
  // A linear-attention (Qwen3.5) state holds no positions to forget: it can
  // only start over, so there every truncation goes back to an empty sequence.
  void truncate(int n);
  bool has_linear_state() const;
  // Appends positions [begin, begin + n) of `from`, a sequence of the same
  // model on the same rank: their tokens and, bit for bit, their keys and
  // values (a cached prompt prefix is copied in instead of prefilled again).
  Expected<void> append_copy(const Sequence& from, int begin, int n);

  // The linear-attention layers' state (Qwen3.5), one per layer (empty for
  // attention layers): what the tokens so far left behind, which positions
  // alone cannot rebuild.
  using LinearStates = std::vector<LinearAttentionState>;
  const LinearStates& linear_states() const { return linear_; }
  // Frees the linear-attention state of a sequence used only as a store of
  // attention keys and values (a cached prompt block).
  void drop_linear_states() { linear_.clear(); }
  // Starts this empty sequence from cached blocks (every position of each, in
  // order) and `state`, the linear-attention state after the blocks' last
  // token: the sequence then continues as if it had prefilled them.
  Expected<void> resume(std::span<const Sequence* const> blocks, const LinearStates& state);

 private:
  friend class Model;
  using HeadGroup = KvHeadGroup;
  Expected<void> copy_attention(const Sequence& from, int begin, int n);
  int capacity_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<std::vector<HeadGroup>> layers_;  // empty for linear-attention layers
  std::vector<LinearAttentionState> linear_;    // per layer; empty for attention layers
};

// Tokens to append to one sequence in a forward pass.
struct Chunk {
  Sequence* sequence = nullptr;
  std::span<const int32_t> tokens;
};

class Model {
 public:
  static Expected<std::unique_ptr<Model>> load(const WeightSource& weights,
                                               const ModelOptions& options);
  ~Model();

  const ModelConfig& config() const { return config_; }
  const RankPartition& partition() const { return partition_; }
  const ModelOptions& options() const { return options_; }
  Communicator& comm() { return *comm_; }
  ThreadPool& pool() { return *pool_; }
  int max_context() const { return max_context_; }
  // This rank's packed weights (what one decode step streams) plus embedding.
  uint64_t weight_bytes() const;
  // Bytes one decode step reads: every projection and the head, norms, one
  // embedding row (the embedding table itself is only indexed); of a
  // mixture of experts only the router, top_k experts and the shared expert.
  uint64_t decode_weight_bytes() const;
  // The weight format of the projections: "bf16", "int8", "int4" (quantized
  // at load), "gptq-int4", "awq-int4" (as the checkpoint stores them).
  std::string format_name() const;
  // The kernel the projections use, e.g. "bf16/avx512-bf16".
  std::string kernel_name() const;

  // capacity 0: max_context().
  std::unique_ptr<Sequence> new_sequence(int capacity = 0) const;

  // Appends every chunk's tokens to its sequence and returns logits of this
  // rank's vocabulary slice (partition().vocab), row-major with
  // partition().vocab.size() columns: one row per chunk (its last token), or
  // one row per token of all chunks when all_rows. Valid until the next call.
  // Collective: every rank calls it with the same chunks.
  Expected<std::span<float>> forward(std::span<const Chunk> chunks, bool all_rows = false);

  // Full-vocabulary rows from every rank's slice rows (collective).
  std::vector<float> gather_vocab(std::span<const float> local_rows, int rows);

  // Time spent per layer in forward passes since enable_profile(true): all of
  // it, and the part spent in allreduce (waiting for peers included); in a
  // mixture-of-experts layer also routing (router projection, softmax, top-k)
  // and the experts. The last entry is the final norm and the vocabulary head.
  struct LayerTime {
    double total_ms = 0.0;
    double allreduce_ms = 0.0;
    double router_ms = 0.0;
    double experts_ms = 0.0;
  };
  bool has_experts() const;
  void enable_profile(bool on);
  const std::vector<LayerTime>& profile() const { return profile_; }

 private:
  struct Layer {
    std::vector<float> ln_1, ln_2;
    Attention mixer;
    std::unique_ptr<GatedDeltaNet> linear_mixer;  // instead of `mixer` in a linear-attention layer
    std::unique_ptr<FeedForward> feed_forward;
  };

  Model() = default;
  Expected<void> load_weights(const WeightSource& weights);
  Expected<Layer> load_layer(const WeightSource& weights, int index);
  void embed(std::span<const int32_t> tokens, float* out);
  void run_layer(const Layer& layer, int layer_index, std::span<const Chunk> chunks, int m);
  void allreduce(float* data, size_t n);
  void project(const Linear& linear, const float* x, int m, float* y) const;

  ModelConfig config_;
  ModelOptions options_;
  RankPartition partition_;
  std::unique_ptr<SingleRankCommunicator> own_comm_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<ThreadPool> pool_;
  int max_context_ = 0;
  AttentionShape shape_;
  std::vector<Sequence::HeadGroup> head_groups_;  // template for new sequences (caches empty)

  std::vector<uint16_t> embed_bf16_;  // [vocab slice][hidden]
  std::vector<float> embed_f32_;      // used instead when the checkpoint is not bf16
  bool embed_from_head_ = false;      // tied int4: rows dequantized from lm_head_
  std::vector<Layer> layers_;
  std::vector<float> ln_f_;
  Linear lm_head_;
  RopeTable rope_;

  bool profiling_ = false;
  std::vector<LayerTime> profile_;
  double* allreduce_clock_ = nullptr;  // where allreduce() adds its time while profiling
  bool rows_independent_ = false;  // this pass: batch_invariant (every row through the GEMV kernels)

  // Scratch reused across calls.
  std::vector<int32_t> tokens_;
  std::vector<int> positions_;
  std::vector<float> hidden_, normed_, proj_, last_, logits_;
  AttentionPass attention_pass_;
  LinearAttentionPass linear_pass_;
  FeedForwardPass feed_forward_pass_;
};

}  // namespace xft::engine
