// The tile emulator against the instructions' definitions (Intel SDM):
// shapes, loads and stores, TDPBF16PS's accumulation order, DAZ/FTZ, and
// TDPBSSD's wrapping int32 sums. The kernels' tests
// (kernels_amx_linear_test.cpp) trust these semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/amx_tiles.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

// C (0) 16 x 16 fp32/int32, A (1) 16 x 64 bytes, B (2) 16 x 64 bytes.
AmxTileConfig dot_config(int rows) {
  AmxTileConfig config;
  amx_set_tile(config, 0, rows, 64);
  amx_set_tile(config, 1, rows, 64);
  amx_set_tile(config, 2, 16, 64);
  return config;
}

TEST(KernelsAmxEmulator, Bf16DotMatchesAWideSumOnRandomTiles) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int rows : {1, 5, 16}) {
    AmxEmulator tiles;
    tiles.configure(dot_config(rows));
    std::vector<uint16_t> a(16 * 32), b(16 * 32);
    for (auto& v : a) v = f32_to_bf16(normal(rng));
    for (auto& v : b) v = f32_to_bf16(normal(rng));
    std::vector<float> c(16 * 16);
    for (auto& v : c) v = normal(rng);
    tiles.load(0, c.data(), 64);
    tiles.load(1, a.data(), 64);
    tiles.load(2, b.data(), 64);
    tiles.dpbf16ps(0, 1, 2);
    std::vector<float> out(16 * 16, -1.0f);
    tiles.store(0, out.data(), 64);
    for (int m = 0; m < rows; ++m) {
      for (int n = 0; n < 16; ++n) {
        double want = c[m * 16 + n], magnitude = std::fabs(want);
        for (int k = 0; k < 32; ++k) {
          // A row m holds inputs k; B row k/2 holds (k/2, output n) pairs.
          const double p = static_cast<double>(bf16_to_f32(a[m * 32 + k])) * bf16_to_f32(b[(k / 2) * 32 + 2 * n + k % 2]);
          want += p;
          magnitude += std::fabs(p);
        }
        EXPECT_NEAR(out[m * 16 + n], want, 40 * 0x1p-24 * magnitude) << "row " << m << " col " << n;
      }
    }
    for (int m = rows; m < 16; ++m) EXPECT_EQ(out[m * 16], -1.0f) << "store wrote past the configured rows";
  }
}

// The SDM sums the even and the odd element of each pair apart, then adds
// both to C: with even lanes 2^24 - 2^24 and odd lanes 1 + 0 the result is 1,
// where one running sum (2^24 + 1 rounds to 2^24) would give 0.
TEST(KernelsAmxEmulator, Bf16DotSumsEvenAndOddLanesApartThenAddsToC) {
  AmxEmulator tiles;
  tiles.configure(dot_config(1));
  std::vector<uint16_t> a(16 * 32, 0), b(16 * 32, 0);
  for (int k = 0; k < 4; ++k) a[k] = f32_to_bf16(1.0f);
  b[0] = f32_to_bf16(16777216.0f);   // pair 0, even
  b[1] = f32_to_bf16(1.0f);          // pair 0, odd
  b[32] = f32_to_bf16(-16777216.0f); // pair 1, even
  tiles.zero(0);
  tiles.load(1, a.data(), 64);
  tiles.load(2, b.data(), 64);
  tiles.dpbf16ps(0, 1, 2);
  float out[16 * 16];
  tiles.store(0, out, 64);
  EXPECT_EQ(out[0], 1.0f);
}

TEST(KernelsAmxEmulator, Bf16DotTreatsDenormalInputsAsZeroAndFlushesDenormalResults) {
  AmxEmulator tiles;
  tiles.configure(dot_config(1));
  std::vector<uint16_t> a(16 * 32, 0), b(16 * 32, 0);
  a[0] = 0x0001;                          // a denormal bf16: read as 0
  b[0] = f32_to_bf16(std::ldexp(1.0f, 100));
  a[2] = f32_to_bf16(std::ldexp(1.0f, -70));  // output 1: 2^-140 is denormal in fp32
  b[32 + 2] = f32_to_bf16(std::ldexp(1.0f, -70));
  tiles.zero(0);
  tiles.load(1, a.data(), 64);
  tiles.load(2, b.data(), 64);
  tiles.dpbf16ps(0, 1, 2);
  float out[16 * 16];
  tiles.store(0, out, 64);
  EXPECT_EQ(out[0], 0.0f) << "2^-133 * 2^100 would be 2^-33 without DAZ";
  EXPECT_EQ(out[1], 0.0f) << "2^-140 would stay a denormal without FTZ";
}

