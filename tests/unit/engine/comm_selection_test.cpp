// oneCCL-style selection strings, byte sizes, the tune table file, and the
// block split every algorithm relies on.
#include "engine/comm/selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "engine/comm/p2p_allreduce.h"
#include "engine/comm/tune_table.h"

namespace {

using namespace xft::engine::comm;
namespace fs = std::filesystem;

TEST(CommSelection, ParsesOnecclSyntaxAndPicksBySize) {
  auto s = Selection::parse("recursive_doubling:0-16384;ring:16385-max");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->pick(0), Algorithm::recursive_doubling);
  EXPECT_EQ(s->pick(16384), Algorithm::recursive_doubling);
  EXPECT_EQ(s->pick(16385), Algorithm::ring);
  EXPECT_EQ(s->pick(size_t(1) << 40), Algorithm::ring);
  EXPECT_EQ(s->str(), "recursive_doubling:0-16384;ring:16385-max");
}

// The seed's CCL_ALLREDUCE: oneCCL-only names run as the closest algorithm here.
TEST(CommSelection, OnecclOnlyNamesMapToTheClosestAlgorithm) {
  const std::string seed = "recursive_doubling:0-16384;2d:16385-524288;nreduce:524289-max";
  auto s = Selection::parse(seed);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->str(), "recursive_doubling:0-16384;hier:16385-524288;rabenseifner:524289-max");
  EXPECT_EQ(s->pick(100000), Algorithm::hier);
  EXPECT_EQ(s->pick(1 << 20), Algorithm::rabenseifner);
  EXPECT_EQ(oneccl_alias_notes(seed),
            (std::vector<std::string>{
                "oneCCL's `2d` runs as `hier` (reduce inside each host, then across hosts)",
                "oneCCL's `nreduce` runs as `rabenseifner` (reduce-scatter then allgather)"}));
  EXPECT_TRUE(oneccl_alias_notes("ring:0-4K;2d:4097-max;2d:0-1").size() == 1u) << "one note per name";
  EXPECT_TRUE(oneccl_alias_notes("ring;direct").empty());
  EXPECT_FALSE(parse_algorithm("2d")) << "algorithm names stay this project's own";
}

TEST(CommSelection, BareNameCoversEverySize) {
  auto s = Selection::parse("shm");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pick(8), Algorithm::shm);
  EXPECT_EQ(s->str(), "shm:0-max");
}

TEST(CommSelection, LaterEntriesWinAndGapsUseMpi) {
  auto s = Selection::parse("ring;direct:1K-4K;rabenseifner:1M-2M");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pick(100), Algorithm::ring);
  EXPECT_EQ(s->pick(2048), Algorithm::direct);
  EXPECT_EQ(s->pick(1 << 20), Algorithm::rabenseifner);
  EXPECT_EQ(s->str(), "ring:0-1023;direct:1024-4096;ring:4097-1048575;rabenseifner:1048576-2097152;ring:2097153-max");
  auto gap = Selection::parse("direct:0-100");
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->pick(101), Algorithm::mpi);
  EXPECT_EQ(gap->str(), "direct:0-100;mpi:101-max");
  // The canonical text parses back to the same choices.
  auto again = Selection::parse(s->str());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->str(), s->str());
}

TEST(CommSelection, ErrorsNameTheProblem) {
  auto unknown = Selection::parse("ring:0-10;nccl:11-max");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown allreduce algorithm 'nccl'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("recursive_doubling"), std::string::npos);  // lists the known ones
  auto range = Selection::parse("ring:100");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().message.find("LO-HI"), std::string::npos);
  auto empty = Selection::parse("ring:10-5");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("LO > HI"), std::string::npos);
  EXPECT_FALSE(Selection::parse(";"));
  EXPECT_FALSE(Selection::parse("ring:0-12Q"));
}

TEST(CommSelection, FromMeasurementsSwitchesAtGeometricMiddle) {
  Selection s = selection_from_measurements({1024, 4096, 16384, 65536},
                                            {Algorithm::shm, Algorithm::shm, Algorithm::ring, Algorithm::mpi});
  EXPECT_EQ(s.str(), "shm:0-8192;ring:8193-32768;mpi:32769-max");
  EXPECT_EQ(s.pick(4096), Algorithm::shm);
  EXPECT_EQ(s.pick(16384), Algorithm::ring);
}

