#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// A greedy sampler asked for more candidates proposes the best ones by logit,
// ties by lower id, exactly as sorting the whole row does; its choice stays the best.
TEST(Sampler, GreedyCandidatesAreTheBestOfTheWholeRowInOrder) {
  SamplingParams p;
  p.greedy = true;
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<float> logits = pseudo_random_logits(5000, seed);
    for (size_t i = 0; i < logits.size(); i += 7) logits[i] = std::round(logits[i]);  // many ties
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (int want : {1, 32, 1024}) {
      TokenSampler s(p, want);
      std::vector<float> row = logits;
      const Proposal proposal = s.propose(row.data(), static_cast<int>(row.size()), 100, {});
      ASSERT_EQ(proposal.count, want);
      for (int k = 0; k < want; ++k) ASSERT_EQ(proposal.candidates[k].id, ids[k] + 100) << "seed " << seed << ", " << k;
      EXPECT_EQ(s.choose({&proposal, 1}), ids[0] + 100);
    }
  }
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


// ---- logprobs -------------------------------------------------------------------

// log_softmax computed here in double, independently of the sampler.
std::vector<double> reference_log_softmax(const std::vector<float>& logits) {
  double max = logits[0];
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  std::vector<double> out;
  for (float v : logits) out.push_back(static_cast<double>(v) - max - std::log(sum));
  return out;
}

struct Draw {
  int32_t token;
  DrawLogprobs logprobs;
};

Draw draw_one(TokenSampler& sampler, std::vector<float> logits, std::vector<int32_t> history = {}) {
  SingleRankCommunicator comm;
  TokenSampler* samplers[] = {&sampler};
  float* rows[] = {logits.data()};
  std::span<const int32_t> histories[] = {history};
  std::vector<DrawLogprobs> logprobs;
  const int32_t token =
      sample_batch(comm, samplers, rows, static_cast<int>(logits.size()), 0, histories, &logprobs)[0];
  return {token, logprobs.at(0)};
}

// vLLM's default: the model's own distribution, whatever penalty and temperature the draw used.
TEST(SamplerLogprobs, AreTheLogSoftmaxOfTheRawLogitsBeforePenaltyAndTemperature) {
  const std::vector<float> logits = pseudo_random_logits(3000, 17);
  const std::vector<double> reference = reference_log_softmax(logits);
  std::vector<int> by_logprob(logits.size());
  for (size_t i = 0; i < by_logprob.size(); ++i) by_logprob[i] = static_cast<int>(i);
  std::stable_sort(by_logprob.begin(), by_logprob.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SamplingParams p;
    p.temperature = 0.6f;
    p.top_p = 0.9f;
    p.repetition_penalty = 1.4f;
    p.seed = seed;
    p.logprobs = 5;
    TokenSampler s(p);
    const Draw d = draw_one(s, logits, {by_logprob[0], by_logprob[3]});
    EXPECT_EQ(d.logprobs.chosen.id, d.token);
    EXPECT_NEAR(d.logprobs.chosen.logprob, reference[d.token], 1e-5) << "seed " << seed;
    ASSERT_EQ(d.logprobs.top.size(), 5u);
    double mass = 0.0;
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(d.logprobs.top[k].id, by_logprob[k]);  // penalized tokens keep their raw rank
      EXPECT_NEAR(d.logprobs.top[k].logprob, reference[by_logprob[k]], 1e-5);
      mass += std::exp(static_cast<double>(d.logprobs.top[k].logprob));
    }
    EXPECT_LE(mass, 1.0);
  }
}

TEST(SamplerLogprobs, GreedyWithNoAlternativesReportsTheChosenTokenAlone) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.9f};
  SamplingParams p;
  p.greedy = true;
  p.logprobs = 0;
  TokenSampler s(p);
  const Draw d = draw_one(s, logits);
  EXPECT_EQ(d.token, 1);
  EXPECT_TRUE(d.logprobs.top.empty());
  EXPECT_NEAR(d.logprobs.chosen.logprob, reference_log_softmax(logits)[1], 1e-6);
}

