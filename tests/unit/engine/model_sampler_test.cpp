#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "engine/model/sampler.h"
#include "model_thread_communicator.h"

namespace xft::engine {
namespace {

int32_t sample_one(TokenSampler& sampler, std::vector<float> logits,
                   std::vector<int32_t> history = {}) {
  SingleRankCommunicator comm;
  TokenSampler* samplers[] = {&sampler};
  float* rows[] = {logits.data()};
  std::span<const int32_t> histories[] = {history};
  return sample_batch(comm, samplers, rows, static_cast<int>(logits.size()), 0, histories)[0];
}

// The same logits split over `shards` proposals, as ranks would send them.
int32_t sample_sharded(TokenSampler& sampler, const std::vector<float>& logits, int shards) {
  std::vector<Proposal> proposals;
  const int n = static_cast<int>(logits.size());
  for (int s = 0; s < shards; ++s) {
    const int begin = n * s / shards;
    const int end = n * (s + 1) / shards;
    std::vector<float> slice(logits.begin() + begin, logits.begin() + end);
    proposals.push_back(sampler.propose(slice.data(), end - begin, begin, {}));
  }
  return sampler.choose(proposals);
}

std::vector<float> pseudo_random_logits(int n, uint32_t seed) {
  std::vector<float> logits(n);
  uint32_t x = seed;
  for (float& v : logits) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>(x >> 8) / static_cast<float>(1 << 24) * 8.0f - 4.0f;
  }
  return logits;
}

TEST(Sampler, GreedyPicksTheLargestLogitAndBreaksTiesByLowerId) {
  SamplingParams p;
  p.greedy = true;
  TokenSampler s(p);
  EXPECT_EQ(sample_one(s, {0.5f, 3.0f, -1.0f, 2.9f}), 1);
  EXPECT_EQ(sample_one(s, {1.0f, 4.0f, 4.0f, 2.0f}), 1);
}

TEST(Sampler, ZeroTemperatureIsGreedy) {
  SamplingParams p;
  p.temperature = 0.0f;
  TokenSampler s(p);
  EXPECT_EQ(sample_one(s, {0.5f, 3.0f, -1.0f, 3.5f}), 3);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplingParams p;
  p.greedy = true;
  p.repetition_penalty = 2.0f;
  TokenSampler s(p);
  std::vector<float> logits = {3.0f, -2.0f, 2.0f};
  std::vector<int32_t> history = {0, 1, 0};
  Proposal prop = s.propose(logits.data(), 3, 0, history);
  EXPECT_FLOAT_EQ(logits[0], 1.5f);
  EXPECT_FLOAT_EQ(logits[1], -4.0f);
  EXPECT_FLOAT_EQ(logits[2], 2.0f);
  ASSERT_EQ(prop.count, 1);
  EXPECT_EQ(prop.candidates[0].id, 2);
}

TEST(Sampler, ShardedGreedyEqualsUnsharded) {
  SamplingParams p;
  p.greedy = true;
  for (uint32_t seed = 1; seed < 20; ++seed) {
    auto logits = pseudo_random_logits(1001, seed);
    TokenSampler whole(p);
    const int32_t expected = sample_one(whole, logits);
    for (int shards : {2, 3, 4, 7}) {
      TokenSampler s(p);
      EXPECT_EQ(sample_sharded(s, logits, shards), expected);
    }
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  auto logits = pseudo_random_logits(500, 3);
  auto draw = [&](uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.5f;
    p.seed = seed;
    TokenSampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 30; ++i) out.push_back(sample_one(s, logits));
    return out;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  SamplingParams p;
  p.seed = 7;
  TokenSampler s(p);
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::map<int32_t, int> counts;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) counts[sample_one(s, logits)]++;
  EXPECT_NEAR(counts[0] / double(draws), 0.5, 0.02);
  EXPECT_NEAR(counts[1] / double(draws), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(draws), 0.2, 0.02);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  SamplingParams p;
  p.seed = 11;
  p.top_p = 0.6f;  // 0.5 alone is short of 0.6; 0.5 + 0.3 reaches it
  TokenSampler s(p);
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::map<int32_t, int> counts;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) counts[sample_one(s, logits)]++;
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / double(draws), 0.5 / 0.8, 0.02);
  EXPECT_NEAR(counts[1] / double(draws), 0.3 / 0.8, 0.02);
}

TEST(Sampler, TopKLimitsTheChoice) {
  SamplingParams p;
  p.seed = 5;
  p.top_k = 2;
  p.temperature = 100.0f;  // nearly uniform: without top-k all ids would appear
  TokenSampler s(p);
  const std::vector<float> logits = {1.0f, 5.0f, 2.0f, 4.0f, 3.0f};
  std::map<int32_t, int> counts;
  for (int i = 0; i < 2000; ++i) counts[sample_one(s, logits)]++;
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[1], 800);
  EXPECT_GT(counts[3], 800);
}

TEST(Sampler, ShardedSamplingDrawsTheSameTokensAsOneRank) {
  auto logits = pseudo_random_logits(3000, 9);
  SamplingParams p;
  p.seed = 99;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.temperature = 0.8f;
  TokenSampler whole(p);
  std::vector<int32_t> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(sample_one(whole, logits));
  for (int shards : {2, 3, 4}) {
    TokenSampler s(p);
    std::vector<int32_t> got;
    for (int i = 0; i < 50; ++i) got.push_back(sample_sharded(s, logits, shards));
    EXPECT_EQ(got, expected) << shards << " shards";
  }
}

TEST(Sampler, BatchOverThreadRanksAgreesOnEveryRank) {
  const int vocab = 1000;
  auto logits0 = pseudo_random_logits(vocab, 21);
  auto logits1 = pseudo_random_logits(vocab, 22);
  SamplingParams greedy;
  greedy.greedy = true;
  SamplingParams sampled;
  sampled.seed = 3;
  sampled.top_k = 10;
  std::vector<std::vector<int32_t>> results(3);
  testing::run_ranks(3, [&](int rank, Communicator& comm) {
    const int begin = vocab * rank / 3, end = vocab * (rank + 1) / 3;
    std::vector<float> a(logits0.begin() + begin, logits0.begin() + end);
    std::vector<float> b(logits1.begin() + begin, logits1.begin() + end);
    TokenSampler s0(greedy), s1(sampled);
    TokenSampler* samplers[] = {&s0, &s1};
    float* rows[] = {a.data(), b.data()};
    std::span<const int32_t> histories[] = {{}, {}};
    results[rank] = sample_batch(comm, samplers, rows, end - begin, begin, histories);
  });
  TokenSampler w0(greedy), w1(sampled);
  EXPECT_EQ(results[0][0], sample_one(w0, logits0));
  EXPECT_EQ(results[0][1], sample_one(w1, logits1));
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(results[2], results[0]);
}

}  // namespace
}  // namespace xft::engine
