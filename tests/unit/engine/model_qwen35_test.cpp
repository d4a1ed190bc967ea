// Qwen3.5 (hybrid Gated DeltaNet + gated attention, dense and MoE): its
// config.json as published (settings under text_config), the per-sequence
// linear-attention state, and a prompt's logits the same whether it is
// prefilled at once (the chunked delta rule), in pieces, or token by token.
// The logits against the independent reference are in model_golden_test.cpp
// (1 rank, and 2 to 4 ranks splitting the linear-attention heads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint_test_support.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/presets.h"
#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/model.h"

namespace xft::engine {
namespace {

using namespace xft::engine::testing;

ModelConfig parse_golden_config(const std::string& name) {
  auto config = parse_config(golden(name)["config"].dump(), "config.json");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config ? *config : ModelConfig{};
}

TEST(Qwen35Config, DenseGoldenReadsTextConfig) {
  const ModelConfig c = parse_golden_config("qwen35-tiny-s19");
  EXPECT_EQ(c.arch, Architecture::qwen3_5);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rotary_dim, 16);
  EXPECT_EQ(c.rope_theta, 1e7);
  EXPECT_EQ(c.intermediate, 128);
  EXPECT_EQ(c.vocab, 248320);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_TRUE(c.attn_output_gate);
  EXPECT_TRUE(c.zero_centred_norms);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.linear.key_heads, 2);
  EXPECT_EQ(c.linear.value_heads, 4);
  EXPECT_EQ(c.linear.key_head_dim, 16);
  EXPECT_EQ(c.linear.value_head_dim, 16);
  EXPECT_EQ(c.linear.conv_kernel, 4);
  EXPECT_EQ(c.linear.is_linear, (std::vector<char>{1, 1, 1, 0}));
  EXPECT_EQ(c.eos_ids, std::vector<int>{248044});
  EXPECT_EQ(c.moe.experts, 0);
}

TEST(Qwen35Config, MoeGoldenHasSharedExpertAndRenormalizedRouting) {
  const ModelConfig c = parse_golden_config("qwen35moe-tiny-s33");
  EXPECT_EQ(c.arch, Architecture::qwen3_5_moe);
  EXPECT_EQ(c.moe.experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate, 32);
  EXPECT_EQ(c.moe.shared_expert_intermediate, 32);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.linear.is_linear, (std::vector<char>{1, 0}));
  EXPECT_TRUE(is_moe_layer(c, 0));
  EXPECT_TRUE(is_moe_layer(c, 1));
}

TEST(Qwen35Config, FullAttentionIntervalWhenLayerTypesAreAbsent) {
  nlohmann::json config = golden("qwen35-tiny-s19")["config"];
  config["text_config"].erase("layer_types");
  config["text_config"]["num_hidden_layers"] = 8;
  config["text_config"]["full_attention_interval"] = 4;
  auto parsed = parse_config(config.dump(), "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->linear.is_linear, (std::vector<char>{1, 1, 1, 0, 1, 1, 1, 0}));
}

TEST(Qwen35Config, ErrorsNameTheField) {
  const nlohmann::json base = golden("qwen35-tiny-s19")["config"];
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {[](auto& j) { j.erase("text_config"); },
       "config.json: text_config: missing or not an object (Qwen3.5 keeps the text model's settings there)"},
      {[](auto& j) { j["text_config"]["layer_types"] = {"linear_attention"}; },
       "config.json: text_config: layer_types: expected a list of num_hidden_layers (4) entries, got "
       "[\"linear_attention\"]"},
      {[](auto& j) { j["text_config"]["layer_types"][1] = "sliding_attention"; },
       "config.json: text_config: layer_types: expected \"linear_attention\" or \"full_attention\", got "
       "\"sliding_attention\""},
      {[](auto& j) { j["text_config"]["linear_num_value_heads"] = 3; },
       "config.json: text_config: linear_num_value_heads: 3 is not a multiple of linear_num_key_heads 2"},
      {[](auto& j) { j["text_config"].erase("linear_key_head_dim"); },
       "config.json: text_config: linear_key_head_dim: missing (a positive integer is required)"},
      {[](auto& j) { j["text_config"]["rope_parameters"]["partial_rotary_factor"] = 0.3; },
       "config.json: text_config: partial_rotary_factor: head_dim 64 x 0.300000 must be a positive even number of "
       "rotary dimensions"},
  };
  for (const Case& c : cases) {
    nlohmann::json config = base;
    c.edit(config);
    auto parsed = parse_config(config.dump(), "config.json");
    ASSERT_FALSE(parsed.ok()) << c.message;
    EXPECT_EQ(parsed.error().message, c.message);
  }
}

