// What the prefix-cache tests share (plain and Qwen3.5's linear-attention
// layers): the test model loaded with batch-invariant rows, requests run
// through a scheduler to their length, and two chat turns served by two
// ranks as threads.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <initializer_list>
#include <thread>
#include <vector>

#include "engine/serve/prefix_cache.h"
#include "engine/serve/scheduler.h"
#include "tests/unit/engine/model_thread_communicator.h"
#include "tests/unit/engine/serve_test_support.h"

namespace xft::engine::serve::testing {

constexpr int kPrefixCacheContext = 256;

// The test model of `spec` in bf16, batch-invariant, kPrefixCacheContext
// positions, 2 threads; with `comm`, its rank's part of a comm->size()-way
// split on one thread.
inline TinyModel prefix_cache_model(const TestModelSpec& spec, KvFormat kv = KvFormat::bf16,
                                    Communicator* comm = nullptr) {
  TinyModel t;
  t.weights = make_fake_weights(*test_model_config(spec), spec.seed);
  ModelOptions options;
  options.dtype = WeightFormat::bf16;
  options.kv = kv;
  options.threads = 2;
  options.max_context = kPrefixCacheContext;
  options.batch_invariant = true;
  if (comm) {
    options.comm = comm;
    options.tp_rank = comm->rank();
    options.tp_size = comm->size();
    options.threads = 1;
  }
  auto model = Model::load(*t.weights, options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  t.model = std::move(*model);
  return t;
}

inline std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

inline SamplingParams greedy() {
  SamplingParams s;
  s.greedy = true;
  return s;
}

inline SamplingParams seeded() {
  SamplingParams s;
  s.temperature = 0.8f;
  s.top_k = 50;
  s.seed = 77;
  return s;
}

// The N tokens a request for `prompt` gets; it must end by its length.
inline std::vector<int32_t> request(Scheduler& scheduler, const std::vector<int32_t>& prompt, const SamplingParams& s,
                                    int n) {
  GenerationRequest r;
  r.prompt = prompt;
  r.sampling = s;
  r.max_tokens = n;
  auto stream = scheduler.submit(r);
  EXPECT_TRUE(stream.ok()) << stream.error().message;
  std::vector<int32_t> tokens;
  while ((*stream)->next(tokens, std::chrono::milliseconds(100))) {
  }
  EXPECT_EQ((*stream)->finish_reason(), "length");
  return tokens;
}

// A chat served by `served` with the prefix cache: turn 1 (40 tokens, 30
// greedy), turn 2 (turn 1, its answer and 20 new tokens; 12 sampled) and a
// prompt sharing turn 1's first 35 tokens (5 greedy) each get the tokens
// `reference` generates for them alone; turn 2 reuses 4 whole blocks (40 + 29
// fed tokens), the third prompt 2, and nothing is evicted.
inline void expect_turns_reuse_whole_blocks_with_cold_tokens(Model& reference, Model& served) {
  SchedulerOptions options;
  options.max_batch = 2;
  Scheduler scheduler(served, options);
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });

  const auto turn1 = prompt_of(40, 1);
  const auto answer1 = request(scheduler, turn1, greedy(), 30);
  EXPECT_EQ(answer1, alone(reference, turn1, greedy(), 30));
  const auto turn2 = concat({turn1, answer1, prompt_of(20, 2)});
  EXPECT_EQ(request(scheduler, turn2, seeded(), 12), alone(reference, turn2, seeded(), 12));
  const auto system = concat({std::vector<int32_t>(turn1.begin(), turn1.begin() + 35), prompt_of(10, 3)});
  EXPECT_EQ(request(scheduler, system, greedy(), 5), alone(reference, system, greedy(), 5));

  const PrefixCacheStats stats = scheduler.take_counters().prefix_cache;
  EXPECT_EQ(stats.lookups, 3u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.hit_tokens, static_cast<uint64_t>(4 * kPrefixBlockTokens + 2 * kPrefixBlockTokens));
  EXPECT_EQ(stats.evictions, 0u);
  stop = true;
  loop.join();
}

// Two ranks as threads serve `spec`'s model, rank 0 planning and rank 1
// following, with the prefix cache on or off: turn 1 (`turn1`, 30 greedy
// tokens), then turn 2 (turn 1, its answer and 20 new tokens; 10 greedy
// tokens). Returns both answers; `stats` gets rank 0's cache counters.
// check_model sees each rank's model before it serves.
inline std::vector<std::vector<int32_t>> serve_two_turns_on_two_ranks(
    const TestModelSpec& spec, const std::vector<int32_t>& turn1, bool prefix_cache, PrefixCacheStats& stats,
    const std::function<void(Model&)>& check_model = {}) {
  std::vector<std::vector<int32_t>> answers;
  xft::engine::testing::run_ranks(2, [&](int rank, Communicator& comm) {
    TinyModel t = prefix_cache_model(spec, KvFormat::bf16, &comm);
    if (check_model) check_model(*t.model);
    if (rank != 0) {
      EXPECT_TRUE(Scheduler::follow(*t.model, 2).ok());
      return;
    }
    SchedulerOptions options;
    options.max_batch = 2;
    options.prefix_cache = prefix_cache;
    Scheduler scheduler(*t.model, options);
    std::atomic<bool> stop{false};
    std::thread client([&] {
      answers.push_back(request(scheduler, turn1, greedy(), 30));
      answers.push_back(request(scheduler, concat({turn1, answers[0], prompt_of(20, 2)}), greedy(), 10));
      stats = scheduler.take_counters().prefix_cache;
      stop = true;
    });
    EXPECT_TRUE(scheduler.run(stop).ok());
    client.join();
  });
  return answers;
}

}  // namespace xft::engine::serve::testing
