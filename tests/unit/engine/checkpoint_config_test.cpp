// config.json of Qwen1/Qwen2/Qwen3 and every way it can be wrong.
#include <gtest/gtest.h>

#include "checkpoint_test_support.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/presets.h"

namespace xft::engine {
namespace {

using namespace xft::engine::testing;

ModelConfig parse_golden(const std::string& name) {
  auto config = parse_config(golden(name)["config"].dump(), "config.json");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config ? *config : ModelConfig{};
}

TEST(CheckpointConfig, Qwen1Golden) {
  ModelConfig c = parse_golden("qwen1-tiny-s5");
  EXPECT_EQ(c.arch, Architecture::qwen1);
  EXPECT_EQ(c.architecture_name, "QWenLMHeadModel");
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kv_heads, 4);  // Qwen1 is multi-head
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.intermediate, 128);  // intermediate_size 256 split between w1 and w2
  EXPECT_EQ(c.vocab, 151936);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.max_positions, 4096);
  EXPECT_EQ(c.rms_eps, 1e-6);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_TRUE(c.eos_ids.empty());
  EXPECT_EQ(c.bos_id, -1);
}

TEST(CheckpointConfig, Qwen2Golden) {
  ModelConfig c = parse_golden("qwen2-tiny-s7");
  EXPECT_EQ(c.arch, Architecture::qwen2);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.intermediate, 176);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.max_positions, 4096);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.eos_ids, std::vector<int>{151645});
  EXPECT_EQ(c.bos_id, 151643);
}

TEST(CheckpointConfig, Qwen3Golden) {
  ModelConfig c = parse_golden("qwen3-tiny-s11");
  EXPECT_EQ(c.arch, Architecture::qwen3);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);  // explicit, not hidden/heads
  EXPECT_EQ(c.intermediate, 128);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.tie_embeddings);
}

TEST(CheckpointConfig, Qwen2AlwaysHasQkvBias) {
  auto c = parse_config(R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":64,
    "intermediate_size":128,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,
    "attention_bias":false})", "config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_EQ(c->kv_heads, 4);   // defaults to num_attention_heads
  EXPECT_EQ(c->head_dim, 16);  // hidden / heads
  EXPECT_FALSE(c->tie_embeddings);
  EXPECT_EQ(c->max_positions, 32768);
}

TEST(CheckpointConfig, EosFromConfigAndGenerationConfig) {
  TempDir dir;
  write_text(dir / "config.json", golden("qwen2-tiny-s7")["config"].dump());
  write_text(dir / "generation_config.json", R"({"eos_token_id":[151643,151645],"bos_token_id":1})");
  auto c = load_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->eos_ids, (std::vector<int>{151643, 151645}));
  EXPECT_EQ(c->bos_id, 151643);  // config.json's own value wins for bos

  write_text(dir / "generation_config.json", R"({"eos_token_id":"x"})");
  EXPECT_EQ(load_config(dir.path()).error().message,
            dir / "generation_config.json" + ": eos_token_id: expected a token id or a list of token ids, got \"x\"");
}

struct BadConfig {
  std::string json;
  std::string message;
};

class CheckpointConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(CheckpointConfigErrors, OneLineNamingTheField) {
  auto c = parse_config(GetParam().json, "m/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, GetParam().message);
}

const std::string kQwen2 = R"("architectures":["Qwen2ForCausalLM"],"num_hidden_layers":1,"vocab_size":10,"intermediate_size":8)";

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, CheckpointConfigErrors,
    ::testing::Values(
        BadConfig{R"({"architectures":["LlamaForCausalLM"]})",
                  "m/config.json: architectures: architecture LlamaForCausalLM is not supported "
                  "(supported: QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM)"},
        BadConfig{R"({"hidden_size":8})",
                  "m/config.json: architectures: missing (expected one of QWenLMHeadModel, "
                  "Qwen2ForCausalLM, Qwen3ForCausalLM)"},
        BadConfig{R"({"architectures":"Qwen2ForCausalLM"})",
                  "m/config.json: architectures: expected a list with the model class name, got \"Qwen2ForCausalLM\""},
        BadConfig{"{" + kQwen2 + R"(,"num_attention_heads":2})",
                  "m/config.json: hidden_size: missing (a positive integer is required)"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":"64","num_attention_heads":2})",
                  "m/config.json: hidden_size: expected a positive integer, got \"64\""},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64.5,"num_attention_heads":2})",
                  "m/config.json: hidden_size: expected a positive integer, got 64.5"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":-2})",
                  "m/config.json: num_attention_heads: expected a positive integer, got -2"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":4,"num_key_value_heads":3})",
                  "m/config.json: num_key_value_heads: 3 does not divide num_attention_heads 4"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":4,"rope_theta":"big"})",
                  "m/config.json: rope_theta: expected a positive number, got \"big\""},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":4,"tie_word_embeddings":1})",
                  "m/config.json: tie_word_embeddings: expected true or false, got 1"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":4,"rope_scaling":{"type":"yarn"}})",
                  "m/config.json: rope_scaling: rope scaling is not supported; remove it or set it to null"},
        BadConfig{"{" + kQwen2 + R"(,"hidden_size":64,"num_attention_heads":4,"hidden_act":"gelu"})",
                  "m/config.json: hidden_act: only silu is supported, got \"gelu\""},
        BadConfig{R"({"architectures":["QWenLMHeadModel"],"hidden_size":64,"num_hidden_layers":1,
                      "num_attention_heads":4,"vocab_size":10,"intermediate_size":7})",
                  "m/config.json: intermediate_size: must be even (Qwen1 splits it between mlp.w1 and mlp.w2), got 7"},
        BadConfig{"[1,2]", "m/config.json: expected a JSON object at the top level"},
        BadConfig{"{\"a\":", "m/config.json: not valid JSON ([json.exception.parse_error.101] parse error at line 1, "
                             "column 6: syntax error while parsing value - unexpected end of input; expected '[', "
                             "'{', or a literal)"}));

TEST(CheckpointConfig, MissingConfigJson) {
  TempDir dir;
  EXPECT_EQ(load_config(dir.path()).error().message,
            dir / "config.json" + ": missing (is " + dir.path() + " a Hugging Face model directory?)");
}

TEST(CheckpointPresets, RealModelShapes) {
  struct Row {
    const char* name;
    int hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
    bool tie;
    int max_positions;
  };
  const Row rows[] = {
      {"qwen2.5-0.5b", 896, 24, 14, 2, 64, 4864, 151936, true, 32768},
      {"qwen2.5-1.5b", 1536, 28, 12, 2, 128, 8960, 151936, true, 32768},
      {"qwen2.5-7b", 3584, 28, 28, 4, 128, 18944, 152064, false, 32768},
      {"qwen2.5-72b", 8192, 80, 64, 8, 128, 29568, 152064, false, 32768},
      {"qwen3-0.6b", 1024, 28, 16, 8, 128, 3072, 151936, true, 40960},
      {"qwen-72b", 8192, 80, 64, 64, 128, 24576, 152064, false, 32768},
  };
  ASSERT_EQ(fake_model_preset_names().size(), std::size(rows));
  for (const auto& row : rows) {
    auto c = fake_model_config(row.name);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->hidden, row.hidden) << row.name;
    EXPECT_EQ(c->layers, row.layers) << row.name;
    EXPECT_EQ(c->heads, row.heads) << row.name;
    EXPECT_EQ(c->kv_heads, row.kv_heads) << row.name;
    EXPECT_EQ(c->head_dim, row.head_dim) << row.name;
    EXPECT_EQ(c->intermediate, row.intermediate) << row.name;
    EXPECT_EQ(c->vocab, row.vocab) << row.name;
    EXPECT_EQ(c->tie_embeddings, row.tie) << row.name;
    EXPECT_EQ(c->max_positions, row.max_positions) << row.name;
    EXPECT_EQ(c->rope_theta, 1e6) << row.name;
    EXPECT_FALSE(c->eos_ids.empty()) << row.name;
  }
  EXPECT_TRUE(fake_model_config("qwen3-0.6b")->qk_norm);
  EXPECT_TRUE(fake_model_config("qwen-72b")->qkv_bias);
}

TEST(CheckpointPresets, ConfigFileOrDirectoryOrError) {
  TempDir dir;
  write_text(dir / "config.json", golden("qwen3-tiny-s11")["config"].dump());
  EXPECT_EQ(fake_model_config(dir / "config.json")->head_dim, 32);
  EXPECT_EQ(fake_model_config(dir.path())->head_dim, 32);
  EXPECT_EQ(fake_model_config("qwen9").error().message,
            "unknown fake model \"qwen9\" (presets: qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, "
            "qwen2.5-72b, qwen3-0.6b, qwen-72b; or give a config.json path or a model directory)");
}

}  // namespace
}  // namespace xft::engine
