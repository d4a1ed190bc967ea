// quantization_config: the 4-bit GPTQ and AWQ variants xftctl loads, and a
// one-line refusal naming the field and the value for every other.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/config.h"
#include "engine/checkpoint/layout.h"
#include "engine/model/partition.h"

namespace xft::engine {
namespace {

std::string config_with(const nlohmann::json& quant) {
  nlohmann::json c = {{"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", 64}, {"num_hidden_layers", 1},
                      {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 128},
                      {"vocab_size", 256}};
  c["quantization_config"] = quant;
  return c.dump();
}

Expected<ModelConfig> parse(const nlohmann::json& quant) { return parse_config(config_with(quant), "config.json"); }

TEST(CheckpointQuant, GptqAndAwqVariantsAreRead) {
  auto gptq = parse({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", true}, {"sym", true}});
  ASSERT_TRUE(gptq.ok()) << gptq.error().message;
  EXPECT_EQ(gptq->quant.method, QuantMethod::gptq);
  EXPECT_EQ(gptq->quant.group_size, 128);
  EXPECT_TRUE(gptq->quant.desc_act);
  EXPECT_TRUE(gptq->quant.zero_minus_one);
  EXPECT_EQ(quant_format_name(gptq->quant), "gptq-int4");
  auto v2 = parse({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}, {"checkpoint_format", "gptq_v2"}});
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_FALSE(v2->quant.zero_minus_one);
  EXPECT_EQ(v2->quant.groups(4096), 1);
  auto awq = parse({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "gemm"}, {"zero_point", true}});
  ASSERT_TRUE(awq.ok()) << awq.error().message;
  EXPECT_EQ(quant_format_name(awq->quant), "awq-int4");
  EXPECT_FALSE(awq->quant.zero_minus_one);
  // AutoAWQ's own spelling of the fields.
  auto autoawq = parse({{"quant_method", "awq"}, {"w_bit", 4}, {"q_group_size", 64}, {"version", "GEMM"}});
  EXPECT_FALSE(autoawq.ok());  // version GEMM in capitals is not the gemm layout name transformers writes
}

TEST(CheckpointQuant, EveryOtherFormatIsRefusedNamingTheFieldAndValue) {
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 128}},
       "config.json: quantization_config: bits: 8 is not supported (only 4-bit weights are)"},
      {{{"quant_method", "gptq"}, {"bits", 3}, {"group_size", 128}},
       "config.json: quantization_config: bits: 3 is not supported (only 4-bit weights are)"},
      {{{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "gemv"}},
       "config.json: quantization_config: version: \"gemv\" is not supported (only the GEMM layout, version gemm)"},
      {{{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "exllama"}},
       "config.json: quantization_config: version: \"exllama\" is not supported (only the GEMM layout, version gemm)"},
      {{{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", false}},
       "config.json: quantization_config: zero_point: false is not supported (AWQ GEMM with zero points only)"},
      {{{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"checkpoint_format", "marlin"}},
       "config.json: quantization_config: checkpoint_format: \"marlin\" is not supported (supported: gptq, gptq_v2)"},
      {{{"quant_method", "exl2"}, {"bits", 4}},
       "config.json: quantization_config: quant_method: \"exl2\" is not supported (supported: gptq, awq with 4 bits; fp8)"},
      {{{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 100}},
       "config.json: quantization_config: group_size: 100 is not supported (a multiple of 8, or -1)"},
  };
  for (const auto& [quant, message] : cases) {
    auto config = parse(quant);
    ASSERT_FALSE(config.ok()) << quant.dump();
    EXPECT_EQ(config.error().message, message);
  }
}

TEST(CheckpointQuant, ProjectionsBecomePackedTensorsInEachLayout) {
  auto gptq = parse({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}});
  ASSERT_TRUE(gptq.ok());
  auto t = projection_tensors(*gptq, "m.down_proj", 64, 128);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].name, "m.down_proj.qweight");
  EXPECT_EQ(shape_text(t[0].shape), "[16,64]");
  EXPECT_EQ(shape_text(t[1].shape), "[4,8]");
  EXPECT_EQ(shape_text(t[2].shape), "[4,64]");
  EXPECT_EQ(shape_text(t[3].shape), "[128]");
  auto awq = parse({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}});
  ASSERT_TRUE(awq.ok());
  t = projection_tensors(*awq, "m.down_proj", 64, 128);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(shape_text(t[0].shape), "[128,8]");
}

TEST(CheckpointQuant, RankCountsThatCutAPackedInt32AreRefusedNamingThoseThatWork) {
  // 6 heads of 4: 2 ranks would put a boundary at row 12, inside a word of 8 rows.
  ModelConfig c;
  c.hidden = 64;
  c.heads = 6;
  c.kv_heads = 6;
  c.head_dim = 4;
  c.intermediate = 128;
  c.vocab = 256;
  c.quant.method = QuantMethod::gptq;
  c.quant.group_size = 32;
  auto ok = partition_model(c, 3, 1);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->mlp, (Range{64, 96}));  // whole groups of 32: 2, 1, 1
  auto refused = partition_model(c, 2, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cannot split this 4-bit checkpoint"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("(rank counts that work: 1, 3)"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace xft::engine
