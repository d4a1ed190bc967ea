// One scheduler step as every rank executes it. Rank 0 decides the plan
// (which sequences end, which prompt chunks are fed, which sequences decode
// one token) and broadcasts it; every rank then runs the same forward pass
// and the same collective sampling, so all ranks hold the same slots and
// draw the same tokens without ever sending a token back.
//
// A step is one forward pass over every chunk of the plan: the prompt chunks
// (a long prompt is cut over several steps) and one token per decoding
// sequence. Batching does not change a request's tokens when the model runs
// with ModelOptions::batch_invariant: every row then gets the bits it gets
// alone, however the prompt was cut and whatever shares the pass.
//
// Cached prompt prefixes (prefix_cache.h) live in every rank's executor as
// blocks of kPrefixBlockTokens positions under ids rank 0 hands out; the plan
// drops blocks, fills blocks from running sequences, and starts sequences
// from blocks, so every rank reuses the same prefix in the same step. A
// copied position holds the bits a prefill would have stored (keys and values
// of a position depend only on the tokens up to it when rows are batch
// invariant), so a reused prefix gives the tokens of a cold prompt.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/expected.h"
#include "engine/comm/communicator.h"
#include "engine/constrain/token_mask.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"
#include "engine/serve/prefix_cache.h"

namespace xft::engine::serve {

// The next chunk of a prompt. The first chunk (start) creates the slot's
// sequence; the last one (last) draws the request's first token.
struct PrefillOp {
  int32_t slot = 0;
  bool start = true;
  bool last = true;
  int32_t capacity = 0;  // KV positions of the new sequence (start only)
  SamplingParams sampling;  // start only
  std::vector<int32_t> tokens;
  // Start only: cached blocks copied, in order, to the new sequence's first
  // positions; `tokens` follow them.
  std::vector<int32_t> reuse = {};
  // Start only, rank 0 only (never encoded: the server refuses constraints on
  // several ranks): the grammar the request's tokens are held to.
  std::shared_ptr<const constrain::Constraint> constraint = nullptr;
};

// Block `block` gets positions [position, position + kPrefixBlockTokens) of slot's sequence
// and, with `state`, the slot's linear-attention state after the block's last position
// (StepExecutor::state_boundary() must be that position: a request resumes from such a block).
struct BlockSave {
  int32_t slot = 0;
  int32_t position = 0;
  int32_t block = 0;
  bool state = false;
};

// In a step, in this order: blocks dropped, blocks filled (from slots as they
// are before the step, released ones included), slots released, prompt
// chunks (new sequences first copy their reused blocks) and decodes.
struct StepPlan {
  bool shutdown = false;
  std::vector<int32_t> drop;     // cached blocks freed
  std::vector<BlockSave> save;
  std::vector<int32_t> release;  // slots freed before any prompt chunk or decode runs
  std::vector<PrefillOp> prefill;
  std::vector<int32_t> decode;   // slots that feed their last token and sample the next
  int draws() const;             // tokens run() returns: last prefill chunks, then decodes
  bool empty() const {
    return !shutdown && drop.empty() && save.empty() && release.empty() && prefill.empty() && decode.empty();
  }
};

std::vector<uint8_t> encode_plan(const StepPlan& plan);
Expected<StepPlan> decode_plan(std::span<const uint8_t> bytes);
// Rank 0's plan reaches every rank (collective; a no-op on one rank).
Expected<void> share_plan(Communicator& comm, StepPlan& plan);

class StepExecutor {
 public:
  StepExecutor(Model& model, int slots);
  // The token drawn for each prefill op with `last`, then for each decode
  // slot, in plan order.
  Expected<std::vector<int32_t>> run(const StepPlan& plan);
  // The log-probabilities of run()'s draws, in the same order (empty entries
  // for requests that asked for none).
  const std::vector<DrawLogprobs>& logprobs() const { return logprobs_; }
  const Sequence* sequence(int slot) const { return slots_.at(slot).sequence.get(); }
  int slots() const { return static_cast<int>(slots_.size()); }
  // Cached prefix blocks held on this rank.
  int blocks() const;
  // The length at which slot's sequence last stood on a block boundary
  // between steps, with its linear-attention state then kept (Qwen3.5);
  // -1 when there is none. A prompt chunk ends on the prompt's last block
  // boundary and decoding passes every boundary, so after its prompt a
  // sequence keeps the state at its last whole block.
  int state_boundary(int slot) const { return slots_.at(slot).boundary_length; }
  // The vocabulary's token bytes, for constrained requests (rank 0).
  void set_token_table(std::shared_ptr<const constrain::TokenTable> table) { tokens_ = std::move(table); }
  // The slot's constrained answer is a whole value: nothing may follow.
  bool constraint_closed(int slot) const {
    const auto& c = slots_.at(slot).constraint;
    return c && c->closed();
  }

 private:
  struct Slot {
    std::unique_ptr<Sequence> sequence;
    std::unique_ptr<TokenSampler> sampler;
    std::unique_ptr<constrain::ConstrainedSequence> constraint;  // null: free text
    int32_t last = -1;  // the token drawn last, fed by the next decode
    Sequence::LinearStates boundary;  // linear-attention state at boundary_length
    int boundary_length = -1;
  };

  Expected<void> check(const StepPlan& plan) const;
  Expected<void> check_blocks(const StepPlan& plan) const;
  Expected<void> apply_blocks(const StepPlan& plan);
  Expected<void> start_from_blocks(Slot& slot, std::span<const int32_t> reuse);
  void keep_boundary_states(const StepPlan& plan);
  bool has_block(int32_t id) const { return id >= 0 && id < static_cast<int>(blocks_.size()) && blocks_[id]; }
  // slots[i] samples from logits row rows[i].
  Expected<std::vector<int32_t>> sample(std::span<const int> slots, std::span<const int> rows,
                                        std::span<float> logits);
  // Draws again, over the allowed tokens' raw logits, the constrained rows whose token
  // the grammar refused (raw: index into slots, the row's raw logits; proposals: each
  // slot's sampler proposal, indexed like slots); advances their matchers.
  void redraw_refused(std::span<const int> slots, std::vector<std::pair<size_t, std::vector<float>>>& raw,
                      std::span<const Proposal> proposals, std::vector<int32_t>& drawn);

  Model& model_;
  bool linear_state_ = false;  // the model has linear-attention layers (Qwen3.5)
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Sequence>> blocks_;  // index = block id; null: free
  std::vector<Sequence::LinearStates> block_states_;  // index = block id; empty: none kept
  std::vector<DrawLogprobs> logprobs_;
  std::shared_ptr<const constrain::TokenTable> tokens_;
};

}  // namespace xft::engine::serve
