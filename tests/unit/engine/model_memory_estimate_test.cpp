// The rank memory estimate (config + formats, no weights read) against what
// the loader reports once the rank's slice is loaded: Model::weight_bytes()
// and a full-length sequence's KV cache and linear-attention state, dense,
// mixture-of-experts and Qwen3.5 (hybrid linear attention) test models, every
// weight format, at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/memory_estimate.h"
#include "engine/model/model.h"
#include "model_thread_communicator.h"

namespace xft::engine {
namespace {

// The estimate counts what weight_bytes() leaves out (the projections'
// biases) and simplifies the fp8 block scales of fused projections: both a
// fraction of a percent of these models (vocabulary 2048, hidden 64).
constexpr double kTolerance = 0.01;

struct Case {
  Architecture arch;
  WeightFormat format;
  int ranks;
};

std::string case_name(const Case& c) {
  return std::string(architecture_flag(c.arch)) + "_" + weight_format_name(c.format) + "_tp" + std::to_string(c.ranks);
}

class MemoryEstimate : public ::testing::TestWithParam<Case> {};

TEST_P(MemoryEstimate, MatchesTheLoadedRanks) {
  const Case& param = GetParam();
  TestModelSpec spec;
  spec.arch = param.arch;
  spec.seed = 3;
  spec.vocab = 2048;
  auto config = test_model_config(spec);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto weights = make_fake_weights(*config, spec.seed);
  constexpr int kContext = 96;
  testing::run_ranks(param.ranks, [&](int rank, Communicator& comm) {
    ModelOptions options;
    options.dtype = param.format;
    options.kv = KvFormat::bf16;
    options.threads = 1;
    options.tp_size = param.ranks;
    options.tp_rank = rank;
    options.comm = param.ranks == 1 ? nullptr : &comm;
    options.max_context = kContext;
    auto estimate = estimate_rank_memory(*config, param.format, options.kv, param.ranks, rank, kContext);
    auto model = Model::load(*weights, options);
    if (!estimate.ok()) {
      // A split the loader refuses (int4 experts narrower than two groups): refused alike.
      ASSERT_FALSE(model.ok()) << case_name(param) << ": " << estimate.error().message;
      EXPECT_EQ(model.error().message, estimate.error().message);
      return;
    }
    ASSERT_TRUE(model.ok()) << model.error().message;
    const double actual = double((*model)->weight_bytes());
    EXPECT_NEAR(double(estimate->weight_bytes), actual, kTolerance * actual)
        << case_name(param) << " rank " << rank;
    std::printf("%s rank %d: estimated %llu weight bytes, loaded %llu (%+.3f%%)\n", case_name(param).c_str(), rank,
                static_cast<unsigned long long>(estimate->weight_bytes), static_cast<unsigned long long>(actual),
                100.0 * (double(estimate->weight_bytes) - actual) / actual);
    EXPECT_EQ(estimate->max_context, (*model)->max_context());
    const auto sequence = (*model)->new_sequence();
    EXPECT_EQ(estimate->kv_bytes, sequence->kv_bytes()) << case_name(param) << " rank " << rank;
    EXPECT_EQ(estimate->state_bytes, sequence->linear_state_bytes()) << case_name(param) << " rank " << rank;
  });
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (Architecture arch : {Architecture::qwen2, Architecture::qwen3, Architecture::qwen2_moe, Architecture::qwen3_moe,
                            Architecture::qwen3_5, Architecture::qwen3_5_moe}) {
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4, WeightFormat::fp8}) {
      for (int ranks : {1, 2}) all.push_back({arch, format, ranks});
    }
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Models, MemoryEstimate, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

TEST(MemoryEstimate, ExpertsDominateAMixtureOfExperts) {
  TestModelSpec spec;
  spec.arch = Architecture::qwen3_moe;
  spec.vocab = 2048;
  auto config = test_model_config(spec);
  ASSERT_TRUE(config.ok());
  auto one = estimate_rank_memory(*config, WeightFormat::bf16, KvFormat::bf16, 1, 0, 96);
  ASSERT_TRUE(one.ok());
  // 8 experts of gate/up [32, 64] and down [64, 32 padded to 64], bf16, in each of 2 layers.
  const uint64_t experts = 2 * 8 * (2 * 32 * 64 + 64 * 64) * 2;
  ModelConfig without = *config;
  without.moe.experts = 0;
  without.moe.experts_per_token = 0;
  auto dense = estimate_rank_memory(without, WeightFormat::bf16, KvFormat::bf16, 1, 0, 96);
  ASSERT_TRUE(dense.ok());
  // Without experts every layer falls back to the dense MLP; the router goes too.
  EXPECT_GT(one->weight_bytes, dense->weight_bytes);
  EXPECT_GE(one->weight_bytes, experts);
}

TEST(MemoryEstimate, CountsTheLinearAttentionStateOfASequence) {
  TestModelSpec spec;
  spec.arch = Architecture::qwen3_5;
  spec.vocab = 2048;
  auto config = test_model_config(spec);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const LinearAttentionConfig& l = config->linear;
  int linear_layers = 0;
  for (int layer = 0; layer < config->layers; ++layer) linear_layers += l.is_linear[layer] != 0;
  ASSERT_GT(linear_layers, 0);
  // Per layer: the last conv_kernel - 1 inputs of every conv channel and a
  // [dk][dv] matrix per value head, in floats; the same at any context.
  const uint64_t per_layer = (uint64_t(l.conv_kernel - 1) * l.conv_channels() +
                              uint64_t(l.value_heads) * l.key_head_dim * l.value_head_dim) * 4;
  for (int context : {16, 96}) {
    auto one = estimate_rank_memory(*config, WeightFormat::bf16, KvFormat::bf16, 1, 0, context);
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ(one->state_bytes, linear_layers * per_layer);
    EXPECT_EQ(one->total(), one->weight_bytes + one->kv_bytes + one->state_bytes);
  }
  TestModelSpec dense_spec;
  dense_spec.arch = Architecture::qwen3;
  dense_spec.vocab = 2048;
  auto dense = test_model_config(dense_spec);
  ASSERT_TRUE(dense.ok());
  auto plain = estimate_rank_memory(*dense, WeightFormat::bf16, KvFormat::bf16, 1, 0, 96);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->state_bytes, 0u);
}

}  // namespace
}  // namespace xft::engine
