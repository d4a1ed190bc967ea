// The small deterministic model and prompts the serving tests batch.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/generate.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"

namespace xft::engine::serve::testing {

struct TinyModel {
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
};

// The test model of SEED (Qwen2 unless `arch` says otherwise; a mixture of
// experts takes make-test's defaults), bf16 unless `dtype` says otherwise, 2 threads.
inline TinyModel tiny_model(uint64_t seed, bool batch_invariant, int max_context,
                            Architecture arch = Architecture::qwen2, WeightFormat dtype = WeightFormat::bf16) {
  TestModelSpec spec;
  spec.seed = seed;
  spec.arch = arch;
  TinyModel t;
  t.weights = make_fake_weights(*test_model_config(spec), spec.seed);
  ModelOptions options;
  options.dtype = dtype;
  options.threads = 2;
  options.max_context = max_context;
  options.batch_invariant = batch_invariant;
  auto model = Model::load(*t.weights, options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  t.model = std::move(*model);
  return t;
}

// LENGTH token ids that differ with SALT.
inline std::vector<int32_t> prompt_of(int length, int salt) {
  std::vector<int32_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back((salt * 7919 + i * 104729) % 151000);
  return ids;
}

// The tokens `model` generates for `prompt` alone, in a sequence of its own:
// what a request must get whatever shares the server's steps.
inline std::vector<int32_t> alone(Model& model, const std::vector<int32_t>& prompt, const SamplingParams& s, int n) {
  auto seq = model.new_sequence(static_cast<int>(prompt.size()) + n);
  GenerateOptions o;
  o.sampling = s;
  o.max_new_tokens = n;
  auto r = generate(model, *seq, prompt, o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r->tokens;
}

}  // namespace xft::engine::serve::testing
