// Element-wise ops, conversions and sampling helpers against double
// references, on every ISA family this CPU has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "tests/unit/engine/kernels_test_support.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {


uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(KernelsOps, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808001)), 0x3f81);  // above tie
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(0x4049), float_of(0x40490000));
}

TEST(KernelsOps, F16EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const uint32_t exponent = (h >> 10) & 0x1f;
    if (exponent == 31 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);               // tie to even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);           // tie to even (up)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);                      // half of min subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
}

// The SIMD array conversions (F16C, vcvtneps2bf16) give the same bits as the
// scalar conversions tested above, on random inputs of many magnitudes.
TEST(KernelsOps, ArrayConversionsMatchScalarOnEveryIsa) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
  std::vector<float> in(1037);
  for (auto& v : in) {
    // Finite values between 2^-30 and 2^20 in magnitude, either sign.
    uint32_t b = any_bits(rng);
    const uint32_t exponent = 97 + (b % 47);
    b = (b & 0x807fffffu) | (exponent << 23);
    v = float_of(b);
  }
  std::vector<uint16_t> expect_bf16(in.size()), expect_f16(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    expect_bf16[i] = f32_to_bf16(in[i]);
    expect_f16[i] = f32_to_f16(in[i]);
  }
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    std::vector<uint16_t> got(in.size());
    f32_to_bf16(in.data(), got.data(), in.size());
    EXPECT_EQ(got, expect_bf16) << isa_name(isa);
    f32_to_f16(in.data(), got.data(), in.size());
    EXPECT_EQ(got, expect_f16) << isa_name(isa);
    std::vector<float> back(in.size());
    f16_to_f32(expect_f16.data(), back.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(bits_of(back[i]), bits_of(f16_to_f32(expect_f16[i])));
    bf16_to_f32(expect_bf16.data(), back.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(bits_of(back[i]), uint32_t(expect_bf16[i]) << 16);
  }
}

TEST(KernelsOps, RmsnormMatchesDoubleReference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int n : {1, 7, 896, 1001}) {
    std::vector<float> x(2 * n), w(n), y(2 * n);
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    rmsnorm_rows(x.data(), w.data(), y.data(), 2, n, 1e-6f);
    for (int r = 0; r < 2; ++r) {
      double ss = 0;
      for (int i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
      for (int i = 0; i < n; ++i) {
        const double ref = x[r * n + i] * inv * w[i];
        ASSERT_NEAR(y[r * n + i], ref, 1e-5 * (std::fabs(ref) + 1)) << n << " " << i;
      }
    }
    std::vector<float> in_place(x);
    rmsnorm_rows(in_place.data(), w.data(), 2, n, 1e-6f);
    EXPECT_EQ(in_place, y);
  }
}

TEST(KernelsOps, RopeRotatesHalvesByPositionAngle) {
  const int head_dim = 8, heads = 2, m = 3;
  const double theta = 10000.0;
  RopeTable table(head_dim, 100, theta);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int stride = heads * head_dim + 5;  // padded rows are left alone
  std::vector<float> x(size_t(m) * stride);
  for (auto& v : x) v = dist(rng);
  const std::vector<float> before(x);
  const int positions[m] = {0, 1, 99};
  apply_rope(x.data(), m, stride, heads, head_dim, positions, table);
  for (int r = 0; r < m; ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < head_dim / 2; ++i) {
        const double angle = positions[r] * std::pow(theta, -2.0 * i / head_dim);
        const double a = before[r * stride + h * head_dim + i];
        const double b = before[r * stride + h * head_dim + i + head_dim / 2];
        EXPECT_NEAR(x[r * stride + h * head_dim + i], a * std::cos(angle) - b * std::sin(angle), 1e-6);
        EXPECT_NEAR(x[r * stride + h * head_dim + i + head_dim / 2], b * std::cos(angle) + a * std::sin(angle), 1e-6);
      }
    }
    for (int i = heads * head_dim; i < stride; ++i) EXPECT_EQ(x[r * stride + i], before[r * stride + i]);
  }
  EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + head_dim), std::vector<float>(before.begin(), before.begin() + head_dim));
}

