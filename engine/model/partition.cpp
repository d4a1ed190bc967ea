#include "engine/model/partition.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace xft::engine {

Range split_range(int total, int parts, int index) {
  const int base = total / parts;
  const int extra = total % parts;
  const int begin = index * base + (index < extra ? index : extra);
  const int size = base + (index < extra ? 1 : 0);
  return {begin, begin + size};
}

AttentionSlice attention_slice(int heads, int kv_heads, int tp_size, int rank) {
  AttentionSlice slice;
  slice.group = heads / kv_heads;
  slice.q_heads = split_range(heads, tp_size, rank);
  const int first_kv = slice.q_heads.begin / slice.group;
  const int last_kv = (slice.q_heads.end - 1) / slice.group;
  slice.kv_heads = {first_kv, last_kv + 1};
  return slice;
}

namespace {

// The MLP rows a 4-bit checkpoint splits in: down_proj's groups when they
// tile the MLP, else the 8 rows of an int32.
// An FP8 checkpoint's blocks: a split along a projection's rows (gate/up,
// q/k/v) or inputs (down_proj, o_proj) falls on a block bound of both.
int fp8_unit(const ModelConfig& config) { return std::lcm(config.quant.block_rows, config.quant.block_cols); }

int mlp_unit(const ModelConfig& config) {
  if (config.quant.method == QuantMethod::none) return 1;
  if (config.quant.method == QuantMethod::fp8) return fp8_unit(config);
  const int g = config.quant.group_size;
  return g > 0 && g % 8 == 0 && config.intermediate % g == 0 ? g : 8;
}

Range split_in_units(int total, int parts, int index, int unit) {
  const Range units = split_range((total + unit - 1) / unit, parts, index);
  return {std::min(total, units.begin * unit), std::min(total, units.end * unit)};
}

// Why an FP8 checkpoint cannot be split over tp ranks without cutting a
// block ("" when it can): q rows (and o_proj's inputs) on both block bounds,
// k/v rows on row-block bounds, or at the matrix's end (a partial edge block).
std::string fp8_split_problem(const ModelConfig& config, int tp) {
  const int q_width = config.heads * config.head_dim, kv_width = config.kv_heads * config.head_dim;
  for (int rank = 0; rank < tp; ++rank) {
    const AttentionSlice a = attention_slice(config.heads, config.kv_heads, tp, rank);
    for (int bound : {a.q_heads.begin, a.q_heads.end}) {
      const int row = bound * config.head_dim;
      if (row % fp8_unit(config) != 0 && row != q_width) {
        return "rank " + std::to_string(rank) + "'s query heads start or end at row " + std::to_string(row);
      }
    }
    for (int bound : {a.kv_heads.begin, a.kv_heads.end}) {
      const int row = bound * config.head_dim;
      if (row % config.quant.block_rows != 0 && row != kv_width) {
        return "rank " + std::to_string(rank) + "'s key/value heads start or end at row " + std::to_string(row);
      }
    }
    if (split_in_units(config.intermediate, tp, rank, fp8_unit(config)).size() == 0) {
      return "rank " + std::to_string(rank) + " would get no block of the MLP's " +
             std::to_string(config.intermediate) + " rows";
    }
  }
  return "";
}

// Why a 4-bit or FP8 checkpoint cannot be split over tp ranks ("" when it can).
std::string quantized_split_problem(const ModelConfig& config, int tp) {
  if (config.quant.method == QuantMethod::none) return "";
  if (config.quant.method == QuantMethod::fp8) return fp8_split_problem(config, tp);
  for (int rank = 0; rank < tp; ++rank) {
    const AttentionSlice a = attention_slice(config.heads, config.kv_heads, tp, rank);
    for (int bound : {a.q_heads.begin, a.q_heads.end, a.kv_heads.begin, a.kv_heads.end}) {
      if (bound * config.head_dim % 8 != 0) {
        return "rank " + std::to_string(rank) + "'s heads start or end at row " +
               std::to_string(bound * config.head_dim) + ", inside an int32 of 8 packed rows";
      }
    }
    if (split_in_units(config.intermediate, tp, rank, mlp_unit(config)).size() == 0) {
      return "rank " + std::to_string(rank) + " would get no MLP rows";
    }
  }
  return "";
}

// Why the experts cannot be split over tp ranks in whole groups of
// `group` inputs ("" when they can).
std::string expert_split_problem(const ModelConfig& config, int tp, int group) {
  const MoeConfig& moe = config.moe;
  if (moe.experts <= 0) return "";
  for (int rank = 0; rank < tp; ++rank) {
    if (split_in_units(moe.expert_intermediate, tp, rank, group).size() == 0) {
      return "rank " + std::to_string(rank) + " would get no group of an expert's " +
             std::to_string(moe.expert_intermediate) + " rows (moe_intermediate_size) in groups of " +
             std::to_string(group);
    }
    if (moe.shared_expert_intermediate > 0 &&
        split_in_units(moe.shared_expert_intermediate, tp, rank, group).size() == 0) {
      return "rank " + std::to_string(rank) + " would get no group of the shared expert's " +
             std::to_string(moe.shared_expert_intermediate) + " rows in groups of " + std::to_string(group);
    }
  }
  return "";
}

}  // namespace

