// The generation loop shared by `xftctl run qwen` and the HTTP server:
// prefill the new input of a sequence in one pass, then decode one token at a
// time until an end token or the token budget, reporting each token as it
// comes and the time every step took.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"

namespace xft::engine {

struct GenerateOptions {
  SamplingParams sampling;
  int max_new_tokens = 128;
  std::vector<int32_t> stop_ids;  // sampled but neither emitted nor fed back
};

struct GenerateResult {
  std::vector<int32_t> tokens;   // emitted tokens (no stop token)
  std::string finish_reason;     // "stop" | "length" | "context"
  double first_token_ms = 0.0;   // prefill + first sampling
  std::vector<double> step_ms;   // each later token: decode + sampling
};

// Tokens of `input` are appended to `sequence` (which may already hold a
// conversation); on_token is called for every emitted token.
Expected<GenerateResult> generate(Model& model, Sequence& sequence,
                                  std::span<const int32_t> input, const GenerateOptions& options,
                                  const std::function<void(int32_t)>& on_token = {});

// The model's end tokens: config eos ids plus the given extras (e.g. the
// tokenizer's <|im_end|> and <|endoftext|>), without duplicates or -1.
std::vector<int32_t> stop_ids_for(const ModelConfig& config, std::vector<int32_t> extra);

}  // namespace xft::engine