// The published config.json shapes (text_config) of each preset.
TEST(Qwen35Presets, PublishedShapes) {
  struct Row {
    const char* name;
    int hidden, layers, heads, kv_heads, intermediate, value_heads, experts, top_k, expert_width;
    bool tie;
  };
  const Row rows[] = {
      {"qwen3.5-0.8b", 1024, 24, 8, 2, 3584, 16, 0, 0, 0, true},
      {"qwen3.5-27b", 5120, 64, 24, 4, 17408, 48, 0, 0, 0, false},
      {"qwen3.5-35b-a3b", 2048, 40, 16, 2, 512, 32, 256, 8, 512, false},
      {"qwen3.5-122b-a10b", 3072, 48, 32, 2, 1024, 64, 256, 8, 1024, false},
      {"qwen3.5-397b-a17b", 4096, 60, 32, 2, 1024, 64, 512, 10, 1024, false},
  };
  for (const Row& row : rows) {
    auto c = fake_model_config(row.name);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->arch, row.experts ? Architecture::qwen3_5_moe : Architecture::qwen3_5) << row.name;
    EXPECT_EQ(c->hidden, row.hidden) << row.name;
    EXPECT_EQ(c->layers, row.layers) << row.name;
    EXPECT_EQ(c->heads, row.heads) << row.name;
    EXPECT_EQ(c->kv_heads, row.kv_heads) << row.name;
    EXPECT_EQ(c->head_dim, 256) << row.name;
    EXPECT_EQ(c->rotary_dim, 64) << row.name;
    EXPECT_EQ(c->intermediate, row.intermediate) << row.name;
    EXPECT_EQ(c->vocab, 248320) << row.name;
    EXPECT_EQ(c->tie_embeddings, row.tie) << row.name;
    EXPECT_EQ(c->linear.key_heads, 16) << row.name;
    EXPECT_EQ(c->linear.value_heads, row.value_heads) << row.name;
    EXPECT_EQ(c->linear.key_head_dim, 128) << row.name;
    EXPECT_EQ(c->linear.value_head_dim, 128) << row.name;
    EXPECT_EQ(c->moe.experts, row.experts) << row.name;
    EXPECT_EQ(c->moe.experts_per_token, row.top_k) << row.name;
    EXPECT_EQ(c->moe.expert_intermediate, row.expert_width) << row.name;
    EXPECT_EQ(c->moe.shared_expert_intermediate, row.expert_width) << row.name;
    EXPECT_EQ(c->eos_ids, (std::vector<int>{248046, 248044})) << row.name;
    for (int l = 0; l < c->layers; ++l) EXPECT_EQ(is_linear_attention_layer(*c, l), l % 4 != 3) << row.name;
  }
  auto cut = with_layers(*fake_model_config("qwen3.5-0.8b"), 6);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->linear.is_linear, (std::vector<char>{1, 1, 1, 0, 1, 1}));
}

struct Loaded {
  ModelConfig config;
  uint64_t seed = 0;
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
};