Expected<RankPartition> partition_model(const ModelConfig& config, int tp_size, int tp_rank, int expert_group) {
  if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size) {
    return make_error("tensor parallel rank " + std::to_string(tp_rank) + " of " +
                      std::to_string(tp_size) + " is out of range");
  }
  if (config.heads <= 0 || config.kv_heads <= 0 || config.heads % config.kv_heads != 0) {
    return make_error("config.json: " + std::to_string(config.heads) +
                      " attention heads cannot be grouped over " +
                      std::to_string(config.kv_heads) + " key/value heads");
  }
  if (tp_size > config.heads) {
    return make_error("tensor parallel size " + std::to_string(tp_size) + " exceeds the model's " +
                      std::to_string(config.heads) +
                      " attention heads; use at most that many ranks");
  }
  if (tp_size > config.intermediate || tp_size > config.vocab) {
    return make_error("tensor parallel size " + std::to_string(tp_size) +
                      " exceeds the model's MLP width or vocabulary");
  }
  if (std::string problem = quantized_split_problem(config, tp_size); !problem.empty()) {
    std::string working;
    for (int tp = 1; tp <= std::min(config.heads, 64); ++tp) {
      if (quantized_split_problem(config, tp).empty()) working += (working.empty() ? "" : ", ") + std::to_string(tp);
    }
    const std::string what = config.quant.method == QuantMethod::fp8
                                 ? "this FP8 checkpoint without cutting a " + std::to_string(config.quant.block_rows) +
                                       "x" + std::to_string(config.quant.block_cols) + " weight block"
                                 : "this 4-bit checkpoint";
    return make_error("tensor parallel size " + std::to_string(tp_size) + " cannot split " + what + ": " + problem +
                      " (rank counts that work: " + (working.empty() ? "none" : working) + ")");
  }
  expert_group = std::max(1, expert_group);
  // FP8 experts split in whole blocks, as the dense MLP does.
  const bool fp8 = config.quant.method == QuantMethod::fp8;
  if (fp8) expert_group = std::lcm(expert_group, fp8_unit(config));
  if (std::string problem = expert_split_problem(config, tp_size, expert_group); !problem.empty()) {
    std::string working;
    for (int tp = 1; tp <= std::min(config.heads, 64); ++tp) {
      if (expert_split_problem(config, tp, expert_group).empty()) {
        working += (working.empty() ? "" : ", ") + std::to_string(tp);
      }
    }
    const std::string why = fp8 ? " without cutting an FP8 weight block: "
                            : expert_group > 1 ? " without cutting an int4 quantization group: " : ": ";
    return make_error("tensor parallel size " + std::to_string(tp_size) + " cannot split the experts" + why + problem +
                      " (rank counts that work: " + (working.empty() ? "none" : working) + ")");
  }
  RankPartition partition;
  partition.tp_rank = tp_rank;
  partition.tp_size = tp_size;
  partition.attention = attention_slice(config.heads, config.kv_heads, tp_size, tp_rank);
  partition.mlp = split_in_units(config.intermediate, tp_size, tp_rank, mlp_unit(config));
  partition.vocab = split_range(config.vocab, tp_size, tp_rank);
  if (config.moe.experts > 0) {
    partition.expert = split_in_units(config.moe.expert_intermediate, tp_size, tp_rank, expert_group);
    partition.shared_expert = split_in_units(config.moe.shared_expert_intermediate, tp_size, tp_rank, expert_group);
  }
  return partition;
}

static std::string to_string(Range r) {
  return "[" + std::to_string(r.begin) + "," + std::to_string(r.end) + ")";
}

std::string describe(const RankPartition& p) {
  return "rank " + std::to_string(p.tp_rank) + "/" + std::to_string(p.tp_size) + ": q heads " +
         to_string(p.attention.q_heads) + ", kv heads " + to_string(p.attention.kv_heads) +
         ", mlp rows " + to_string(p.mlp) + ", vocab " + to_string(p.vocab);
}

}  // namespace xft::engine
