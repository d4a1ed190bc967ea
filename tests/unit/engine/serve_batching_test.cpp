// Chunked prefill mixed into decode steps must not change what a request
// gets: long prompts cut into chunks of 1, 7 or 64 tokens, fed beside other
// requests' decodes and other prompts' chunks, give every request exactly the
// tokens `generate` gives it alone on the same (batch-invariant) model.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/amx_linear.h"
#include "engine/model/generate.h"
#include "engine/serve/scheduler.h"
#include "engine/serve/step_plan.h"
#include "tests/unit/engine/serve_test_support.h"

namespace xft::engine::serve {
namespace {

constexpr int kContext = 256;

using testing::alone;
using testing::prompt_of;
using testing::TinyModel;

TinyModel tiny_model() { return testing::tiny_model(11, true, kContext); }

SamplingParams sampling_for(int i) {
  SamplingParams s;
  if (i % 2 == 0) {
    s.greedy = true;
  } else {
    s.temperature = 0.8f;
    s.top_k = 50;
    s.seed = 500 + i;
  }
  return s;
}

// Prompts of 70..150 tokens: several chunks each at 7 and 64 tokens.
int prompt_length(int i) { return 70 + 16 * i; }

// Request i is submitted once request i-1 has its first token, so each joins
// while the earlier ones decode (and, with small chunks, while they still prefill).
void check_requests_get_their_tokens_alone(TinyModel& t, int prefill_chunk) {
  constexpr int kRequests = 5, kTokens = 8;
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < kRequests; ++i) {
    expected.push_back(alone(*t.model, prompt_of(prompt_length(i), i), sampling_for(i), kTokens));
  }
  SchedulerOptions options;
  options.max_batch = 4;
  options.prefill_chunk = prefill_chunk;
  Scheduler scheduler(*t.model, options);
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::vector<int32_t>> got(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    GenerationRequest r;
    r.prompt = prompt_of(prompt_length(i), i);
    r.sampling = sampling_for(i);
    r.max_tokens = kTokens;
    auto s = scheduler.submit(r);
    ASSERT_TRUE(s.ok()) << s.error().message;
    streams.push_back(*s);
    // Two submitted together at the end: their prompts share steps.
    if (i + 2 < kRequests) {
      while (got[i].empty() && streams[i]->next(got[i], std::chrono::milliseconds(100))) {
      }
    }
  }
  for (int i = 0; i < kRequests; ++i) {
    while (streams[i]->next(got[i], std::chrono::milliseconds(100))) {
    }
    EXPECT_EQ(streams[i]->finish_reason(), "length") << i;
    EXPECT_EQ(got[i], expected[i]) << "request " << i << ", chunks of " << prefill_chunk;
  }
  SchedulerCounters counters = scheduler.take_counters();
  EXPECT_EQ(counters.time_to_first_token_s.size(), static_cast<size_t>(kRequests));
  stop = true;
  loop.join();
}

class ChunkedPrefill : public ::testing::TestWithParam<int> {};

TEST_P(ChunkedPrefill, LongPromptsJoiningAtDifferentStepsGetTheirTokensAlone) {
  TinyModel t = tiny_model();
  check_requests_get_their_tokens_alone(t, GetParam());
}

INSTANTIATE_TEST_SUITE_P(ServeBatching, ChunkedPrefill, ::testing::Values(1, 7, 64, 0));

// The same contract on a mixture of experts (Qwen3-MoE, 8 experts, top 2):
// a request's experts and their sums do not depend on what shares its steps.
class ChunkedPrefillMoe : public ::testing::TestWithParam<int> {};

TEST_P(ChunkedPrefillMoe, LongPromptsJoiningAtDifferentStepsGetTheirTokensAlone) {
  TinyModel t = testing::tiny_model(11, true, kContext, Architecture::qwen3_moe);
  ASSERT_TRUE(t.model->has_experts());
  check_requests_get_their_tokens_alone(t, GetParam());
}

INSTANTIATE_TEST_SUITE_P(ServeBatching, ChunkedPrefillMoe, ::testing::Values(7, 64));

// The same contract with FP8 weights (quantized at load in 128x128 blocks),
// dense and MoE: prompt chunks above kGemvMaxRows rows run the fp8 GEMM on
// AVX512-BF16, decode steps the fp8 decode kernel.
class ChunkedPrefillFp8 : public ::testing::TestWithParam<Architecture> {};

TEST_P(ChunkedPrefillFp8, LongPromptsJoiningAtDifferentStepsGetTheirTokensAlone) {
  TinyModel t = testing::tiny_model(11, true, kContext, GetParam(), WeightFormat::fp8);
  ASSERT_EQ(t.model->kernel_name().rfind("fp8/", 0), 0u) << t.model->kernel_name();
  check_requests_get_their_tokens_alone(t, 7);
}

INSTANTIATE_TEST_SUITE_P(ServeBatching, ChunkedPrefillFp8, ::testing::Values(Architecture::qwen3, Architecture::qwen3_moe),
                         [](const ::testing::TestParamInfo<Architecture>& info) {
                           return info.param == Architecture::qwen3 ? std::string("dense") : std::string("moe");
                         });

// The same contract on the AMX kernels of each format (decode and prefill
// rows alike on the tiles), run on the tile emulator so every machine checks it.
class ChunkedPrefillEmulatedAmx : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(ChunkedPrefillEmulatedAmx, LongPromptsJoiningAtDifferentStepsGetTheirTokensAlone) {
  const AmxMode saved = amx_mode();
  set_amx_mode(AmxMode::emulated);
  TinyModel t = testing::tiny_model(11, true, kContext, Architecture::qwen2, GetParam());
  set_amx_mode(saved);
  ASSERT_EQ(t.model->kernel_name(), std::string(weight_format_name(GetParam())) + "/amx-emulated");
  check_requests_get_their_tokens_alone(t, 7);
}

INSTANTIATE_TEST_SUITE_P(ServeBatching, ChunkedPrefillEmulatedAmx,
                         ::testing::Values(WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4),
                         [](const ::testing::TestParamInfo<WeightFormat>& info) {
                           return std::string(weight_format_name(info.param));
                         });

// The plan the scheduler broadcasts: a prompt's chunks in order, the first
// one creating the sequence and only the last one drawing a token.
TEST(ServeBatching, ChunkFlagsRoundTripAndDriveTheExecutor) {
  TinyModel t = tiny_model();
  const auto prompt = prompt_of(20, 3);
  const auto expected = alone(*t.model, prompt, sampling_for(0), 3);
  StepExecutor executor(*t.model, 2);
  std::vector<int32_t> got;
  for (int begin = 0; begin < 20; begin += 8) {
    StepPlan plan;
    PrefillOp op;
    op.slot = 1;
    op.start = begin == 0;
    op.last = begin + 8 >= 20;
    op.capacity = 23;
    op.sampling = sampling_for(0);
    op.tokens.assign(prompt.begin() + begin, prompt.begin() + std::min(20, begin + 8));
    plan.prefill.push_back(op);
    auto back = decode_plan(encode_plan(plan));
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->prefill.size(), 1u);
    EXPECT_EQ(back->prefill[0].start, op.start);
    EXPECT_EQ(back->prefill[0].last, op.last);
    EXPECT_EQ(back->prefill[0].tokens, op.tokens);
    EXPECT_EQ(back->draws(), op.last ? 1 : 0);
    auto drawn = executor.run(*back);
    ASSERT_TRUE(drawn.ok()) << drawn.error().message;
    ASSERT_EQ(drawn->size(), static_cast<size_t>(back->draws()));
    got.insert(got.end(), drawn->begin(), drawn->end());
  }
  for (int i = 0; i < 2; ++i) {
    StepPlan plan;
    plan.decode = {1};
    auto drawn = executor.run(plan);
    ASSERT_TRUE(drawn.ok()) << drawn.error().message;
    got.push_back((*drawn)[0]);
  }
  EXPECT_EQ(got, expected);