TEST(CommByteSize, ParsesUnits) {
  EXPECT_EQ(*parse_byte_size("8"), 8u);
  EXPECT_EQ(*parse_byte_size("4K"), 4096u);
  EXPECT_EQ(*parse_byte_size("64M"), size_t(64) << 20);
  EXPECT_EQ(*parse_byte_size("1G"), size_t(1) << 30);
  EXPECT_EQ(*parse_byte_size("16KiB"), 16384u);
  EXPECT_EQ(*parse_byte_size("2MB"), size_t(2) << 20);
  EXPECT_FALSE(parse_byte_size("abc"));
  EXPECT_FALSE(parse_byte_size("4X"));
  EXPECT_FALSE(parse_byte_size("-1"));
  EXPECT_EQ(format_byte_size(4096), "4K");
  EXPECT_EQ(format_byte_size(3000), "3000");
  EXPECT_EQ(format_byte_size(size_t(64) << 20), "64M");
}

TEST(CommBlocks, CoverTheVectorWithSizesDifferingByAtMostOne) {
  for (size_t count : {0, 1, 2, 3, 7, 8, 1023, 4097}) {
    for (int parts : {1, 2, 3, 4, 5}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Block b = block_of(count, parts, i);
        EXPECT_EQ(b.begin, next);
        EXPECT_GE(b.size(), count / size_t(parts));
        EXPECT_LE(b.size(), count / size_t(parts) + 1);
        next = b.end;
      }
      EXPECT_EQ(next, count);
    }
  }
}

class CommTuneTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xft-tune-" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CommTuneTable, MissingFileMeansNoEntry) {
  auto loaded = load_tuned_selection((dir_ / "none.json").string(), "ranks=2 nodes=1 per_node=2", DType::f32);
  ASSERT_TRUE(loaded);
  EXPECT_FALSE(loaded->has_value());
}

TEST_F(CommTuneTable, SavesAndReloadsPerLayoutAndDtype) {
  std::string path = (dir_ / "sub" / "allreduce-tune.json").string();
  ASSERT_TRUE(save_tuned_selection(path, "ranks=2 nodes=1 per_node=2", "a[0,1]", DType::f32, "shm:0-max"));
  ASSERT_TRUE(save_tuned_selection(path, "ranks=4 nodes=2 per_node=2,2", "a[0,1] b[2,3]", DType::f32,
                                   "hier:0-65536;mpi:65537-max"));
  ASSERT_TRUE(save_tuned_selection(path, "ranks=2 nodes=1 per_node=2", "a[0,1]", DType::bf16, "ring:0-max"));
  auto two = load_tuned_selection(path, "ranks=2 nodes=1 per_node=2", DType::f32);
  ASSERT_TRUE(two && two->has_value());
  EXPECT_EQ(**two, "shm:0-max");
  auto bf16 = load_tuned_selection(path, "ranks=2 nodes=1 per_node=2", DType::bf16);
  ASSERT_TRUE(bf16 && bf16->has_value());
  EXPECT_EQ(**bf16, "ring:0-max");
  auto four = load_tuned_selection(path, "ranks=4 nodes=2 per_node=2,2", DType::f32);
  ASSERT_TRUE(four && four->has_value());
  EXPECT_EQ(**four, "hier:0-65536;mpi:65537-max");
  auto other = load_tuned_selection(path, "ranks=3 nodes=1 per_node=3", DType::f32);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_value());
  auto text = xft::read_file(path);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("\"measured_at\""), std::string::npos);
  EXPECT_NE(text->find("\"hosts\": \"a[0,1] b[2,3]\""), std::string::npos);
}

TEST_F(CommTuneTable, MalformedFileIsAnErrorNamingIt) {
  fs::create_directories(dir_);
  std::string path = (dir_ / "bad.json").string();
  ASSERT_TRUE(xft::write_file_atomic(path, "{\"layouts\": 3}"));
  auto loaded = load_tuned_selection(path, "k", DType::f32);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find(path), std::string::npos);
  ASSERT_TRUE(xft::write_file_atomic(
      path, R"({"version":1,"layouts":{"k":{"float32":{"selection":"warp:0-max"}}}})"));
  auto bad_algo = load_tuned_selection(path, "k", DType::f32);
  ASSERT_FALSE(bad_algo);
  EXPECT_NE(bad_algo.error().message.find("layouts[\"k\"].float32.selection"), std::string::npos);
  EXPECT_NE(bad_algo.error().message.find("warp"), std::string::npos);
}

}  // namespace
