// How a tensor-parallel rank's share of a model is chosen: the one place that
// knows the splitting rules, so loading, attention, MLP and the vocabulary
// head agree.
//
//   attention  by query heads, uneven allowed (14 heads on 4 ranks: 4,4,3,3);
//              each rank keeps the KV heads its query heads read (GQA), so KV
//              heads are replicated when ranks outnumber them
//   o_proj     by input columns (the rank's query heads), then allreduce
//   MLP        gate/up by output rows, down_proj by input columns, allreduce
//   vocabulary embedding and lm_head rows by contiguous id ranges
//   experts   every expert (and the shared expert) like the MLP: gate/up by
//              output rows, down_proj by input columns; the router and the
//              shared expert's gate are replicated, so every rank picks the
//              same experts and one allreduce after the feed-forward suffices
// A 4-bit checkpoint packs 8 rows per int32 and scales groups of inputs: its
// MLP is split in whole groups of down_proj's inputs (else in eights), and a
// rank count whose head split cuts a packed int32 is refused, naming the
// counts that work. An FP8 checkpoint is split only on its blocks' bounds
// (MLP and experts in whole blocks, heads where they end on one); other
// rank counts are refused the same way.
#pragma once

#include <string>

#include "common/expected.h"
#include "engine/checkpoint/config.h"

namespace xft::engine {

struct Range {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
  bool contains(int i) const { return i >= begin && i < end; }
  bool operator==(const Range&) const = default;
};

// Part `index` of `total` items split into `parts` contiguous ranges; the first
// total % parts ranges get one item more.
Range split_range(int total, int parts, int index);

struct AttentionSlice {
  Range q_heads;   // global query head ids
  Range kv_heads;  // global KV head ids those query heads use
  int group = 1;   // query heads per KV head
  // Index into this rank's KV heads for a global query head of the slice.
  int local_kv_head(int q_head) const { return q_head / group - kv_heads.begin; }
};

AttentionSlice attention_slice(int heads, int kv_heads, int tp_size, int rank);

struct RankPartition {
  int tp_rank = 0;
  int tp_size = 1;
  AttentionSlice attention;
  Range mlp;    // rows of gate/up (columns of down_proj)
  Range vocab;  // token ids of embedding and lm_head rows
  Range expert;         // rows of every expert's gate/up (MoE models; empty otherwise)
  Range shared_expert;  // rows of the shared expert's gate/up (Qwen2-MoE)
};

// Fails (one line) when the model cannot be split that way. expert_group:
// the input columns that quantization at load keeps in one group
// (kInt4DefaultGroup for --dtype int4, else 1): experts are split in whole
// groups of down_proj's inputs, so each rank quantizes what one rank would,
// and a rank count that would leave a rank without a group is refused with
// the counts that work.
Expected<RankPartition> partition_model(const ModelConfig& config, int tp_size, int tp_rank, int expert_group = 1);

std::string describe(const RankPartition& partition);

}  // namespace xft::engine
