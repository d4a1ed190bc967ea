// The vectorized sum kernels against the scalar reference, at lengths that
// hit every path (64/32-element blocks, 16-lane blocks, scalar tails).
#include "engine/comm/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace xft::engine::comm;

const size_t kLengths[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 1000, 4097};

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

std::vector<uint16_t> random_bf16(size_t n, unsigned seed) {
  std::vector<uint16_t> out;
  for (float v : random_floats(n, seed)) out.push_back(f32_to_bf16(v));
  return out;
}

// memcmp of two empty vectors would pass null pointers (undefined behaviour).
bool same_bytes(const void* a, const void* b, size_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;
}

TEST(CommBf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties go to the even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is half way between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(-2.5f), 0xc020);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
}

TEST(CommReduce, Float32MatchesScalarBitForBit) {
  for (size_t n : kLengths) {
    auto a = random_floats(n, 1), b = random_floats(n, 2);
    auto vec = a, ref = a;
    reduce_sum(DType::f32, vec.data(), b.data(), n);
    reduce_sum_scalar(DType::f32, ref.data(), b.data(), n);
    ASSERT_TRUE(same_bytes(vec.data(), ref.data(), n * 4)) << "n=" << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(ref[i], a[i] + b[i]);
  }
}

TEST(CommReduce, Bf16MatchesScalarBitForBit) {
  for (size_t n : kLengths) {
    auto a = random_bf16(n, 3), b = random_bf16(n, 4);
    auto vec = a, ref = a;
    reduce_sum(DType::bf16, vec.data(), b.data(), n);
    reduce_sum_scalar(DType::bf16, ref.data(), b.data(), n);
    ASSERT_TRUE(same_bytes(vec.data(), ref.data(), n * 2)) << "n=" << n;
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(ref[i], f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i])));
  }
}

TEST(CommReduce, ManySourcesSumInRankOrderWithOneRounding) {
  for (int nsrc : {1, 2, 3, 4, 7}) {
    for (size_t n : kLengths) {
      std::vector<std::vector<float>> f(static_cast<size_t>(nsrc));
      std::vector<std::vector<uint16_t>> h(static_cast<size_t>(nsrc));
      std::vector<const void*> fp, hp;
      for (int k = 0; k < nsrc; ++k) {
        f[size_t(k)] = random_floats(n, unsigned(10 + k));
        h[size_t(k)] = random_bf16(n, unsigned(20 + k));
        fp.push_back(f[size_t(k)].data());
        hp.push_back(h[size_t(k)].data());
      }
      std::vector<float> fv(n), fr(n);
      std::vector<uint16_t> hv(n), hr(n);
      reduce_sum_n(DType::f32, fv.data(), fp.data(), nsrc, n);
      reduce_sum_n_scalar(DType::f32, fr.data(), fp.data(), nsrc, n);
      reduce_sum_n(DType::bf16, hv.data(), hp.data(), nsrc, n);
      reduce_sum_n_scalar(DType::bf16, hr.data(), hp.data(), nsrc, n);
      ASSERT_TRUE(same_bytes(fv.data(), fr.data(), n * 4)) << nsrc << " sources, n=" << n;
      ASSERT_TRUE(same_bytes(hv.data(), hr.data(), n * 2)) << nsrc << " sources, n=" << n;
      for (size_t i = 0; i < n; ++i) {
        float acc = f[0][i];
        float acc16 = bf16_to_f32(h[0][i]);
        for (int k = 1; k < nsrc; ++k) {
          acc += f[size_t(k)][i];
          acc16 += bf16_to_f32(h[size_t(k)][i]);
        }
        ASSERT_EQ(fr[i], acc);
        ASSERT_EQ(hr[i], f32_to_bf16(acc16));  // accumulated in fp32, rounded once
      }
    }
  }
}

TEST(CommReduce, DestinationMayBeOneOfTheSources) {
  const size_t n = 1000;
  auto a = random_floats(n, 5), b = random_floats(n, 6);
  std::vector<float> expected(n);
  for (size_t i = 0; i < n; ++i) expected[i] = a[i] + b[i];
  const void* srcs[] = {a.data(), b.data()};
  reduce_sum_n(DType::f32, a.data(), srcs, 2, n);
  EXPECT_EQ(a, expected);
}

TEST(CommReduce, NanPropagates) {
  std::vector<uint16_t> a(40, f32_to_bf16(1.0f)), b(40, f32_to_bf16(2.0f));
  b[3] = f32_to_bf16(NAN);
  b[35] = f32_to_bf16(NAN);
  reduce_sum(DType::bf16, a.data(), b.data(), a.size());
  EXPECT_TRUE(std::isnan(bf16_to_f32(a[3])));
  EXPECT_TRUE(std::isnan(bf16_to_f32(a[35])));
  EXPECT_EQ(bf16_to_f32(a[0]), 3.0f);
}

TEST(CommDType, ParsesNames) {
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_FALSE(parse_dtype("float16").has_value());
  EXPECT_STREQ(dtype_name(DType::bf16), "bfloat16");
}

}  // namespace
