// quantization_config of Qwen's FP8 checkpoints (Qwen3-8B-FP8,
// Qwen3-30B-A3B-Instruct-2507-FP8), and a one-line refusal naming
// config.json and the field for the variants xftctl does not read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/config.h"
#include "engine/checkpoint/layout.h"
#include "engine/model/partition.h"

namespace xft::engine {
namespace {

std::string qwen3_moe_config(const nlohmann::json& quant, int expert_width = 256) {
  nlohmann::json c = {{"architectures", {"Qwen3MoeForCausalLM"}}, {"hidden_size", 256}, {"num_hidden_layers", 1},
                      {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"head_dim", 128},
                      {"intermediate_size", 256}, {"vocab_size", 256}, {"num_experts", 4},
                      {"num_experts_per_tok", 2}, {"moe_intermediate_size", expert_width}, {"norm_topk_prob", true}};
  c["quantization_config"] = quant;
  return c.dump();
}

const nlohmann::json kQwenFp8 = {{"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"},
                                 {"weight_block_size", {128, 128}}};

TEST(CheckpointFp8, QwensQuantizationConfigIsReadForMixtureOfExpertsToo) {
  auto config = parse_config(qwen3_moe_config(kQwenFp8), "config.json");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->quant.method, QuantMethod::fp8);
  EXPECT_EQ(config->quant.block_rows, 128);
  EXPECT_EQ(config->quant.block_cols, 128);
  EXPECT_EQ(quant_format_name(config->quant), "fp8");
  // A projection is the e4m3 weight and its block scales, ceil-divided.
  const auto tensors = projection_tensors(*config, "m.down_proj", 300, 129);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "m.down_proj.weight");
  EXPECT_EQ(tensors[0].dtype, DType::f8_e4m3);
  EXPECT_EQ(tensors[1].name, "m.down_proj.weight_scale_inv");
  EXPECT_EQ(tensors[1].shape, (std::vector<int64_t>{3, 2}));
}

TEST(CheckpointFp8, UnsupportedVariantsAreRefusedNamingTheField) {
  auto with = [](const char* key, const nlohmann::json& value) {
    nlohmann::json q = kQwenFp8;
    if (value.is_null()) q.erase(key);
    else q[key] = value;
    return q;
  };
  const std::pair<nlohmann::json, std::string> cases[] = {
      {with("fmt", "e5m2"), "config.json: quantization_config: fmt: \"e5m2\" is not supported (only e4m3 FP8 weights are)"},
      {with("activation_scheme", "static"),
       "config.json: quantization_config: activation_scheme: \"static\" is not supported (only dynamic: no stored "
       "input scales)"},
      {with("weight_block_size", nullptr),
       "config.json: quantization_config: weight_block_size: missing (per-tensor FP8 scales are not supported; "
       "Qwen's FP8 checkpoints give [128, 128])"},
      {with("weight_block_size", {128, 96}),
       "config.json: quantization_config: weight_block_size: [128,96] is not supported (block columns must be a "
       "multiple of 64)"},
      {with("weight_block_size", {128}),
       "config.json: quantization_config: weight_block_size: expected [rows, columns] of positive integers, got [128]"},
      {with("weight_block_size", {0, 128}),
       "config.json: quantization_config: weight_block_size: expected [rows, columns] of positive integers, got [0,128]"},
  };
  for (const auto& [quant, message] : cases) {
    auto config = parse_config(qwen3_moe_config(quant), "config.json");
    ASSERT_FALSE(config.ok()) << quant.dump();
    EXPECT_EQ(config.error().message, message);
  }
}

TEST(CheckpointFp8, TensorParallelismSplitsOnBlockBoundsOnly) {
  auto config = parse_config(qwen3_moe_config(kQwenFp8), "config.json");
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto rank1 = partition_model(*config, 2, 1);
  ASSERT_TRUE(rank1.ok()) << rank1.error().message;
  EXPECT_EQ(rank1->attention.q_heads, (Range{1, 2}));
  EXPECT_EQ(rank1->mlp, (Range{128, 256}));
  EXPECT_EQ(rank1->expert, (Range{128, 256}));
  // Experts one block wide: a second rank would cut it.
  auto narrow = parse_config(qwen3_moe_config(kQwenFp8, 128), "config.json");
  ASSERT_TRUE(narrow.ok()) << narrow.error().message;
  auto refused = partition_model(*narrow, 2, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "tensor parallel size 2 cannot split the experts without cutting an FP8 weight block: rank 1 would get no "
            "group of an expert's 128 rows (moe_intermediate_size) in groups of 128 (rank counts that work: 1)");
}

}  // namespace
}  // namespace xft::engine
