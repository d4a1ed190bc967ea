// The prefix cache: a request whose prompt starts with what an earlier
// request computed (a chat's earlier turns, a shared system prompt) copies
// those whole blocks' KV instead of prefilling them, and still gets exactly
// the logits and tokens of a cold prompt, on one rank or several. The index
// never reuses a block whose hash matches but whose tokens differ, and gives
// way least recently used first.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/generate.h"
#include "engine/serve/metrics.h"
#include "engine/serve/prefix_cache.h"
#include "engine/serve/scheduler.h"
#include "engine/serve/step_plan.h"
#include "tests/unit/engine/serve_prefix_cache_support.h"

namespace xft::engine::serve {
namespace {

constexpr int kBlock = kPrefixBlockTokens;

using testing::alone;
using testing::concat;
using testing::greedy;
using testing::prompt_of;
using testing::request;
using testing::TinyModel;

// The test model of seed 13 (Qwen2).
TinyModel load(KvFormat kv = KvFormat::bf16) {
  TestModelSpec spec;
  spec.seed = 13;
  return testing::prefix_cache_model(spec, kv);
}

// --- the index alone ---

TEST(ServePrefixCache, WholeBlocksOfASharedPrefixAreFoundUpToTheLimit) {
  PrefixCache cache(100);
  std::vector<int32_t> dropped;
  const auto prompt = prompt_of(40, 1);
  auto added = cache.insert(prompt, 1000, dropped);
  ASSERT_EQ(added.size(), 2u);  // 40 tokens: two whole blocks
  EXPECT_EQ(added[0].position, 0);
  EXPECT_EQ(added[1].position, kBlock);
  cache.release_holds();
  const auto longer = concat({prompt, prompt_of(9, 2)});
  EXPECT_EQ(cache.lookup(longer, 48), (std::vector<int32_t>{added[0].id, added[1].id}));
  EXPECT_EQ(cache.lookup(longer, 31), (std::vector<int32_t>{added[0].id}));
  auto other = prompt;
  other[20] += 1;  // the second block differs
  EXPECT_EQ(cache.lookup(other, 40), (std::vector<int32_t>{added[0].id}));
  EXPECT_TRUE(cache.insert(prompt, 1000, dropped).empty());  // cached already
  EXPECT_EQ(cache.stats().blocks, 2);
  EXPECT_EQ(cache.bytes(), 200u);
  EXPECT_TRUE(dropped.empty());
}

TEST(ServePrefixCache, EqualHashesWithOtherTokensAreNeverReused) {
  PrefixCache cache(1, 0, [](uint64_t, std::span<const int32_t>) { return uint64_t{42}; });
  std::vector<int32_t> dropped;
  const auto a = prompt_of(32, 1), b = prompt_of(32, 2);
  const auto a_blocks = cache.insert(a, 100, dropped);
  ASSERT_EQ(a_blocks.size(), 2u);
  cache.release_holds();
  EXPECT_TRUE(cache.lookup(b, 32).empty());
  // B's second block after A's first: the parent check refuses A's second block.
  const auto a_then_b = concat({std::vector<int32_t>(a.begin(), a.begin() + kBlock),
                                std::vector<int32_t>(b.begin() + kBlock, b.end())});
  EXPECT_EQ(cache.lookup(a_then_b, 32), (std::vector<int32_t>{a_blocks[0].id}));
  const auto b_blocks = cache.insert(b, 100, dropped);
  ASSERT_EQ(b_blocks.size(), 2u);  // both contents kept under one hash
  cache.release_holds();
  EXPECT_EQ(cache.lookup(a, 32), (std::vector<int32_t>{a_blocks[0].id, a_blocks[1].id}));
  EXPECT_EQ(cache.lookup(b, 32), (std::vector<int32_t>{b_blocks[0].id, b_blocks[1].id}));
}

TEST(ServePrefixCache, LeastRecentlyUsedChainEndsGoFirstAndHeldBlocksStay) {
  PrefixCache cache(1);
  std::vector<int32_t> dropped;
  const auto a = prompt_of(48, 1), b = prompt_of(32, 2);
  const auto a_blocks = cache.insert(a, 4, dropped);
  ASSERT_EQ(a_blocks.size(), 3u);
  cache.release_holds();
  const auto b_blocks = cache.insert(b, 4, dropped);  // room for one more: A's last block goes
  ASSERT_EQ(b_blocks.size(), 2u);
  EXPECT_EQ(dropped, (std::vector<int32_t>{a_blocks[2].id}));
  cache.release_holds();
  EXPECT_EQ(cache.lookup(a, 48).size(), 2u);  // held now, and the most recent
  dropped.clear();
  EXPECT_FALSE(cache.shrink_to(0, dropped));
  EXPECT_EQ(dropped, (std::vector<int32_t>{b_blocks[1].id, b_blocks[0].id}));
  EXPECT_EQ(cache.stats().blocks, 2);
  EXPECT_EQ(cache.stats().evictions, 3u);
}

// --- the model's KV copy ---

class KvCopy : public ::testing::TestWithParam<KvFormat> {};

TEST_P(KvCopy, AReusedPrefixGivesTheColdPromptsLogitsBitForBit) {
  TinyModel t = load(GetParam());
  const auto prompt = prompt_of(45, 3);
  auto cold = t.model->new_sequence(64);
  Chunk whole{cold.get(), prompt};
  auto cold_logits = t.model->forward({&whole, 1});
  ASSERT_TRUE(cold_logits.ok()) << cold_logits.error().message;
  const std::vector<float> expected(cold_logits->begin(), cold_logits->end());

  auto block = t.model->new_sequence(2 * kBlock);  // as the executor keeps blocks: copied out, then in
  ASSERT_TRUE(block->append_copy(*cold, 0, 2 * kBlock).ok());
  auto warm = t.model->new_sequence(64);
  ASSERT_TRUE(warm->append_copy(*block, 0, kBlock).ok());
  ASSERT_TRUE(warm->append_copy(*block, kBlock, kBlock).ok());
  EXPECT_EQ(warm->tokens(), std::vector<int32_t>(prompt.begin(), prompt.begin() + 2 * kBlock));
  const std::vector<int32_t> rest(prompt.begin() + 2 * kBlock, prompt.end());
  Chunk tail{warm.get(), rest};
  auto warm_logits = t.model->forward({&tail, 1});
  ASSERT_TRUE(warm_logits.ok()) << warm_logits.error().message;
  ASSERT_EQ(warm_logits->size(), expected.size());
  EXPECT_EQ(std::memcmp(warm_logits->data(), expected.data(), expected.size() * sizeof(float)), 0);

  EXPECT_EQ(warm->append_copy(*cold, 40, 10).error().message,
            "KV copy: positions [40, 50) are not all cached in the source sequence of 45");
}

INSTANTIATE_TEST_SUITE_P(ServePrefixCache, KvCopy, ::testing::Values(KvFormat::bf16, KvFormat::f16, KvFormat::f32),
                         [](const auto& info) {
                           return std::string(info.param == KvFormat::bf16  ? "bf16"
                                              : info.param == KvFormat::f16 ? "f16"
                                                                            : "f32");
                         });

// --- the plan ---

TEST(ServePrefixCache, PlanCarriesDropsSavesAndReusesAndBadOnesAreRefused) {
  StepPlan plan;
  plan.drop = {4};
  plan.save.push_back(BlockSave{1, 16, 7});
  PrefillOp op;
  op.slot = 0;
  op.capacity = 60;
  op.tokens = {5, 6};
  op.reuse = {7, 3};
  plan.prefill.push_back(op);
  auto back = decode_plan(encode_plan(plan));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->drop, plan.drop);
  ASSERT_EQ(back->save.size(), 1u);
  EXPECT_EQ(back->save[0].slot, 1);
  EXPECT_EQ(back->save[0].position, 16);
  EXPECT_EQ(back->save[0].block, 7);
  ASSERT_EQ(back->prefill.size(), 1u);
  EXPECT_EQ(back->prefill[0].reuse, op.reuse);

