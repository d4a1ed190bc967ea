// The prefix cache with linear-attention layers (Qwen3.5's Gated DeltaNet):
// a cached prefix carries the layers' conv and recurrent state at its last
// block, so a chat's second turn resumes there and prefills only the tail,
// and still gets exactly the tokens of its prompt run cold (batch-invariant
// rows). Under a small budget the states are evicted with their blocks and
// the answers stay the same.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "engine/serve/prefix_cache.h"
#include "engine/serve/scheduler.h"
#include "tests/unit/engine/serve_prefix_cache_support.h"

namespace xft::engine::serve {
namespace {

constexpr int kBlock = kPrefixBlockTokens;

using testing::alone;
using testing::concat;
using testing::greedy;
using testing::prompt_of;
using testing::request;
using testing::seeded;
using testing::TinyModel;

// Qwen3.5's test model with its second layer full attention: a cached block
// holds that layer's keys and values, and the first layer's state.
TestModelSpec qwen35_spec(uint64_t seed) {
  TestModelSpec spec;
  spec.seed = seed;
  spec.arch = Architecture::qwen3_5;
  spec.full_attn_interval = 2;
  return spec;
}

TinyModel tiny_model(uint64_t seed) { return testing::prefix_cache_model(qwen35_spec(seed)); }

// Turn 1: 40 prompt tokens, 30 drawn (29 fed): the prompt's first 2 blocks
// are cached with the state at 32 (the prompt's chunk is cut there), and at
// the end blocks 3 and 4 with the state at 64, the last boundary decoding
// passed. Turn 2 (turn 1, its answer, 20 new tokens) resumes at 64 and
// prefills 26 tokens; a prompt sharing 35 tokens of turn 1 resumes at 32.
TEST(ServePrefixCacheQwen35, SecondTurnResumesFromTheLastCachedBlockWithTheColdTokens) {
  auto reference = tiny_model(13);
  auto served = tiny_model(13);
  ASSERT_TRUE(served.model->new_sequence(1)->has_linear_state());
  ASSERT_GT(served.model->new_sequence(1)->kv_bytes(), 0u);
  testing::expect_turns_reuse_whole_blocks_with_cold_tokens(*reference.model, *served.model);
}

// The same second turn with the cache off: the cached run's tokens are the cold run's.
TEST(ServePrefixCacheQwen35, CacheOnAndOffGiveTheSameTokens) {
  auto run_turns = [](bool prefix_cache) {
    auto served = tiny_model(21);
    SchedulerOptions options;
    options.max_batch = 2;
    options.prefix_cache = prefix_cache;
    Scheduler scheduler(*served.model, options);
    std::atomic<bool> stop{false};
    std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
    const auto turn1 = prompt_of(50, 4);
    auto answer1 = request(scheduler, turn1, seeded(), 20);
    auto answer2 = request(scheduler, concat({turn1, answer1, prompt_of(9, 5)}), seeded(), 20);
    const uint64_t reused = scheduler.take_counters().prefix_cache.hit_tokens;
    stop = true;
    loop.join();
    return std::make_pair(concat({answer1, answer2}), reused);
  };
  const auto [cold, cold_reused] = run_turns(false);
  const auto [warm, warm_reused] = run_turns(true);
  EXPECT_EQ(warm, cold);
  EXPECT_EQ(cold_reused, 0u);
  EXPECT_EQ(warm_reused, static_cast<uint64_t>(4 * kBlock));  // 50 + 19 fed: the state at 64
}

// Budget: one running request (40 + 4 positions, its state and its boundary
// copy) and two blocks, one of them with a state. A caches its 2 blocks; B's
// evict them both; A runs cold and evicts B's; A once more resumes at 32.
TEST(ServePrefixCacheQwen35, StatesAreEvictedWithTheirBlocksAndAnswersStayTheSame) {
  auto reference = tiny_model(13);
  auto served = tiny_model(13);
  const auto one = served.model->new_sequence(1);
  const size_t kv = one->kv_bytes(), state = one->linear_state_bytes();
  ASSERT_GT(state, 0u);
  ASSERT_GT(kv, 0u);
  SchedulerOptions options;
  options.max_batch = 2;
  options.kv_budget_bytes = 44 * kv + 2 * state + 2 * kBlock * kv + state;
  Scheduler scheduler(*served.model, options);
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  const auto a = prompt_of(40, 1), b = prompt_of(40, 2);
  const auto a_cold = alone(*reference.model, a, greedy(), 4);
  EXPECT_EQ(request(scheduler, a, greedy(), 4), a_cold);
  EXPECT_EQ(request(scheduler, b, greedy(), 4), alone(*reference.model, b, greedy(), 4));
  EXPECT_EQ(request(scheduler, a, greedy(), 4), a_cold);
  EXPECT_EQ(request(scheduler, a, greedy(), 4), a_cold);
  const SchedulerCounters counters = scheduler.take_counters();
  EXPECT_EQ(counters.prefix_cache.lookups, 4u);
  EXPECT_EQ(counters.prefix_cache.hits, 1u);
  EXPECT_EQ(counters.prefix_cache.hit_tokens, static_cast<uint64_t>(2 * kBlock));
  EXPECT_EQ(counters.prefix_cache.evictions, 4u);
  EXPECT_EQ(counters.prefix_cache.blocks, 2);
  EXPECT_EQ(counters.prefix_cache.bytes, 2 * kBlock * kv + state);
  stop = true;
  loop.join();
}

// The model alone: blocks' keys and values with the state after their last
// token give the cold prompt's logits bit for bit; without the state they do not.
TEST(ServePrefixCacheQwen35, ResumingFromBlocksAndTheirStateGivesTheColdLogitsBitForBit) {
  auto t = tiny_model(13);
  const auto prompt = prompt_of(45, 3);
  const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 2 * kBlock), rest(prompt.begin() + 2 * kBlock, prompt.end());
  auto cold = t.model->new_sequence(64);
  Chunk whole{cold.get(), prompt};
  auto cold_logits = t.model->forward({&whole, 1});
  ASSERT_TRUE(cold_logits.ok()) << cold_logits.error().message;
  const std::vector<float> expected(cold_logits->begin(), cold_logits->end());

