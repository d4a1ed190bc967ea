#include "engine/model/generate.h"

#include <algorithm>
#include <chrono>

namespace xft::engine {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int32_t sample_next(Model& model, TokenSampler& sampler, std::span<float> logits,
                    const Sequence& sequence) {
  TokenSampler* samplers[] = {&sampler};
  float* rows[] = {logits.data()};
  std::span<const int32_t> histories[] = {sequence.tokens()};
  const Range vocab = model.partition().vocab;
  return sample_batch(model.comm(), samplers, rows, vocab.size(), vocab.begin, histories)[0];
}

}  // namespace

std::vector<int32_t> stop_ids_for(const ModelConfig& config, std::vector<int32_t> extra) {
  std::vector<int32_t> ids = config.eos_ids;
  ids.insert(ids.end(), extra.begin(), extra.end());
  std::erase_if(ids, [](int32_t id) { return id < 0; });
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Expected<GenerateResult> generate(Model& model, Sequence& sequence,
                                  std::span<const int32_t> input, const GenerateOptions& options,
                                  const std::function<void(int32_t)>& on_token) {
  GenerateResult result;
  if (input.empty()) return make_error("nothing to generate from: the input has no tokens");
  TokenSampler sampler(options.sampling);
  auto is_stop = [&](int32_t id) {
    return std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
  };

  auto start = std::chrono::steady_clock::now();
  Chunk chunk{&sequence, input};
  auto logits = model.forward({&chunk, 1});
  if (!logits) return logits.error();
  int32_t next = sample_next(model, sampler, *logits, sequence);
  result.first_token_ms = ms_since(start);
  if (options.max_new_tokens <= 0) {
    result.finish_reason = "length";
    return result;
  }

  while (true) {
    if (is_stop(next)) {
      result.finish_reason = "stop";
      break;
    }
    result.tokens.push_back(next);
    if (on_token) on_token(next);
    if (static_cast<int>(result.tokens.size()) >= options.max_new_tokens) {
      result.finish_reason = "length";
      break;
    }
    if (sequence.length() >= sequence.capacity()) {
      result.finish_reason = "context";
      break;
    }
    start = std::chrono::steady_clock::now();
    Chunk step{&sequence, {&result.tokens.back(), 1}};
    logits = model.forward({&step, 1});
    if (!logits) return logits.error();
    next = sample_next(model, sampler, *logits, sequence);
    result.step_ms.push_back(ms_since(start));
  }
  return result;
}

}  // namespace xft::engine
