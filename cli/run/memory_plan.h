// Whether the model fits the plan: per rank the bytes its slice of the
// weights and one sequence's KV cache will take (engine/model/memory_estimate.h,
// from config.json alone), and per host their sum against its memory
// (MemTotal in its facts). Printed under the rank map before any rank starts.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/linear.h"
#include "launcher/topology.h"

namespace xft::cli::run_qwen {

struct MemoryPlanInput {
  std::string model_name;
  engine::ModelConfig config;
  engine::DType checkpoint_dtype = engine::DType::bf16;
  engine::WeightFormat dtype = engine::WeightFormat::bf16;
  engine::KvFormat kv = engine::KvFormat::bf16;
  int max_context = 0;  // 0: the loader's default
};

struct MemoryPlan {
  std::string table;                  // a line per rank
  std::vector<std::string> warnings;  // a line per host whose ranks need more than its memory
};

// Fails when the plan's rank count cannot split the model (the load would too).
Expected<MemoryPlan> plan_memory(const launcher::RankPlan& plan, const MemoryPlanInput& input);

}  // namespace xft::cli::run_qwen