TEST(SamplerLogprobs, NoneAskedForGivesAnEmptyEntry) {
  SamplingParams p;
  p.greedy = true;
  TokenSampler s(p);
  const Draw d = draw_one(s, {0.5f, 3.0f});
  EXPECT_EQ(d.logprobs.chosen.id, -1);
  EXPECT_TRUE(d.logprobs.top.empty());
}

// Ranks each hold a vocabulary slice; the combined answer is the whole vocabulary's.
TEST(SamplerLogprobs, ShardedProposalsGiveTheWholeVocabularysLogprobs) {
  const std::vector<float> logits = pseudo_random_logits(1001, 5);
  const std::vector<double> reference = reference_log_softmax(logits);
  SamplingParams p;
  p.temperature = 0.9f;
  p.seed = 3;
  p.logprobs = 20;
  for (int shards : {1, 2, 3}) {
    TokenSampler s(p);
    std::vector<Proposal> proposals;
    const int n = static_cast<int>(logits.size());
    for (int r = 0; r < shards; ++r) {
      const int begin = n * r / shards, end = n * (r + 1) / shards;
      std::vector<float> slice(logits.begin() + begin, logits.begin() + end);
      proposals.push_back(s.propose(slice.data(), end - begin, begin, {}));
    }
    const int32_t token = s.choose(proposals);
    const DrawLogprobs d = s.logprobs(proposals, token);
    EXPECT_NEAR(d.chosen.logprob, reference[token], 1e-5) << shards;
    ASSERT_EQ(d.top.size(), 20u);
    for (size_t k = 1; k < d.top.size(); ++k) EXPECT_GE(d.top[k - 1].logprob, d.top[k].logprob);
    for (const TokenLogprob& t : d.top) EXPECT_NEAR(t.logprob, reference[t.id], 1e-5);
  }
}

// A sequence's logprobs do not depend on what else is in the batch (its
// record's size grows with the others' requests, its values must not).
TEST(SamplerLogprobs, AreBitIdenticalAloneAndInABatch) {
  const std::vector<float> mine = pseudo_random_logits(2000, 9);
  SamplingParams wanted;
  wanted.temperature = 0.7f;
  wanted.seed = 11;
  wanted.logprobs = 3;
  TokenSampler alone_sampler(wanted);
  const Draw alone = draw_one(alone_sampler, mine);

  SamplingParams greedy;
  greedy.greedy = true;
  SamplingParams wide;
  wide.seed = 1;
  wide.logprobs = 20;
  TokenSampler a(greedy), b(wanted), c(wide);
  std::vector<float> row_a = pseudo_random_logits(2000, 1), row_b = mine, row_c = pseudo_random_logits(2000, 2);
  SingleRankCommunicator comm;
  TokenSampler* samplers[] = {&a, &b, &c};
  float* rows[] = {row_a.data(), row_b.data(), row_c.data()};
  std::span<const int32_t> histories[] = {{}, {}, {}};
  std::vector<DrawLogprobs> logprobs;
  const auto tokens = sample_batch(comm, samplers, rows, 2000, 0, histories, &logprobs);
  ASSERT_EQ(logprobs.size(), 3u);
  EXPECT_EQ(tokens[1], alone.token);
  EXPECT_EQ(logprobs[0].chosen.id, -1);  // a asked for none
  EXPECT_EQ(logprobs[2].top.size(), 20u);
  const DrawLogprobs& batched = logprobs[1];
  EXPECT_EQ(std::memcmp(&batched.chosen, &alone.logprobs.chosen, sizeof(TokenLogprob)), 0);
  ASSERT_EQ(batched.top.size(), alone.logprobs.top.size());
  EXPECT_EQ(std::memcmp(batched.top.data(), alone.logprobs.top.data(), sizeof(TokenLogprob) * batched.top.size()), 0);
}

}  // namespace
}  // namespace xft::engine