Loaded load_golden_model(const std::string& name, WeightFormat format = WeightFormat::f32,
                         bool batch_invariant = false) {
  Loaded l;
  auto spec = parse_generator_args(golden(name)["generator"].get<std::string>());
  EXPECT_TRUE(spec.ok());
  auto config = test_model_config(*spec);
  EXPECT_TRUE(config.ok()) << config.error().message;
  l.config = *config;
  l.seed = spec->seed;
  l.weights = make_fake_weights(l.config, l.seed);
  ModelOptions options;
  options.dtype = format;
  options.kv = KvFormat::f32;
  options.threads = 2;
  options.max_context = 512;
  options.batch_invariant = batch_invariant;
  auto model = Model::load(*l.weights, options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (model.ok()) l.model = std::move(*model);
  return l;
}

// A published Qwen3.5 checkpoint stores its vision tower beside the text
// model, here in a second shard named by the index as the hub's are.
TEST(Qwen35Checkpoint, AVisionTowerIsSkippedWithOneNoticeLine) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  auto spec = parse_generator_args(golden("qwen35-tiny-s19")["generator"].get<std::string>());
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(write_test_model(dir, *spec).ok());
  auto plain = open_checkpoint(dir);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(vision_tower_notice(**plain, dir), "");

  const std::vector<float> patch(8 * 6, 0.5f), norm(8, 1.0f);
  write_raw_safetensors(dir + "/model-vision.safetensors",
                        {{"model.visual.patch_embed.proj.weight", "F32", {8, 6}, bytes_of(patch)},
                         {"model.visual.blocks.0.norm1.weight", "F32", {8}, bytes_of(norm)},
                         {"model.visual.merger.norm.weight", "F32", {8}, bytes_of(norm)}});
  nlohmann::json index;
  index["metadata"] = nlohmann::json::object();
  for (const std::string& name : (*plain)->tensor_names()) index["weight_map"][name] = "model.safetensors";
  for (const char* name : {"model.visual.patch_embed.proj.weight", "model.visual.blocks.0.norm1.weight",
                           "model.visual.merger.norm.weight"}) {
    index["weight_map"][name] = "model-vision.safetensors";
  }
  write_text(dir + "/model.safetensors.index.json", index.dump());
  auto with_vision = open_checkpoint(dir);
  ASSERT_TRUE(with_vision.ok()) << with_vision.error().message;
  EXPECT_EQ(vision_tower_notice(**with_vision, dir),
            dir + ": the vision tower's 3 tensors (model.visual.*) are skipped: only the text model runs, and a "
                  "request that carries an image gets a 400");
  // The text model loads from it as from the plain checkpoint.
  ModelOptions options;
  options.dtype = WeightFormat::f32;
  options.kv = KvFormat::f32;
  options.threads = 1;
  options.max_context = 64;
  auto model = Model::load(**with_vision, options);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(vision_tower_notice(*make_fake_weights((*model)->config(), 1), "fake"), "");
}

std::vector<int32_t> long_prompt(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 7919 + 13) % 248320);
  return ids;
}

// Every position's logits: once all at once, once in pieces of odd lengths,
// once token by token (the one-step recurrence), within fp32 rounding.
TEST(Qwen35Model, PrefillAtOnceInPiecesAndTokenByTokenAgree) {
  for (const char* name : {"qwen35-tiny-s19", "qwen35moe-tiny-s33"}) {
    Loaded l = load_golden_model(name);
    ASSERT_TRUE(l.model);
    Model& m = *l.model;
    const int vocab = l.config.vocab;
    const std::vector<int32_t> prompt = long_prompt(150);  // more than two chunks of the delta rule
    auto run = [&](const std::vector<int>& pieces) {
      auto seq = m.new_sequence();
      std::vector<float> rows;
      size_t at = 0;
      for (int piece : pieces) {
        Chunk chunk{seq.get(), std::span<const int32_t>(prompt.data() + at, piece)};
        auto out = m.forward({&chunk, 1}, true);
        EXPECT_TRUE(out.ok()) << out.error().message;
        rows.insert(rows.end(), out->begin(), out->end());
        at += piece;
      }
      return rows;
    };
    const std::vector<float> whole = run({150});
    const std::vector<float> pieces = run({1, 66, 37, 46});
    const std::vector<float> single = run(std::vector<int>(150, 1));
    ASSERT_EQ(whole.size(), size_t(150) * vocab);
    ASSERT_EQ(pieces.size(), whole.size());
    ASSERT_EQ(single.size(), whole.size());
    double scale = 0, worst_pieces = 0, worst_single = 0;
    for (size_t i = 0; i < whole.size(); ++i) {
      scale = std::max(scale, double(std::abs(whole[i])));
      worst_pieces = std::max(worst_pieces, double(std::abs(whole[i] - pieces[i])));
      worst_single = std::max(worst_single, double(std::abs(whole[i] - single[i])));
    }
    EXPECT_LT(worst_pieces, 1e-4 * scale) << name;
    EXPECT_LT(worst_single, 1e-4 * scale) << name;
  }
}

