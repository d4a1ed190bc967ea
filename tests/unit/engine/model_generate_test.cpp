#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/test_model.h"
#include "engine/model/generate.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine {
namespace {

// qwen1-tiny-s5's reference greedy continuation of its first golden prompt.
struct Fixture {
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
  std::vector<int32_t> prompt, greedy;
};

Fixture load_qwen1() {
  std::string path = xft::test::data_dir() + "/golden/qwen1-tiny-s5.json";
  if (!std::filesystem::exists(path)) {
    path = xft::test::source_dir() + "/../shared/fixtures/golden/qwen1-tiny-s5.json";
  }
  std::ifstream in(path);
  auto json = nlohmann::json::parse(in);
  Fixture f;
  auto spec = parse_generator_args(json["generator"].get<std::string>());
  auto config = test_model_config(*spec);
  f.weights = make_fake_weights(*config, spec->seed);
  ModelOptions options;
  options.dtype = WeightFormat::f32;
  options.kv = KvFormat::f16;
  options.threads = 2;
  options.max_context = 64;
  auto model = Model::load(*f.weights, options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  f.model = std::move(*model);
  for (const auto& id : json["cases"][0]["prompt"]) f.prompt.push_back(id.get<int32_t>());
  for (const auto& g : json["cases"][0]["greedy"]) f.greedy.push_back(g["id"].get<int32_t>());
  return f;
}

GenerateOptions greedy_options(int max_new_tokens) {
  GenerateOptions o;
  o.sampling.greedy = true;
  o.max_new_tokens = max_new_tokens;
  return o;
}

TEST(Generate, GreedyStreamsTheReferenceContinuationUpToTheBudget) {
  Fixture f = load_qwen1();
  auto seq = f.model->new_sequence();
  std::vector<int32_t> streamed;
  auto r = generate(*f.model, *seq, f.prompt, greedy_options(10),
                    [&](int32_t id) { streamed.push_back(id); });
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::vector<int32_t> expected(f.greedy.begin(), f.greedy.begin() + 10);
  EXPECT_EQ(r->tokens, expected);
  EXPECT_EQ(streamed, expected);
  EXPECT_EQ(r->finish_reason, "length");
  EXPECT_EQ(r->step_ms.size(), 9u);
  // The last emitted token is not fed: the cache holds prompt + 9 tokens.
  EXPECT_EQ(seq->length(), static_cast<int>(f.prompt.size()) + 9);
}

TEST(Generate, StopTokenEndsWithoutBeingEmittedOrCached) {
  Fixture f = load_qwen1();
  auto seq = f.model->new_sequence();
  GenerateOptions o = greedy_options(16);
  o.stop_ids = {f.greedy[3]};
  auto r = generate(*f.model, *seq, f.prompt, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, std::vector<int32_t>(f.greedy.begin(), f.greedy.begin() + 3));
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(seq->length(), static_cast<int>(f.prompt.size()) + 3);
}

TEST(Generate, AFullContextEndsTheAnswer) {
  Fixture f = load_qwen1();
  auto seq = f.model->new_sequence(static_cast<int>(f.prompt.size()) + 2);
  auto r = generate(*f.model, *seq, f.prompt, greedy_options(16));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, std::vector<int32_t>(f.greedy.begin(), f.greedy.begin() + 3));
  EXPECT_EQ(r->finish_reason, "context");
}

TEST(Generate, ContinuingASequenceEqualsOnePass) {
  // Chat: the second turn reuses the cache; feeding the prompt in two parts
  // must give the same continuation as feeding it at once.
  Fixture f = load_qwen1();
  auto seq = f.model->new_sequence();
  const std::span<const int32_t> prompt(f.prompt);
  auto first = generate(*f.model, *seq, prompt.first(5), greedy_options(0));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->tokens.empty());
  seq->truncate(5);
  auto r = generate(*f.model, *seq, prompt.subspan(5), greedy_options(6));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, std::vector<int32_t>(f.greedy.begin(), f.greedy.begin() + 6));
}

TEST(Generate, StopIdsJoinConfigAndTokenizerEndTokens) {
  ModelConfig c;
  c.eos_ids = {151645, 151643};
  EXPECT_EQ(stop_ids_for(c, {151645, -1, 151643}), (std::vector<int32_t>{151643, 151645}));
}

}  // namespace
}  // namespace xft::engine