  StepPlan continue_empty;
  PrefillOp op;
  op.slot = 0;
  op.start = false;
  op.tokens = {1};
  continue_empty.prefill.push_back(op);
  EXPECT_EQ(executor.run(continue_empty).error().message, "step plan: slot 0 is empty");
  StepPlan twice;
  twice.decode = {1, 1};
  EXPECT_EQ(executor.run(twice).error().message, "step plan: slot 1 appears twice");
}

// A request's logprobs through the scheduler are bit-identical whether it
// runs alone or beside others asking for more, fewer or no logprobs.
TEST(ServeBatching, LogprobsAreTheSameAloneAndInABatch) {
  TinyModel t = tiny_model();
  constexpr int kTokens = 6;
  auto request_of = [](int i) {
    GenerationRequest r;
    r.prompt = prompt_of(prompt_length(i), i);
    r.sampling = sampling_for(i);
    r.sampling.logprobs = i == 2 ? -1 : 5 + 10 * i;
    r.max_tokens = kTokens;
    return r;
  };
  auto run = [&](const std::vector<int>& which) {
    Scheduler scheduler(*t.model, SchedulerOptions{});
    std::atomic<bool> stop{false};
    std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i : which) streams.push_back(*scheduler.submit(request_of(i)));
    std::vector<std::vector<DrawLogprobs>> got(which.size());
    for (size_t k = 0; k < which.size(); ++k) {
      std::vector<int32_t> tokens;
      while (streams[k]->next(tokens, std::chrono::milliseconds(100), &got[k])) {
      }
      EXPECT_EQ(tokens.size(), static_cast<size_t>(kTokens));
    }
    stop = true;
    loop.join();
    return got;
  };
  const auto together = run({0, 1, 2});
  EXPECT_TRUE(together[2].empty());  // asked for none
  for (int i = 0; i < 2; ++i) {
    const auto alone_run = run({i});
    ASSERT_EQ(alone_run[0].size(), static_cast<size_t>(kTokens));
    ASSERT_EQ(together[i].size(), static_cast<size_t>(kTokens));
    for (int k = 0; k < kTokens; ++k) {
      const DrawLogprobs& a = alone_run[0][k];
      const DrawLogprobs& b = together[i][k];
      EXPECT_EQ(a.chosen.id, b.chosen.id);
      EXPECT_EQ(std::memcmp(&a.chosen.logprob, &b.chosen.logprob, sizeof(float)), 0) << "request " << i << " token " << k;
      ASSERT_EQ(a.top.size(), static_cast<size_t>(5 + 10 * i));
      ASSERT_EQ(a.top.size(), b.top.size());
      EXPECT_EQ(std::memcmp(a.top.data(), b.top.data(), sizeof(TokenLogprob) * a.top.size()), 0);
    }
  }
}

}  // namespace
}  // namespace xft::engine::serve
