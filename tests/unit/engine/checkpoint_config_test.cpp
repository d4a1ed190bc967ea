// config.json of Qwen1/Qwen2/Qwen3 and every way it can be wrong.
#include <gtest/gtest.h>

#include "checkpoint_test_support.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/layout.h"
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

TEST(CheckpointConfig, Qwen3MoeGolden) {
  ModelConfig c = parse_golden("qwen3moe-tiny-s33");
  EXPECT_EQ(c.arch, Architecture::qwen3_moe);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.intermediate, 128);
  EXPECT_EQ(c.moe.experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate, 32);
  EXPECT_EQ(c.moe.shared_expert_intermediate, 0);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.decoder_sparse_step, 1);
  EXPECT_TRUE(c.moe.mlp_only_layers.empty());
  EXPECT_TRUE(is_moe_layer(c, 0));
  EXPECT_TRUE(is_moe_layer(c, 1));
}

TEST(CheckpointConfig, Qwen2MoeGolden) {
  ModelConfig c = parse_golden("qwen2moe-tiny-s37");
  EXPECT_EQ(c.arch, Architecture::qwen2_moe);
  EXPECT_EQ(c.head_dim, 16);  // hidden / heads
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.moe.experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate, 32);
  EXPECT_EQ(c.moe.shared_expert_intermediate, 128);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.eos_ids, std::vector<int>{151643});
}

// transformers: a layer is sparse unless listed in mlp_only_layers or (i + 1) % decoder_sparse_step != 0.
TEST(CheckpointConfig, SparseLayersFollowStepAndMlpOnlyLayers) {
  auto c = parse_config(R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,"head_dim":16,
    "intermediate_size":128,"num_hidden_layers":6,"num_attention_heads":4,"vocab_size":10,
    "num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":32,"decoder_sparse_step":2,
    "mlp_only_layers":[3]})", "config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::vector<bool> sparse;
  for (int i = 0; i < 6; ++i) sparse.push_back(is_moe_layer(*c, i));
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
  auto dense = parse_config(golden("qwen3-tiny-s11")["config"].dump(), "config.json");
  ASSERT_TRUE(dense.ok());
  EXPECT_FALSE(is_moe_layer(*dense, 0));
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
const std::string kQwen3Moe = R"("architectures":["Qwen3MoeForCausalLM"],"num_hidden_layers":2,"vocab_size":10,
    "intermediate_size":8,"hidden_size":64,"num_attention_heads":4,"head_dim":16)";

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, CheckpointConfigErrors,
    ::testing::Values(
        BadConfig{R"({"architectures":["LlamaForCausalLM"]})",
                  "m/config.json: architectures: architecture LlamaForCausalLM is not supported "
                  "(supported: QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, "
                  "Qwen3MoeForCausalLM, Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration)"},
        BadConfig{R"({"hidden_size":8})",
                  "m/config.json: architectures: missing (expected one of QWenLMHeadModel, "
                  "Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                  "Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration)"},
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
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts_per_tok":2,"moe_intermediate_size":32})",
                  "m/config.json: num_experts: missing (a positive integer is required)"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":0,"num_experts_per_tok":2,"moe_intermediate_size":32})",
                  "m/config.json: num_experts: expected a positive integer, got 0"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":9,"moe_intermediate_size":32})",
                  "m/config.json: num_experts_per_tok: 9 exceeds num_experts 8"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2})",
                  "m/config.json: moe_intermediate_size: missing (a positive integer is required)"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,
                      "norm_topk_prob":"yes"})",
                  "m/config.json: norm_topk_prob: expected true or false, got \"yes\""},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,
                      "decoder_sparse_step":0})",
                  "m/config.json: decoder_sparse_step: expected a positive integer, got 0"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,
                      "mlp_only_layers":[0,2]})",
                  "m/config.json: mlp_only_layers: expected layer indices in [0, 2) (num_hidden_layers), got 2"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,
                      "mlp_only_layers":1})",
                  "m/config.json: mlp_only_layers: expected a list of layer indices, got 1"},
        BadConfig{"{" + kQwen3Moe + R"(,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,
                      "shared_expert_intermediate_size":64})",
                  "m/config.json: shared_expert_intermediate_size: Qwen3-MoE has no shared expert; remove the "
                  "field or use Qwen2MoeForCausalLM"},
        BadConfig{R"({"architectures":["Qwen2MoeForCausalLM"],"num_hidden_layers":2,"vocab_size":10,
                      "intermediate_size":8,"hidden_size":64,"num_attention_heads":4,"num_experts":8,
                      "num_experts_per_tok":2,"moe_intermediate_size":32})",
                  "m/config.json: shared_expert_intermediate_size: missing (a positive integer is required)"},
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
      {"qwen3-30b-a3b", 2048, 48, 32, 4, 128, 6144, 151936, false, 40960},
      {"qwen3-235b-a22b", 4096, 94, 64, 4, 128, 12288, 151936, false, 40960},
      {"qwen2-57b-a14b", 3584, 28, 28, 4, 128, 18944, 151936, false, 32768},
      {"qwen1.5-moe-a2.7b", 2048, 24, 16, 16, 128, 5632, 151936, false, 8192},
      {"qwen-72b", 8192, 80, 64, 64, 128, 24576, 152064, false, 32768},
  };
  // and the five Qwen3.5 presets (model_qwen35_test.cpp).
  ASSERT_EQ(fake_model_preset_names().size(), std::size(rows) + 5);
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

