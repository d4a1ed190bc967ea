#include <gtest/gtest.h>

#include "engine/model/partition.h"

namespace xft::engine {
namespace {

TEST(Partition, SplitRangeGivesTheRemainderToTheFirstParts) {
  EXPECT_EQ(split_range(14, 4, 0), (Range{0, 4}));
  EXPECT_EQ(split_range(14, 4, 1), (Range{4, 8}));
  EXPECT_EQ(split_range(14, 4, 2), (Range{8, 11}));
  EXPECT_EQ(split_range(14, 4, 3), (Range{11, 14}));
  EXPECT_EQ(split_range(151936, 3, 2), (Range{101291, 151936}));
  EXPECT_EQ(split_range(5, 1, 0), (Range{0, 5}));
}

TEST(Partition, SplitRangeCoversEverythingOnce) {
  for (int total : {1, 7, 14, 64, 4864, 151936}) {
    for (int parts = 1; parts <= 8 && parts <= total; ++parts) {
      int next = 0;
      for (int i = 0; i < parts; ++i) {
        Range r = split_range(total, parts, i);
        EXPECT_EQ(r.begin, next);
        EXPECT_GE(r.size(), total / parts);
        EXPECT_LE(r.size(), total / parts + 1);
        next = r.end;
      }
      EXPECT_EQ(next, total);
    }
  }
}

TEST(Partition, Qwen05bHeadsOnFourRanksShareKvHeads) {
  // Qwen2.5-0.5B: 14 query heads, 2 KV heads (groups of 7).
  AttentionSlice r0 = attention_slice(14, 2, 4, 0);
  AttentionSlice r1 = attention_slice(14, 2, 4, 1);
  AttentionSlice r2 = attention_slice(14, 2, 4, 2);
  AttentionSlice r3 = attention_slice(14, 2, 4, 3);
  EXPECT_EQ(r0.q_heads, (Range{0, 4}));
  EXPECT_EQ(r0.kv_heads, (Range{0, 1}));
  EXPECT_EQ(r1.q_heads, (Range{4, 8}));
  EXPECT_EQ(r1.kv_heads, (Range{0, 2}));  // heads 4..6 use kv 0, head 7 uses kv 1
  EXPECT_EQ(r2.q_heads, (Range{8, 11}));
  EXPECT_EQ(r2.kv_heads, (Range{1, 2}));
  EXPECT_EQ(r3.q_heads, (Range{11, 14}));
  EXPECT_EQ(r3.kv_heads, (Range{1, 2}));
  EXPECT_EQ(r1.local_kv_head(6), 0);
  EXPECT_EQ(r1.local_kv_head(7), 1);
  EXPECT_EQ(r3.local_kv_head(13), 0);
}

TEST(Partition, KvHeadsReplicatedWhenRanksOutnumberThem) {
  for (int rank = 0; rank < 4; ++rank) {
    AttentionSlice s = attention_slice(4, 2, 4, rank);
    EXPECT_EQ(s.q_heads, (Range{rank, rank + 1}));
    EXPECT_EQ(s.kv_heads, (Range{rank / 2, rank / 2 + 1}));
    EXPECT_EQ(s.local_kv_head(rank), 0);
  }
}

TEST(Partition, EveryQueryHeadFindsItsKvHeadOnItsRank) {
  for (auto [heads, kv] : {std::pair{14, 2}, {12, 2}, {28, 4}, {64, 8}, {16, 16}, {32, 8}}) {
    for (int tp = 1; tp <= heads && tp <= 8; ++tp) {
      for (int rank = 0; rank < tp; ++rank) {
        AttentionSlice s = attention_slice(heads, kv, tp, rank);
        for (int h = s.q_heads.begin; h < s.q_heads.end; ++h) {
          EXPECT_TRUE(s.kv_heads.contains(h / (heads / kv)));
          EXPECT_GE(s.local_kv_head(h), 0);
          EXPECT_LT(s.local_kv_head(h), s.kv_heads.size());
        }
      }
    }
  }
}

ModelConfig tiny_config() {
  ModelConfig c;
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.intermediate = 176;
  c.vocab = 151936;
  return c;
}

TEST(Partition, ModelPartitionSplitsMlpAndVocabulary) {
  auto p = partition_model(tiny_config(), 3, 1);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->attention.q_heads, (Range{2, 3}));
  EXPECT_EQ(p->attention.kv_heads, (Range{1, 2}));
  EXPECT_EQ(p->mlp, (Range{59, 118}));
  EXPECT_EQ(p->vocab, (Range{50646, 101291}));
  EXPECT_EQ(describe(*p),
            "rank 1/3: q heads [2,3), kv heads [1,2), mlp rows [59,118), vocab [50646,101291)");
}

TEST(Partition, MoreRanksThanHeadsIsAnError) {
  auto p = partition_model(tiny_config(), 5, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "tensor parallel size 5 exceeds the model's 4 attention heads; use at most that many ranks");
}

TEST(Partition, HeadsNotDivisibleByKvHeadsIsAnError) {
  ModelConfig c = tiny_config();
  c.kv_heads = 3;
  auto p = partition_model(c, 1, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "config.json: 4 attention heads cannot be grouped over 3 key/value heads");
}

TEST(Partition, RankOutOfRangeIsAnError) {
  auto p = partition_model(tiny_config(), 2, 2);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "tensor parallel rank 2 of 2 is out of range");
}

}  // namespace
}  // namespace xft::engine