TEST(KernelsAmxEmulator, Int8DotIsTheExactSumOfSignedProducts) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(-128, 127);
  AmxEmulator tiles;
  tiles.configure(dot_config(7));
  std::vector<int8_t> a(16 * 64), b(16 * 64);
  for (auto& v : a) v = static_cast<int8_t>(byte(rng));
  for (auto& v : b) v = static_cast<int8_t>(byte(rng));
  std::vector<int32_t> c(16 * 16);
  for (auto& v : c) v = byte(rng) * 1000;
  tiles.load(0, c.data(), 64);
  tiles.load(1, a.data(), 64);
  tiles.load(2, b.data(), 64);
  tiles.dpbssd(0, 1, 2);
  int32_t out[16 * 16];
  tiles.store(0, out, 64);
  for (int m = 0; m < 7; ++m) {
    for (int n = 0; n < 16; ++n) {
      int64_t want = c[m * 16 + n];
      for (int k = 0; k < 64; ++k) want += int64_t{a[m * 64 + k]} * b[(k / 4) * 64 + 4 * n + k % 4];
      EXPECT_EQ(out[m * 16 + n], want) << "row " << m << " col " << n;
    }
  }
}

TEST(KernelsAmxEmulator, Int8DotWrapsModulo2To32) {
  AmxEmulator tiles;
  tiles.configure(dot_config(1));
  std::vector<int8_t> ones(16 * 64, 1);
  std::vector<int32_t> c(16 * 16, INT32_MAX);
  tiles.load(0, c.data(), 64);
  tiles.load(1, ones.data(), 64);
  tiles.load(2, ones.data(), 64);
  tiles.dpbssd(0, 1, 2);
  int32_t out[16 * 16];
  tiles.store(0, out, 64);
  EXPECT_EQ(out[0], INT32_MIN + 63);  // INT32_MAX + 64 products of 1
}

TEST(KernelsAmxEmulator, LoadReadsOnlyConfiguredBytesAndZeroesTheRest) {
  AmxEmulator tiles;
  AmxTileConfig config;
  amx_set_tile(config, 3, 2, 8);  // 2 rows x 8 bytes
  tiles.configure(config);
  std::vector<uint8_t> src(4 * 100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i + 1);
  tiles.load(3, src.data(), 100);
  std::vector<uint8_t> dst(2 * 16, 0xee);
  tiles.store(3, dst.data(), 16);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 8; ++i) EXPECT_EQ(dst[r * 16 + i], src[r * 100 + i]);
    for (int i = 8; i < 16; ++i) EXPECT_EQ(dst[r * 16 + i], 0xee) << "store wrote past colsb";
  }
}

TEST(KernelsAmxEmulator, FaultsWhereTheHardwareRaisesUd) {
  AmxEmulator tiles;
  uint8_t buffer[1024] = {};
  EXPECT_THROW(tiles.load(0, buffer, 64), AmxTileFault) << "no LDTILECFG yet";
  AmxTileConfig bad_palette;
  bad_palette.palette = 2;
  EXPECT_THROW(tiles.configure(bad_palette), AmxTileFault);
  AmxTileConfig too_wide;
  amx_set_tile(too_wide, 0, 16, 68);
  EXPECT_THROW(tiles.configure(too_wide), AmxTileFault);
  AmxTileConfig ninth;
  amx_set_tile(ninth, 8, 1, 4);
  EXPECT_THROW(tiles.configure(ninth), AmxTileFault);

  tiles.configure(dot_config(4));
  EXPECT_THROW(tiles.load(5, buffer, 64), AmxTileFault) << "tile 5 is unconfigured";
  AmxTileConfig mismatched = dot_config(4);
  amx_set_tile(mismatched, 1, 3, 64);  // A rows != C rows
  tiles.configure(mismatched);
  EXPECT_THROW(tiles.dpbf16ps(0, 1, 2), AmxTileFault);
  AmxTileConfig short_b = dot_config(4);
  amx_set_tile(short_b, 2, 8, 64);  // A.colsb 64 != 4 * B.rows 32
  tiles.configure(short_b);
  EXPECT_THROW(tiles.dpbssd(0, 1, 2), AmxTileFault);
  tiles.configure(dot_config(4));
  EXPECT_THROW(tiles.dpbf16ps(0, 0, 2), AmxTileFault) << "C and A are one tile";
  tiles.release();
  EXPECT_THROW(tiles.zero(0), AmxTileFault) << "TILERELEASE drops the configuration";
}

}  // namespace
}  // namespace xft::engine