// The state is fixed in size: conv inputs plus one dk x dv matrix per value
// head in each linear layer; attention layers keep their KV cache.
TEST(Qwen35Model, LinearStateIsFixedPerSequence) {
  Loaded l = load_golden_model("qwen35-tiny-s19");
  ASSERT_TRUE(l.model);
  auto seq = l.model->new_sequence();
  const LinearAttentionConfig& lin = l.config.linear;
  const size_t per_layer = (size_t(lin.conv_kernel - 1) * lin.conv_channels() +
                            size_t(lin.value_heads) * lin.key_head_dim * lin.value_head_dim) *
                           sizeof(float);
  EXPECT_EQ(seq->linear_state_bytes(), 3 * per_layer);
  EXPECT_TRUE(seq->has_linear_state());
  // One full-attention layer: 2 KV heads of 64, f32, 512 positions, keys and values.
  EXPECT_EQ(seq->kv_bytes(), size_t(2) * 64 * 512 * 4 * 2);
}

// One pass over several sequences (a long prompt in the chunked form, a
// decode step, a short prompt) gives each the logits it gets alone: the
// layer's tasks take every sequence's chunk in turn, each with its own state.
TEST(Qwen35Model, SequencesSharingAPassGetTheirLogitsAlone) {
  for (const char* name : {"qwen35-tiny-s19", "qwen35moe-tiny-s33"}) {
    Loaded l = load_golden_model(name);
    ASSERT_TRUE(l.model);
    Model& m = *l.model;
    const int vocab = l.config.vocab;
    const std::vector<int32_t> long_one = long_prompt(70);  // two chunks of the delta rule
    const std::vector<int32_t> short_one = long_prompt(9);
    const std::vector<int32_t> history = long_prompt(5);
    const int32_t next = 4321;
    auto alone = [&](const std::vector<int32_t>& before, std::span<const int32_t> tokens) {
      auto seq = m.new_sequence();
      if (!before.empty()) {
        Chunk prompt{seq.get(), before};
        EXPECT_TRUE(m.forward({&prompt, 1}).ok());
      }
      Chunk chunk{seq.get(), tokens};
      auto out = m.forward({&chunk, 1}, true);
      EXPECT_TRUE(out.ok()) << out.error().message;
      return std::vector<float>(out->begin(), out->end());
    };
    std::vector<float> want = alone({}, long_one);
    const std::vector<float> decode = alone(history, {&next, 1});
    const std::vector<float> shorter = alone({}, short_one);
    want.insert(want.end(), decode.begin(), decode.end());
    want.insert(want.end(), shorter.begin(), shorter.end());

    auto a = m.new_sequence(), b = m.new_sequence(), c = m.new_sequence();
    Chunk prompt{b.get(), history};
    ASSERT_TRUE(m.forward({&prompt, 1}).ok());
    Chunk shared[] = {{a.get(), long_one}, {b.get(), {&next, 1}}, {c.get(), short_one}};
    auto out = m.forward(shared, true);
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_EQ(out->size(), want.size());
    ASSERT_EQ(want.size(), size_t(70 + 1 + 9) * vocab);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, double(std::abs(want[i])));
      worst = std::max(worst, double(std::abs(want[i] - (*out)[i])));
    }
    EXPECT_LT(worst, 1e-4 * scale) << name;
  }
}

