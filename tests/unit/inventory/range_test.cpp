#include <gtest/gtest.h>

#include "inventory/load.h"

using xft::inventory::expand_range;
using xft::inventory::fold_names;
using Names = std::vector<std::string>;

namespace {

std::string range_error(const std::string& pattern) {
  auto expanded = expand_range(pattern);
  return expanded ? "expanded" : expanded.error().message;
}

}  // namespace

TEST(ExpandRange, PlainNameIsItself) { EXPECT_EQ(*expand_range("head"), Names{"head"}); }

TEST(ExpandRange, KeepsZeroPadding) {
  EXPECT_EQ(*expand_range("node[01-04,07]"), (Names{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(*expand_range("node[08-11]"), (Names{"node08", "node09", "node10", "node11"}));
  EXPECT_EQ(*expand_range("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
}

TEST(ExpandRange, UnpaddedGrowsNaturally) {
  EXPECT_EQ(*expand_range("node[9-11]"), (Names{"node9", "node10", "node11"}));
}

TEST(ExpandRange, AddressRange) {
  EXPECT_EQ(*expand_range("192.168.0.[1-4]"), (Names{"192.168.0.1", "192.168.0.2", "192.168.0.3", "192.168.0.4"}));
}

TEST(ExpandRange, SeveralGroupsAreCartesianFirstOutermost) {
  EXPECT_EQ(*expand_range("rack[1-2]-node[01-02]"),
            (Names{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}));
  EXPECT_EQ(*expand_range("10.0.[0-1].[5,7]"), (Names{"10.0.0.5", "10.0.0.7", "10.0.1.5", "10.0.1.7"}));
}

TEST(ExpandRange, Step) { EXPECT_EQ(*expand_range("n[1-7/3]"), (Names{"n1", "n4", "n7"})); }

TEST(ExpandRange, SuffixAfterBracket) {
  EXPECT_EQ(*expand_range("node[1-2]-ib"), (Names{"node1-ib", "node2-ib"}));
}

TEST(ExpandRange, Errors) {
  EXPECT_EQ(range_error("node[04-01]"), "bad range `node[04-01]`: 04 > 01 (write the lower bound first: 01-04)");
  EXPECT_EQ(range_error("node[1-"), "bad range `node[1-`: `[` at position 5 is never closed");
  EXPECT_EQ(range_error("node]1["), "bad range `node]1[`: `]` without `[` at position 5");
  EXPECT_EQ(range_error("node[]"), "bad range `node[]`: empty brackets (write e.g. node[1-4])");
  EXPECT_EQ(range_error("node[a-c]"), "bad range `node[a-c]`: `a-c` is not a number or a range like 01-04");
  EXPECT_EQ(range_error("node[1,,2]"), "bad range `node[1,,2]`: empty item between commas");
  EXPECT_EQ(range_error("node[[1]]"), "bad range `node[[1]]`: nested `[`");
  EXPECT_EQ(range_error("n[1-3/0]"), "bad range `n[1-3/0]`: step must be at least 1");
  EXPECT_EQ(range_error("n[0-999999]"), "bad range `n[0-999999]`: expands to more than 100000 names");
  EXPECT_EQ(range_error("a[0-999]b[0-999]"), "bad range `a[0-999]b[0-999]`: expands to more than 100000 names");
}

TEST(FoldNames, FoldsConsecutiveKeepingPadding) {
  EXPECT_EQ(fold_names({"node01", "node02", "node03", "node07"}), "node[01-03,07]");
  EXPECT_EQ(fold_names({"node09", "node10"}), "node[09-10]");
  EXPECT_EQ(fold_names({"node9", "node10", "node11"}), "node[9-11]");
}

TEST(FoldNames, UnorderedAndDuplicatesAreSorted) {
  EXPECT_EQ(fold_names({"node3", "node1", "node2", "node1"}), "node[1-3]");
}

TEST(FoldNames, DifferentAffixesJoinedWithComma) {
  EXPECT_EQ(fold_names({"node01", "head", "node02", "gpu1"}), "gpu1,head,node[01-02]");
  EXPECT_EQ(fold_names({"node1-ib", "node2-ib", "node1"}), "node1,node[1-2]-ib");
}

TEST(FoldNames, SingleNameHasNoBrackets) { EXPECT_EQ(fold_names({"node07"}), "node07"); }

TEST(FoldNames, Addresses) {
  EXPECT_EQ(fold_names({"192.168.0.1", "192.168.0.2", "192.168.0.4"}), "192.168.0.[1-2,4]");
}

TEST(FoldNames, EmptyIsEmpty) { EXPECT_EQ(fold_names({}), ""); }

TEST(FoldNames, RoundTripsThroughExpand) {
  Names names{"n001", "n002", "n010", "n1", "n2", "x"};
  std::string folded = fold_names(names);
  EXPECT_EQ(folded, "n[1-2,001-002,010],x");
  Names expanded;
  for (const auto& part : {std::string("n[1-2,001-002,010]"), std::string("x")}) {
    auto names_of_part = expand_range(part);
    ASSERT_TRUE(names_of_part);
    expanded.insert(expanded.end(), names_of_part->begin(), names_of_part->end());
  }
  std::sort(expanded.begin(), expanded.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(expanded, names);
}