TEST(KernelsOps, SiluMulAddSoftmax) {
  for (Isa isa : available_isas()) {
  IsaScope scope(isa);
  SCOPED_TRACE(isa_name(isa));
  const std::vector<float> gate{-2.0f, 0.0f, 1.5f, 30.0f};
  const std::vector<float> up{3.0f, 5.0f, -1.0f, 2.0f};
  std::vector<float> out(4);
  silu_mul(gate.data(), up.data(), out.data(), 4);
  for (int i = 0; i < 4; ++i) {
    const double g = gate[i];
    EXPECT_NEAR(out[i], g / (1 + std::exp(-g)) * up[i], 1e-6 * (1 + std::fabs(out[i])));
  }
  std::vector<float> fused{-2.0f, 0.0f, 3.0f, 5.0f, 1.5f, 30.0f, -1.0f, 2.0f};  // two rows [gate|up]
  std::vector<float> fused_out(4);
  silu_mul_fused(fused.data(), 2, 2, fused_out.data());
  EXPECT_EQ(fused_out, out);

  std::vector<float> a{1, 2, 3}, b{10, 20, 30}, c(3);
  add(a.data(), b.data(), c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>{11, 22, 33}));
  add_inplace(a.data(), b.data(), 3);
  EXPECT_EQ(a, c);

  std::vector<float> logits{1000.0f, 1001.0f, 999.0f};
  softmax(logits.data(), 3);
  const double e0 = std::exp(-1.0), e2 = std::exp(-2.0), sum = e0 + 1 + e2;
  EXPECT_NEAR(logits[0], e0 / sum, 1e-6);
  EXPECT_NEAR(logits[1], 1 / sum, 1e-6);
  EXPECT_NEAR(logits[2], e2 / sum, 1e-6);
  }
}

TEST(KernelsOps, ExpShiftSumIsAccurateOverTheFloatRange) {
  std::vector<float> x;
  for (float v = -110.0f; v < 88.0f; v += 0.37f) x.push_back(v);
  x.push_back(-INFINITY);
  x.push_back(0.0f);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    std::vector<float> y(x);
    const float sum = exp_shift_sum(y.data(), int(y.size()), 1.5f);
    double ref_sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = std::exp(double(x[i] - 1.5f));  // the shift is applied in float
      ref_sum += ref;
      if (ref < 1e-37) {
        ASSERT_LE(y[i], 1e-37) << x[i];  // underflow region: zero or tiny
      } else {
        ASSERT_NEAR(y[i], ref, 4e-7 * ref) << isa_name(isa) << " x=" << x[i];
      }
    }
    EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum);
    EXPECT_EQ(y[x.size() - 2], 0.0f);  // exp(-inf) = 0
  }
}

TEST(KernelsOps, ArgmaxAndTopKOrderByValueThenIndex) {
  const std::vector<float> x{0.5f, 3.0f, -1.0f, 3.0f, 2.0f, NAN, 7.0f};
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    EXPECT_EQ(argmax(x.data(), 5), 1) << isa_name(isa);
    EXPECT_EQ(argmax(x.data(), 7), 6) << isa_name(isa);
    EXPECT_EQ(argmax(x.data() + 5, 1), 0) << isa_name(isa);
    EXPECT_EQ(argmax(x.data(), 0), -1);
  }
  int idx[8];
  float val[8];
  ASSERT_EQ(top_k(x.data(), 7, 3, idx, val), 3);
  EXPECT_EQ(idx[0], 6);
  EXPECT_EQ(idx[1], 1);
  EXPECT_EQ(idx[2], 3);
  EXPECT_EQ(val[1], 3.0f);
  ASSERT_EQ(top_k(x.data(), 7, 100, idx, val), 6);  // NaN is never selected
  EXPECT_EQ(std::vector<int>(idx, idx + 6), (std::vector<int>{6, 1, 3, 4, 0, 2}));

  std::mt19937 rng(8);
  std::vector<float> big(151936);
  std::uniform_real_distribution<float> dist(-10, 10);
  for (auto& v : big) v = dist(rng);
  ASSERT_EQ(top_k(big.data(), int(big.size()), 5, idx, val), 5);
  std::vector<int> order(big.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int a, int b) { return big[a] > big[b]; });
  EXPECT_EQ(std::vector<int>(idx, idx + 5), std::vector<int>(order.begin(), order.begin() + 5));
  EXPECT_EQ(idx[0], argmax(big.data(), int(big.size())));
  big[151935] = 1e9f;
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    EXPECT_EQ(argmax(big.data(), int(big.size())), 151935) << isa_name(isa);
  }
}

TEST(KernelsOps, IsaNamesAndFeatureReport) {
  Isa isa;
  EXPECT_TRUE(parse_isa("avx2", &isa));
  EXPECT_EQ(isa, Isa::avx2);
  EXPECT_FALSE(parse_isa("sse", &isa));
  {
    IsaScope scope(Isa::scalar);
    EXPECT_EQ(active_isa(), Isa::scalar);
  }
  set_active_isa(Isa::avx512);
  EXPECT_EQ(active_isa(), best_isa());  // clamped to what the CPU has
  const std::string features = describe(cpu_features());
  if (best_isa() == Isa::avx512) {
    EXPECT_NE(features.find("avx512f"), std::string::npos);
  }
}

}  // namespace
}  // namespace xft::engine