TEST(CheckpointPresets, MixtureOfExpertsShapes) {
  struct Row {
    const char* name;
    int experts, per_token, expert_width, shared_width;
    bool normalize;
  };
  const Row rows[] = {
      {"qwen3-30b-a3b", 128, 8, 768, 0, true},
      {"qwen3-235b-a22b", 128, 8, 1536, 0, true},
      {"qwen2-57b-a14b", 64, 8, 2560, 20480, false},
      {"qwen1.5-moe-a2.7b", 60, 4, 1408, 5632, false},
  };
  for (const auto& row : rows) {
    auto c = fake_model_config(row.name);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->moe.experts, row.experts) << row.name;
    EXPECT_EQ(c->moe.experts_per_token, row.per_token) << row.name;
    EXPECT_EQ(c->moe.expert_intermediate, row.expert_width) << row.name;
    EXPECT_EQ(c->moe.shared_expert_intermediate, row.shared_width) << row.name;
    EXPECT_EQ(c->moe.norm_topk_prob, row.normalize) << row.name;
    for (int l = 0; l < c->layers; ++l) EXPECT_TRUE(is_moe_layer(*c, l)) << row.name << " layer " << l;
  }
  EXPECT_EQ(fake_model_config("qwen3-30b-a3b")->arch, Architecture::qwen3_moe);
  EXPECT_TRUE(fake_model_config("qwen3-30b-a3b")->qk_norm);
  EXPECT_TRUE(fake_model_config("qwen2-57b-a14b")->qkv_bias);
  auto cut = with_layers(*fake_model_config("qwen3-30b-a3b"), 12);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->layers, 12);
  EXPECT_EQ(with_layers(*fake_model_config("qwen3-30b-a3b"), 49).error().message,
            "--layers: 49 is outside [1, 48] (the model's num_hidden_layers)");
}

TEST(CheckpointPresets, ConfigFileOrDirectoryOrError) {
  TempDir dir;
  write_text(dir / "config.json", golden("qwen3-tiny-s11")["config"].dump());
  EXPECT_EQ(fake_model_config(dir / "config.json")->head_dim, 32);
  EXPECT_EQ(fake_model_config(dir.path())->head_dim, 32);
  EXPECT_EQ(fake_model_config("qwen9").error().message,
            "unknown fake model \"qwen9\" (presets: qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, "
            "qwen2.5-72b, qwen3-0.6b, qwen3-30b-a3b, qwen3-235b-a22b, qwen2-57b-a14b, qwen1.5-moe-a2.7b, "
            "qwen3.5-0.8b, qwen3.5-27b, qwen3.5-35b-a3b, qwen3.5-122b-a10b, qwen3.5-397b-a17b, qwen-72b; "
            "or give a config.json path or a model directory)");
}

}  // namespace
}  // namespace xft::engine

namespace xft::engine {
namespace {

// The published totals and "A…B" active counts of each model card.
TEST(CheckpointPresets, TotalAndActiveParametersMatchTheModelCards) {
  struct Row {
    const char* name;
    double total_b, active_b;
  };
  const Row rows[] = {{"qwen3-30b-a3b", 30.53, 3.35},
                      {"qwen3-235b-a22b", 235.09, 22.19},
                      {"qwen2-57b-a14b", 57.41, 14.25},
                      {"qwen1.5-moe-a2.7b", 14.32, 2.69}};
  for (const auto& row : rows) {
    const ParameterCount count = count_parameters(*fake_model_config(row.name));
    EXPECT_NEAR(count.total / 1e9, row.total_b, 0.01) << row.name;
    EXPECT_NEAR(count.active / 1e9, row.active_b, 0.01) << row.name;
  }
  const ParameterCount dense = count_parameters(*fake_model_config("qwen2.5-0.5b"));
  EXPECT_NEAR(dense.total / 1e9, 0.494, 0.001);  // tied: the embedding once
  EXPECT_EQ(dense.active, dense.total);
}

}  // namespace

// A 4-bit Qwen3.5-MoE packs each expert's and the shared expert's rows 8 per
// int32 too: a width that does not is refused at the config, naming it.
TEST(CheckpointConfig, FourBitQwen35MoeExpertWidthsPackEightRows) {
  auto gptq = golden("qwen35moe-tiny-s33")["config"];
  gptq["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}, {"desc_act", false},
                                 {"sym", true}};
  gptq["text_config"]["linear_num_value_heads"] = 8;  // the tiny golden's 4 value heads do not pack either
  auto good = parse_config(gptq.dump(), "m/config.json");
  ASSERT_TRUE(good.ok()) << good.error().message;
  for (const char* field : {"moe_intermediate_size", "shared_expert_intermediate_size"}) {
    auto bad = gptq;
    bad["text_config"][field] = 36;
    auto c = parse_config(bad.dump(), "m/config.json");
    ASSERT_FALSE(c.ok()) << field;
    EXPECT_EQ(c.error().message,
              "m/config.json: quantization_config: the 4-bit layouts pack 8 rows per int32, but a projection has 36 "
              "rows or columns")
        << field;
  }
}

}  // namespace xft::engine
