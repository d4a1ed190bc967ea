// Loading what every mode of `run qwen` needs: the model (a checkpoint or
// fake weights, this rank's slice) and the tokenizer.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli/run/options.h"
#include "cli/run/rank_context.h"
#include "common/expected.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::cli::run_qwen {

using engine::Model;
using engine::Tokenizer;

struct Loaded {
  std::unique_ptr<Model> model;
  std::string name;
  double load_ms = 0.0;
};

// The weights --model or --fake-model (with --layers) names, nothing read
// yet: a checkpoint's config and tensor headers, or the fake weights' rule.
struct ModelWeights {
  std::unique_ptr<engine::WeightSource> weights;
  std::string name;
};
Expected<ModelWeights> open_model_weights(const RunOptions& o);

// --dtype and --kv-dtype as the engine's formats.
engine::WeightFormat weight_format(const std::string& text);
engine::KvFormat kv_format(const std::string& text);

Expected<Loaded> load_model(const RunOptions& o, Communicator* comm, bool batch_invariant = false);

// Rank 0 loads the tokenizer; the others only need the ids it sends.
Expected<std::optional<Tokenizer>> leader_tokenizer(const RunOptions& o, Communicator* comm);

}  // namespace xft::cli::run_qwen