  auto at_boundary = t.model->new_sequence(64);
  Chunk first{at_boundary.get(), head};
  ASSERT_TRUE(t.model->forward({&first, 1}).ok());
  std::vector<std::unique_ptr<Sequence>> blocks;
  std::vector<const Sequence*> views;
  for (int b = 0; b < 2; ++b) {
    blocks.push_back(t.model->new_sequence(kBlock));
    blocks.back()->drop_linear_states();
    ASSERT_TRUE(blocks.back()->append_copy(*at_boundary, b * kBlock, kBlock).ok());
    views.push_back(blocks.back().get());
  }
  auto logits_resumed_with = [&](const Sequence::LinearStates& state) {
    auto warm = t.model->new_sequence(64);
    EXPECT_TRUE(warm->resume(views, state).ok());
    EXPECT_EQ(warm->tokens(), head);
    Chunk tail{warm.get(), rest};
    auto logits = t.model->forward({&tail, 1});
    EXPECT_TRUE(logits.ok());
    return std::vector<float>(logits->begin(), logits->end());
  };
  const auto warm = logits_resumed_with(at_boundary->linear_states());
  ASSERT_EQ(warm.size(), expected.size());
  EXPECT_EQ(std::memcmp(warm.data(), expected.data(), expected.size() * sizeof(float)), 0);
  const auto stateless = logits_resumed_with(t.model->new_sequence(1)->linear_states());
  EXPECT_NE(std::memcmp(stateless.data(), expected.data(), expected.size() * sizeof(float)), 0);
  EXPECT_EQ(at_boundary->append_copy(*cold, 0, kBlock).error().message,
            "KV copy: a linear-attention (Qwen3.5) sequence's state cannot be copied by positions");
}

// The index alone: with a state size, a lookup ends on the last block that kept a state.
TEST(ServePrefixCacheQwen35, ALookupEndsOnABlockWithAState) {
  PrefixCache cache(10, 1000);
  const auto tokens = prompt_of(5 * kBlock, 1);
  std::vector<int32_t> dropped;
  const auto added = cache.insert(tokens, 1 << 20, dropped, 3 * kBlock);
  ASSERT_EQ(added.size(), 3u);  // nothing past the state
  EXPECT_FALSE(added[0].state);
  EXPECT_FALSE(added[1].state);
  EXPECT_TRUE(added[2].state);
  EXPECT_EQ(cache.bytes(), 3 * 10 + 1000u);
  cache.release_holds();
  EXPECT_EQ(cache.lookup(tokens, 5 * kBlock).size(), 3u);
  EXPECT_EQ(cache.lookup(tokens, 3 * kBlock - 1).size(), 0u);  // blocks 1 and 2 kept no state
  cache.release_holds();
  EXPECT_TRUE(cache.insert(tokens, 1 << 20, dropped, -1).empty());  // no state: nothing to add
}

// Two ranks as threads, each holding half the value heads' conv and recurrent
// state: rank 0 plans, rank 1 follows. A follower that did not restore its
// own heads' state from the same cached block in the same step would carry
// on from another position's state and change the greedy tokens.
TEST(ServePrefixCacheQwen35, TwoRanksResumeTheSecondTurnWithTheColdGreedyTokens) {
  const auto turn1 = prompt_of(40, 1);
  auto serve_two_turns = [&](bool prefix_cache, PrefixCacheStats& stats) {
    return testing::serve_two_turns_on_two_ranks(qwen35_spec(13), turn1, prefix_cache, stats, [](Model& model) {
      EXPECT_TRUE(model.new_sequence(1)->has_linear_state());
    });
  };
  PrefixCacheStats cold_stats, warm_stats;
  const auto cold = serve_two_turns(false, cold_stats);
  const auto warm = serve_two_turns(true, warm_stats);
  ASSERT_EQ(cold.size(), 2u);
  EXPECT_EQ(warm, cold);
  EXPECT_EQ(cold_stats.lookups, 0u);
  EXPECT_EQ(warm_stats.hits, 1u);
  EXPECT_EQ(warm_stats.hit_tokens, static_cast<uint64_t>(4 * kBlock));  // 40 + 29 fed: the state at 64
}

}  // namespace
}  // namespace xft::engine::serve
