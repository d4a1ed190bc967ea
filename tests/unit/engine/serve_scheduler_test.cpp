// Continuous batching must not change what a request gets: every request of a
// batch (joining at different steps, greedy or seeded sampling) receives the
// tokens `generate` gives it alone. Plus the scheduler's limits.
#include <gtest/gtest.h>

#include <thread>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/generate.h"
#include "engine/serve/scheduler.h"
#include "engine/serve/step_plan.h"
#include "tests/unit/engine/serve_test_support.h"

namespace xft::engine::serve {
namespace {

using testing::prompt_of;
using testing::TinyModel;

TinyModel tiny_model(bool batch_invariant, int max_context = 96) {
  return testing::tiny_model(7, batch_invariant, max_context);
}

SamplingParams sampling_for(int i) {
  SamplingParams s;
  if (i % 2 == 0) {
    s.greedy = true;
  } else {
    s.temperature = 0.9f;
    s.top_k = 40;
    s.top_p = 0.95f;
    s.seed = 1000 + i;
  }
  return s;
}

std::vector<int32_t> alone(Model& model, const std::vector<int32_t>& prompt, const SamplingParams& s, int n) {
  auto seq = model.new_sequence();
  GenerateOptions o;
  o.sampling = s;
  o.max_new_tokens = n;
  auto r = generate(model, *seq, prompt, o);
  EXPECT_TRUE(r.ok());
  return r->tokens;
}

TEST(ServeStepPlan, RoundTripsAndRefusesTruncatedBytes) {
  StepPlan plan;
  plan.release = {3, 1};
  SamplingParams s;
  s.temperature = 0.5f;
  s.top_k = 7;
  s.seed = 99;
  plan.prefill.push_back(PrefillOp{2, true, true, 40, s, {5, 6, 7}});
  plan.decode = {0, 4};
  auto bytes = encode_plan(plan);
  auto back = decode_plan(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->release, plan.release);
  ASSERT_EQ(back->prefill.size(), 1u);
  EXPECT_EQ(back->prefill[0].tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(back->prefill[0].capacity, 40);
  EXPECT_EQ(back->prefill[0].sampling.top_k, 7);
  EXPECT_EQ(back->prefill[0].sampling.seed, 99u);
  EXPECT_EQ(back->decode, plan.decode);
  bytes.pop_back();
  EXPECT_FALSE(decode_plan(bytes).ok());
}

TEST(ServeStepPlan, BatchedDecodeGivesEveryRequestItsTokensAlone) {
  constexpr int kRequests = 6, kTokens = 12;
  TinyModel reference = tiny_model(true);  // alone, as `run qwen` and the server run
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < kRequests; ++i) {
    expected.push_back(alone(*reference.model, prompt_of(3 + 5 * i, i), sampling_for(i), kTokens));
  }
  TinyModel batched = tiny_model(true);
  StepExecutor executor(*batched.model, kRequests);
  std::vector<std::vector<int32_t>> got(kRequests);
  std::vector<bool> started(kRequests, false);
  // Request i joins at step i; all decode together once in.
  for (int step = 0; step < kRequests + kTokens; ++step) {
    StepPlan plan;
    for (int i = 0; i < kRequests; ++i) {
      if (started[i] && static_cast<int>(got[i].size()) < kTokens) plan.decode.push_back(i);
    }
    if (step < kRequests) {
      plan.prefill.push_back(PrefillOp{step, true, true, 96, sampling_for(step), prompt_of(3 + 5 * step, step)});
      started[step] = true;
    }
    auto drawn = executor.run(plan);
    ASSERT_TRUE(drawn.ok()) << drawn.error().message;
    size_t k = 0;
    for (const auto& op : plan.prefill) got[op.slot].push_back((*drawn)[k++]);
    for (int slot : plan.decode) got[slot].push_back((*drawn)[k++]);
  }
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
}

TEST(ServeStepPlan, BadPlansAreRefused) {
  TinyModel t = tiny_model(true);
  StepExecutor executor(*t.model, 2);
  StepPlan decode_empty;
  decode_empty.decode = {1};
  EXPECT_EQ(executor.run(decode_empty).error().message, "step plan: slot 1 is empty");
  StepPlan out_of_range;
  out_of_range.release = {2};
  EXPECT_FALSE(executor.run(out_of_range).ok());
}

TEST(ServeScheduler, ConcurrentRequestsFinishWithTheirAloneTokensThroughAQueue) {
  constexpr int kRequests = 7, kTokens = 9;
  TinyModel reference = tiny_model(true);  // alone, as `run qwen` and the server run
  TinyModel served = tiny_model(true);
  SchedulerOptions options;
  options.max_batch = 3;  // the rest wait in the queue
  Scheduler scheduler(*served.model, options);
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < kRequests; ++i) {
    GenerationRequest r;
    r.prompt = prompt_of(4 + i, 100 + i);
    r.sampling = sampling_for(i);
    r.max_tokens = kTokens;
    auto s = scheduler.submit(r);
    ASSERT_TRUE(s.ok()) << s.error().message;
    streams.push_back(*s);
  }
  for (int i = 0; i < kRequests; ++i) {
    std::vector<int32_t> tokens;
    while (streams[i]->next(tokens, std::chrono::milliseconds(100))) {
    }
    EXPECT_EQ(streams[i]->finish_reason(), "length");
    EXPECT_EQ(tokens, alone(*reference.model, prompt_of(4 + i, 100 + i), sampling_for(i), kTokens)) << i;
  }
  SchedulerCounters counters = scheduler.take_counters();
  EXPECT_EQ(counters.generated_tokens, static_cast<uint64_t>(kRequests * kTokens));
  EXPECT_EQ(counters.time_to_first_token_s.size(), static_cast<size_t>(kRequests));
  stop = true;
  loop.join();
}

TEST(ServeScheduler, CancelledRequestsLeaveAndLimitsAreEnforced) {
  TinyModel t = tiny_model(true, 64);
  SchedulerOptions options;
  options.max_batch = 2;
  options.max_queue = 1;
  Scheduler scheduler(*t.model, options);
  GenerationRequest r;
  r.prompt = prompt_of(5, 1);
  r.sampling.greedy = true;
  r.max_tokens = 1000;
  auto first = scheduler.submit(r);
  ASSERT_TRUE(first.ok());
  auto second = scheduler.submit(r);  // the queue holds one
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().status, 429);

  GenerationRequest too_long = r;
  too_long.prompt = prompt_of(64, 2);
  auto refused = scheduler.submit(too_long);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().status, 400);
  EXPECT_EQ(refused.error().code, "context_length_exceeded");

  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  std::vector<int32_t> tokens;
  while (tokens.empty()) (*first)->next(tokens, std::chrono::milliseconds(100));
  (*first)->cancel();
  while ((*first)->next(tokens, std::chrono::milliseconds(100))) {
  }
  EXPECT_EQ((*first)->finish_reason(), "cancelled");
  EXPECT_LT(tokens.size(), 59u);  // left long before the context was full
  stop = true;
  loop.join();
  EXPECT_EQ(scheduler.take_counters().running, 0);
}

}  // namespace
}  // namespace xft::engine::serve
