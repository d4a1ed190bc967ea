// The BPE merge loop on a toy vocabulary: merge order by rank, leftmost on
// ties, and the two strategies (scan for short pieces, queue for long ones)
// agreeing exactly.
#include <gtest/gtest.h>

#include <random>

#include "engine/tokenizer/bpe.h"

namespace xft::engine {
namespace {

using Ids = std::vector<int32_t>;

// Bytes are their own ids; merged tokens get ids from 256 up.
std::array<int32_t, 256> identity_bytes() {
  std::array<int32_t, 256> ids{};
  for (int b = 0; b < 256; ++b) ids[b] = b;
  return ids;
}

Ids merge_scan(std::string_view piece, const PairTable& pairs) {
  Ids out;
  bpe_merge_scan(piece, identity_bytes(), pairs, out);
  return out;
}
Ids merge_queue(std::string_view piece, const PairTable& pairs) {
  Ids out;
  bpe_merge_queue(piece, identity_bytes(), pairs, out);
  return out;
}

TEST(TokenizerBpe, MergesLowestRankFirst) {
  PairTable pairs;
  pairs.insert('b', 'c', {0, 256});  // "bc"
  pairs.insert('a', 'b', {1, 257});  // "ab" loses to "bc"
  pairs.insert('a', 256, {2, 258});  // "a"+"bc"
  EXPECT_EQ(merge_scan("abc", pairs), (Ids{258}));
  EXPECT_EQ(merge_queue("abc", pairs), (Ids{258}));
  EXPECT_EQ(merge_scan("abx", pairs), (Ids{257, 'x'}));
  EXPECT_EQ(merge_queue("abx", pairs), (Ids{257, 'x'}));
  EXPECT_EQ(merge_scan("x", pairs), (Ids{'x'}));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  PairTable pairs;
  pairs.insert('a', 'a', {0, 256});
  // "aaa": the left pair merges, the last 'a' stays alone.
  EXPECT_EQ(merge_scan("aaa", pairs), (Ids{256, 'a'}));
  EXPECT_EQ(merge_queue("aaa", pairs), (Ids{256, 'a'}));
  pairs.insert(256, 256, {1, 257});
  EXPECT_EQ(merge_scan("aaaaa", pairs), (Ids{257, 'a'}));
  EXPECT_EQ(merge_queue("aaaaa", pairs), (Ids{257, 'a'}));
}

TEST(TokenizerBpe, ScanAndQueueAgreeOnRandomVocabularies) {
  std::mt19937 rng(7);
  for (int vocab = 0; vocab < 20; ++vocab) {
    // A random merge list over a 4-letter alphabet, each merge of existing tokens.
    PairTable pairs;
    std::vector<int32_t> tokens = {'a', 'b', 'c', 'd'};
    for (int32_t rank = 0; rank < 60; ++rank) {
      const int32_t left = tokens[rng() % tokens.size()], right = tokens[rng() % tokens.size()];
      if (pairs.find(left, right)) continue;
      const int32_t merged = 256 + rank;
      pairs.insert(left, right, {rank, merged});
      tokens.push_back(merged);
    }
    for (int trial = 0; trial < 200; ++trial) {
      std::string piece;
      const size_t length = 1 + rng() % kBpeScanMax;
      for (size_t i = 0; i < length; ++i) piece += static_cast<char>('a' + rng() % 4);
      ASSERT_EQ(merge_scan(piece, pairs), merge_queue(piece, pairs)) << piece;
    }
  }
}

TEST(TokenizerBpe, PairTableKeepsTheFirstEntryAndGrows) {
  PairTable pairs;
  for (int32_t i = 0; i < 10000; ++i) pairs.insert(i, i + 1, {i, i + 100000});
  pairs.insert(5, 6, {99, 99});  // a later duplicate is ignored
  EXPECT_EQ(pairs.size(), 10000u);
  ASSERT_NE(pairs.find(5, 6), nullptr);
  EXPECT_EQ(pairs.find(5, 6)->rank, 5);
  EXPECT_EQ(pairs.find(9999, 10000)->merged, 109999);
  EXPECT_EQ(pairs.find(6, 5), nullptr);
}

}  // namespace
}  // namespace xft::engine
