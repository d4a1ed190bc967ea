// The memory plan under `run qwen`'s rank map: each rank's share of a real
// model's shape and the warning for a host whose ranks need more than it has.
#include <gtest/gtest.h>

#include "cli/run/memory_plan.h"
#include "engine/checkpoint/presets.h"
#include "engine/model/memory_estimate.h"

namespace xft::cli::run_qwen {
namespace {

launcher::RankPlan plan_of(int hosts, int ranks_per_host, uint64_t memory_gib) {
  launcher::RankPlan plan;
  for (int h = 0; h < hosts; ++h) {
    launcher::PlanHost host;
    host.name = "h" + std::to_string(h);
    host.facts.memory_kb = memory_gib << 20;
    plan.hosts.push_back(host);
    for (int r = 0; r < ranks_per_host; ++r) {
      launcher::RankPlacement rank;
      rank.host = host.name;
      rank.rank = static_cast<int>(plan.ranks.size());
      rank.local_rank = r;
      plan.ranks.push_back(rank);
    }
  }
  return plan;
}

MemoryPlanInput qwen3_30b_a3b(engine::WeightFormat dtype) {
  auto config = engine::fake_model_config("qwen3-30b-a3b");
  EXPECT_TRUE(config.ok());
  MemoryPlanInput input;
  input.model_name = "qwen3-30b-a3b";
  input.config = *config;
  input.dtype = dtype;
  input.max_context = 4096;
  return input;
}

TEST(MemoryPlan, EveryRankHoldsItsShareOfTheExperts) {
  const MemoryPlanInput input = qwen3_30b_a3b(engine::WeightFormat::bf16);
  auto plan = plan_memory(plan_of(2, 1, 64), input);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->warnings.empty());
  // 30.5 B parameters in bf16 are about 57 GiB; each of 2 ranks holds half
  // of every expert (the embedding and head are split by vocabulary too).
  auto rank0 = engine::estimate_rank_memory(input.config, input.dtype, input.kv, 2, 0, 4096);
  ASSERT_TRUE(rank0.ok());
  EXPECT_GT(rank0->weight_bytes, 27ull << 30);
  EXPECT_LT(rank0->weight_bytes, 30ull << 30);
  // 48 layers x 4 KV heads / 2 ranks x 128 x 4096 positions x K and V x bf16.
  EXPECT_EQ(rank0->kv_bytes, 48ull * 2 * 128 * 4096 * 2 * 2);
  EXPECT_NE(plan->table.find("rank 1 on h1: "), std::string::npos) << plan->table;
}

TEST(MemoryPlan, WarnsWhenAHostsRanksNeedMoreThanItsMemory) {
  auto plan = plan_memory(plan_of(1, 2, 32), qwen3_30b_a3b(engine::WeightFormat::bf16));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_NE(plan->warnings[0].find("host h0: its ranks need"), std::string::npos) << plan->warnings[0];
  EXPECT_NE(plan->warnings[0].find("of memory (MemTotal)"), std::string::npos);
  // In int4 the same ranks fit.
  auto int4 = plan_memory(plan_of(1, 2, 32), qwen3_30b_a3b(engine::WeightFormat::int4));
  ASSERT_TRUE(int4.ok());
  EXPECT_TRUE(int4->warnings.empty()) << int4->table;
}

TEST(MemoryPlan, CountsQwen35sLinearAttentionStateOfTheSequence) {
  auto config = engine::fake_model_config("qwen3.5-27b");
  ASSERT_TRUE(config.ok()) << config.error().message;
  MemoryPlanInput input;
  input.model_name = "qwen3.5-27b";
  input.config = *config;
  input.dtype = engine::WeightFormat::int4;
  input.max_context = 4096;
  auto plan = plan_memory(plan_of(1, 2, 512), input);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // 48 of the 64 layers are Gated DeltaNet; each rank holds 24 of the 48
  // value heads and the 8 key heads they read: conv inputs of the last 3
  // positions over 2 x 8 x 128 + 24 x 128 channels, and a 128 x 128 matrix
  // per value head, in floats.
  const uint64_t per_layer = (3ull * (2 * 8 * 128 + 24 * 128) + 24ull * 128 * 128) * 4;
  for (int rank : {0, 1}) {
    auto memory = engine::estimate_rank_memory(input.config, input.dtype, input.kv, 2, rank, 4096);
    ASSERT_TRUE(memory.ok());
    EXPECT_EQ(memory->state_bytes, 48 * per_layer);
    // 16 full-attention layers x 2 of the 4 KV heads x 256 x 4096 positions x K and V x bf16.
    EXPECT_EQ(memory->kv_bytes, 16ull * 2 * 256 * 4096 * 2 * 2);
    EXPECT_EQ(memory->total(), memory->weight_bytes + memory->kv_bytes + memory->state_bytes);
  }
  EXPECT_NE(plan->table.find(" KV + 0.1 GiB linear-attention state = "), std::string::npos) << plan->table;
}

}  // namespace
}  // namespace xft::cli::run_qwen