// The server's contract: with batch_invariant a row's logits are bit for bit
// the same alone as beside other sequences' prompts and decodes, and whether
// its prompt comes in one piece or several (the state advances one token at a
// time there, whatever the pass holds).
TEST(Qwen35Model, BatchInvariantRowsEqualAloneAndShared) {
  for (const char* name : {"qwen35-tiny-s19", "qwen35moe-tiny-s33"}) {
    Loaded l = load_golden_model(name, WeightFormat::bf16, true);
    ASSERT_TRUE(l.model);
    Model& m = *l.model;
    const int vocab = l.config.vocab;
    const std::vector<int32_t> mine = long_prompt(21);
    const std::vector<int32_t> other = long_prompt(9);
    const int32_t next = 1234;

    auto alone_seq = m.new_sequence();
    Chunk alone_prompt{alone_seq.get(), mine};
    auto out = m.forward({&alone_prompt, 1}, true);
    ASSERT_TRUE(out.ok()) << out.error().message;
    std::vector<float> alone(out->begin(), out->end());
    Chunk alone_step{alone_seq.get(), {&next, 1}};
    out = m.forward({&alone_step, 1});
    ASSERT_TRUE(out.ok());
    alone.insert(alone.end(), out->begin(), out->end());

    // The prompt in two pieces, each beside another sequence's tokens, then the decode step beside a prefill.
    auto seq = m.new_sequence();
    auto before = m.new_sequence();
    auto late = m.new_sequence();
    std::vector<float> shared;
    Chunk first[] = {{before.get(), other}, {seq.get(), std::span<const int32_t>(mine.data(), 8)}};
    out = m.forward(first, true);
    ASSERT_TRUE(out.ok()) << out.error().message;
    shared.insert(shared.end(), out->begin() + other.size() * vocab, out->end());
    const int32_t before_token = 77;
    Chunk second[] = {{seq.get(), std::span<const int32_t>(mine.data() + 8, mine.size() - 8)},
                      {before.get(), {&before_token, 1}}};
    out = m.forward(second, true);
    ASSERT_TRUE(out.ok());
    shared.insert(shared.end(), out->begin(), out->begin() + (mine.size() - 8) * vocab);
    Chunk step[] = {{late.get(), other}, {seq.get(), {&next, 1}}};
    out = m.forward(step);
    ASSERT_TRUE(out.ok());
    shared.insert(shared.end(), out->begin() + vocab, out->begin() + 2 * vocab);

    ASSERT_EQ(shared.size(), alone.size());
    EXPECT_EQ(std::memcmp(shared.data(), alone.data(), alone.size() * sizeof(float)), 0) << name;
  }
}

// A linear-attention state cannot forget positions: truncating starts over,
// and the logits of the prompt fed again equal the first run's.
TEST(Qwen35Model, TruncationStartsTheStateOver) {
  Loaded l = load_golden_model("qwen35-tiny-s19");
  ASSERT_TRUE(l.model);
  const std::vector<int32_t> prompt = long_prompt(20);
  auto seq = l.model->new_sequence();
  Chunk chunk{seq.get(), prompt};
  auto first = l.model->forward({&chunk, 1});
  ASSERT_TRUE(first.ok());
  const std::vector<float> expected(first->begin(), first->end());
  seq->truncate(5);
  EXPECT_EQ(seq->length(), 0);
  auto again = l.model->forward({&chunk, 1});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::vector<float>(again->begin(), again->end()), expected);
}

}  // namespace
}  // namespace xft::engine