  TinyModel t = load();
  StepExecutor executor(*t.model, 2);
  EXPECT_EQ(executor.run(plan).error().message, "step plan: drop of block 4 that is not cached");
  StepPlan reuse_missing;
  reuse_missing.prefill.push_back(op);
  EXPECT_EQ(executor.run(reuse_missing).error().message, "step plan: reuse of block 7 that is not cached");
  StepPlan save_empty;
  save_empty.save.push_back(BlockSave{1, 0, 0});
  EXPECT_EQ(executor.run(save_empty).error().message, "step plan: block 0: slot 1 has no positions 0+16");
  EXPECT_EQ(executor.blocks(), 0);
}

// --- the scheduler ---

// Turn 1's prompt and answer are cached when it ends; turn 2 (turn 1, its
// answer, 20 new tokens) copies every whole block of it and gets the tokens
// of its prompt run cold; a request sharing only a "system prompt" reuses
// that much.
TEST(ServePrefixCache, SecondTurnReusesWholeBlocksAndGetsTheColdTokens) {
  TinyModel reference = load();
  TinyModel served = load();
  testing::expect_turns_reuse_whole_blocks_with_cold_tokens(*reference.model, *served.model);
}

// Budget: one running request (40 + 4 positions) and three cached blocks.
// A's two blocks, then B's: A's second block goes; A again reuses its first
// block only, and B's second block gives way to A's second.
TEST(ServePrefixCache, CachedBlocksGiveWayLeastRecentlyUsedFirstWithinTheBudget) {
  TinyModel reference = load();
  TinyModel served = load();
  const size_t per_position = served.model->new_sequence(1)->kv_bytes();
  SchedulerOptions options;
  options.max_batch = 2;
  options.kv_budget_bytes = (44 + 3 * kBlock) * per_position;
  Scheduler scheduler(*served.model, options);
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  const auto a = prompt_of(40, 1), b = prompt_of(40, 2);
  EXPECT_EQ(request(scheduler, a, greedy(), 4), alone(*reference.model, a, greedy(), 4));
  EXPECT_EQ(request(scheduler, b, greedy(), 4), alone(*reference.model, b, greedy(), 4));
  EXPECT_EQ(request(scheduler, a, greedy(), 4), alone(*reference.model, a, greedy(), 4));
  const SchedulerCounters counters = scheduler.take_counters();
  EXPECT_EQ(counters.prefix_cache.lookups, 3u);
  EXPECT_EQ(counters.prefix_cache.hits, 1u);
  EXPECT_EQ(counters.prefix_cache.hit_tokens, static_cast<uint64_t>(kBlock));
  EXPECT_EQ(counters.prefix_cache.evictions, 2u);
  EXPECT_EQ(counters.prefix_cache.blocks, 3);
  EXPECT_EQ(counters.prefix_cache.bytes, 3 * kBlock * per_position);
  stop = true;
  loop.join();
}

// Two ranks as threads: rank 0 plans, rank 1 follows. Each rank holds its
// own heads' KV, so a follower that did not copy the same blocks in the same
// step would attend to zeros and change the tokens.
TEST(ServePrefixCache, EveryRankReusesTheSamePrefixInTheSameStep) {
  const auto turn1 = prompt_of(40, 1);
  TestModelSpec spec;
  spec.seed = 13;
  auto serve_two_turns = [&](bool prefix_cache, PrefixCacheStats& stats) {
    return testing::serve_two_turns_on_two_ranks(spec, turn1, prefix_cache, stats);
  };
  PrefixCacheStats cold_stats, warm_stats;
  const auto cold = serve_two_turns(false, cold_stats);
  const auto warm = serve_two_turns(true, warm_stats);
  EXPECT_EQ(warm, cold);
  EXPECT_EQ(cold_stats.lookups, 0u);
  EXPECT_EQ(warm_stats.hit_tokens, static_cast<uint64_t>(4 * kBlock));
}

TEST(ServePrefixCache, MetricsShowLookupsHitsReusedTokensEvictionsAndSize) {
  SchedulerCounters counters;
  counters.prefix_cache = PrefixCacheStats{3, 2, 96, 5, 12288, 3};
  Metrics metrics;
  const std::string text = metrics.render(counters);
  for (const char* line : {"# TYPE xftctl_prefix_cache_lookups_total counter\nxftctl_prefix_cache_lookups_total 3\n",
                           "# TYPE xftctl_prefix_cache_hits_total counter\nxftctl_prefix_cache_hits_total 2\n",
                           "# TYPE xftctl_prefix_cache_hit_tokens_total counter\nxftctl_prefix_cache_hit_tokens_total 96\n",
                           "# TYPE xftctl_prefix_cache_evictions_total counter\nxftctl_prefix_cache_evictions_total 5\n",
                           "# TYPE xftctl_prefix_cache_bytes gauge\nxftctl_prefix_cache_bytes 12288\n",
                           "# TYPE xftctl_prefix_cache_blocks gauge\nxftctl_prefix_cache_blocks 3\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace xft::engine::serve
