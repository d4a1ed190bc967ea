// int4 Linear (decode kernels scalar / AVX2 / AVX512-VNNI / AVX512-BF16, and the prefill
// path through dequantized tiles) against a double-precision reference
// computed from the plain (q, zero, scale, group) form, on random weights,
// group sizes 32 / 64 / 128 / whole row, contiguous and scattered (GPTQ
// desc_act) groups, odd shapes, batch sizes on both sides of kGemvMaxRows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/quant_int4.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

struct RandomInt4 {
  int rows = 0, in = 0, groups = 0;
  std::vector<uint8_t> q, zero;
  std::vector<uint16_t> scale;
  std::vector<int32_t> group_of;
  Int4Rows view() const { return Int4Rows{q.data(), scale.data(), zero.data(), group_of.data(), groups}; }
  double weight(int r, int c) const {
    const int g = group_of[c];
    return (double(q[size_t(r) * in + c]) - zero[size_t(r) * groups + g]) * f16_to_f32(scale[size_t(r) * groups + g]);
  }
};

// group_size <= 0: one group per row. scattered: each input's group is
// drawn at random (desc_act order), so groups are neither contiguous nor
// of equal size.
RandomInt4 random_int4(int rows, int in, int group_size, bool scattered, std::mt19937& rng) {
  RandomInt4 m;
  m.rows = rows;
  m.in = in;
  const int g_size = group_size > 0 ? group_size : in;
  m.groups = (in + g_size - 1) / g_size;
  m.group_of.resize(in);
  for (int c = 0; c < in; ++c) m.group_of[c] = c / g_size;
  if (scattered) std::shuffle(m.group_of.begin(), m.group_of.end(), rng);
  std::uniform_int_distribution<int> nibble(0, 15), zero(0, 16);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  m.q.resize(size_t(rows) * in);
  for (auto& v : m.q) v = uint8_t(nibble(rng));
  m.zero.resize(size_t(rows) * m.groups);
  for (auto& v : m.zero) v = uint8_t(zero(rng));
  m.scale.resize(size_t(rows) * m.groups);
  for (auto& v : m.scale) v = f32_to_f16(scale(rng));
  return m;
}

std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The AVX512-BF16 decode and bf16 prefill round x (and prefill the weight)
// to bf16; the bf16 decode kernel sums (128 + q)·x and takes (128 + z)·Σx
// off, which costs float rounding of those larger sums.
// onednn: forward() sent the batch to oneDNN (not to the batch-invariant GEMM).
double bound(const std::string& kernel, bool onednn, double products, double offset_products, int in) {
  const bool bf16_decode = !onednn && kernel.find("-bf16") != std::string::npos;
  const bool bf16_prefill = onednn && onednn_bf16_matmul_available();
  double rounding = 0;
  if (bf16_decode) rounding = std::ldexp(1.0, -8);
  if (bf16_prefill) rounding = std::ldexp(1.0, -7);
  return rounding * products + 4.0 * in * 6e-8 * (products + offset_products) + 1e-5;
}

// The int8-x kernels (AVX2, AVX512-VNNI; kernel name "-int8x") quantize x
// to int8 per block of at most one group (int4_x_block):
// |x - sx·t| <= sx/2 with sx <= max|x_group| / 127,
// so row r may be off by Σ_groups max|x_group| / 254 · Σ_group |w|.
bool int4_quantizes_x(const std::string& kernel, bool onednn) {
  return !onednn && kernel.find("-int8x") != std::string::npos;
}

double x_quantization_bound(const RandomInt4& src, const float* x, int r) {
  std::vector<double> amax(src.groups, 0.0), wsum(src.groups, 0.0);
  for (int c = 0; c < src.in; ++c) {
    const int g = src.group_of[c];
    amax[g] = std::max(amax[g], std::fabs(double(x[c])));
    wsum[g] += std::fabs(src.weight(r, c));
  }
  double bound = 0;
  for (int g = 0; g < src.groups; ++g) bound += amax[g] / 127.0 * 0.5001 * wsum[g];
  return bound;
}

void check(const RandomInt4& src, int m, bool with_bias, Isa isa, ThreadPool& pool, std::mt19937& rng) {
  const auto bias = random_vector(src.rows, rng, -1.0f, 1.0f);
  const auto x = random_vector(size_t(m) * src.in, rng, -2.0f, 2.0f);
  const Int4Rows view = src.view();
  LinearBlock block;
  block.int4 = &view;
  block.rows = src.rows;
  block.bias = with_bias ? bias.data() : nullptr;
  const Linear linear({block}, src.in, WeightFormat::int4);
  ASSERT_EQ(linear.isa(), isa);
  std::vector<float> y(size_t(m) * src.rows, std::nanf(""));
  linear.forward(x.data(), m, y.data(), pool);
  const bool onednn = m > kGemvMaxRows && isa != Isa::scalar && !linear.prefill_batch_invariant();
  for (int i = 0; i < m; ++i) {
    for (int r = 0; r < src.rows; ++r) {
      double ref = with_bias ? bias[r] : 0.0, products = std::fabs(ref), offsets = 0;
      for (int c = 0; c < src.in; ++c) {
        const double xv = x[size_t(i) * src.in + c];
        const double p = xv * src.weight(r, c);
        ref += p;
        products += std::fabs(p);
        offsets += std::fabs(xv) * 144.0 * f16_to_f32(src.scale[size_t(r) * src.groups + src.group_of[c]]);
      }
      const double x_bound = int4_quantizes_x(linear.kernel_name(), onednn) ? x_quantization_bound(src, &x[size_t(i) * src.in], r) : 0.0;
      ASSERT_NEAR(y[size_t(i) * src.rows + r], ref, bound(linear.kernel_name(), onednn, products, offsets, src.in) + x_bound)
          << "isa=" << isa_name(isa) << " in=" << src.in << " out=" << src.rows << " groups=" << src.groups
          << " m=" << m << " row=" << i << " col=" << r << " kernel=" << linear.kernel_name();
    }
  }
}

TEST(KernelsInt4, EveryKernelMatchesTheDoubleReferenceForEveryGroupingAndIsa) {
  std::mt19937 rng(4321);
  ThreadPool pool(3);  // more workers than cores and uneven row splits
  for (Isa isa : available_isas()) for (Int4Dot dot : available_int4_dots(isa)) {
    IsaScope scope(isa);
    Int4DotScope dot_scope(dot);
    for (int group : {32, 64, 128, -1}) {
      for (bool scattered : {false, true}) {
        for (int in : {64, 96, 200, 1000}) {
          for (int out : {1, 17, 130}) {
            const RandomInt4 src = random_int4(out, in, group, scattered, rng);
            for (int m : {1, 2, 3, 4, 9}) {
              check(src, m, (in + out + m) % 2 == 0, isa, pool, rng);
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(KernelsInt4, EveryRowOfABatchEqualsTheSameRowAlone) {
  std::mt19937 rng(17);
  ThreadPool pool(2);
  for (Isa isa : available_isas()) for (Int4Dot dot : available_int4_dots(isa)) {
    IsaScope scope(isa);
    Int4DotScope dot_scope(dot);
    for (bool scattered : {false, true}) {
      const RandomInt4 src = random_int4(77, 200, 64, scattered, rng);
      const Int4Rows view = src.view();
      const auto bias = random_vector(77, rng, -1.0f, 1.0f);
      LinearBlock block;
      block.int4 = &view;
      block.rows = 77;
      block.bias = bias.data();
      const Linear linear({block}, 200, WeightFormat::int4);
      for (int m : {2, 3, 4, 5, 8, 13}) {
        const auto x = random_vector(size_t(m) * 200, rng, -2.0f, 2.0f);
        std::vector<float> batched(size_t(m) * 77), alone(77);
        linear.forward_gemv(x.data(), m, batched.data(), pool);
        for (int r = 0; r < m; ++r) {
          linear.forward_gemv(x.data() + size_t(r) * 200, 1, alone.data(), pool);
          EXPECT_EQ(std::memcmp(alone.data(), batched.data() + size_t(r) * 77, 77 * sizeof(float)), 0)
              << linear.kernel_name() << " m=" << m << " row " << r;
        }
      }
    }
  }
}

// The VNNI kernel's integer dots are the AVX2 kernel's and its float steps
// the same: every output bit for bit, larger groups (which it hands to the
// AVX2 kernel) included.
TEST(KernelsInt4, TheVnniKernelGivesTheAvx2KernelsBits) {
  if (best_isa() < Isa::avx512 || !cpu_features().avx512_vnni) GTEST_SKIP() << "no AVX512-VNNI here";
  std::mt19937 rng(99);
  ThreadPool pool(2);
  for (int group : {32, 64, 96, 128, -1}) {
    for (bool scattered : {false, true}) {
      const RandomInt4 src = random_int4(45, 1000, group, scattered, rng);
      const Int4Rows view = src.view();
      const auto bias = random_vector(45, rng, -1.0f, 1.0f);
      LinearBlock block;
      block.int4 = &view;
      block.rows = 45;
      block.bias = bias.data();
      std::vector<float> y[2];
      for (int k = 0; k < 2; ++k) {
        IsaScope scope(k == 0 ? Isa::avx2 : Isa::avx512);
        Int4DotScope dot_scope(Int4Dot::vnni);
        const Linear linear({block}, 1000, WeightFormat::int4);
        if (k == 1) {
          ASSERT_EQ(linear.kernel_name(), "int4/avx512-vnni-int8x");
        }
        for (int m : {1, 3, 4, 7}) {
          std::mt19937 x_rng(m);  // the same inputs for both kernels
          const auto x = random_vector(size_t(m) * 1000, x_rng, -2.0f, 2.0f);
          std::vector<float> out(size_t(m) * 45);
          linear.forward_gemv(x.data(), m, out.data(), pool);
          y[k].insert(y[k].end(), out.begin(), out.end());
        }
      }
      EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)), 0)
          << "group " << group << " scattered " << scattered;
    }
  }
}

// More inputs than a decode step takes (the server's batches, prompts) run
// through the VNNI kernel's GEMM: every input's outputs bit for bit what the
// decode kernel gives it alone, for every group size (the larger ones handed
// to the AVX2 kernel), row counts that end inside an eight-row block, and
// batches that end inside a chunk of four inputs.
TEST(KernelsInt4, TheVnniGemmGivesEachInputItsDecodeBits) {
  if (best_isa() < Isa::avx512 || !cpu_features().avx512_vnni) GTEST_SKIP() << "no AVX512-VNNI here";
  std::mt19937 rng(123);
  ThreadPool pool(2);
  IsaScope scope(Isa::avx512);
  Int4DotScope dot_scope(Int4Dot::vnni);
  for (int group : {32, 64, 96, 128, -1}) {
    for (bool scattered : {false, true}) {
      const int rows = 131, in = 640;
      const RandomInt4 src = random_int4(rows, in, group, scattered, rng);
      const Int4Rows view = src.view();
      const auto bias = random_vector(rows, rng, -1.0f, 1.0f);
      LinearBlock block;
      block.int4 = &view;
      block.rows = rows;
      block.bias = bias.data();
      const Linear linear({block}, in, WeightFormat::int4);
      ASSERT_EQ(linear.kernel_name(), "int4/avx512-vnni-int8x");
      for (int m : {5, 9, 18, 33}) {
        const auto x = random_vector(size_t(m) * in, rng, -2.0f, 2.0f);
        std::vector<float> batched(size_t(m) * rows), alone(rows);
        linear.forward_gemv(x.data(), m, batched.data(), pool);
        for (int r = 0; r < m; ++r) {
          linear.forward_gemv(x.data() + size_t(r) * in, 1, alone.data(), pool);
          ASSERT_EQ(std::memcmp(alone.data(), batched.data() + size_t(r) * rows, rows * sizeof(float)), 0)
              << "group " << group << " scattered " << scattered << " m=" << m << " input " << r;
        }
      }
    }
  }
}

TEST(KernelsInt4, FusedBlocksAndDequantizedRowsFollowThePlainForm) {
  std::mt19937 rng(3);
  const RandomInt4 a = random_int4(5, 200, 32, true, rng);
  RandomInt4 b = random_int4(3, 200, 32, false, rng);
  b.group_of = a.group_of;  // one input, one grouping
  const Int4Rows va = a.view(), vb = b.view();
  LinearBlock ba, bb;
  ba.int4 = &va;
  ba.rows = 5;
  bb.int4 = &vb;
  bb.rows = 3;
  const Linear fused({ba, bb}, 200, WeightFormat::int4);
  ASSERT_EQ(fused.out(), 8);
  std::vector<float> row(200);
  for (int r = 0; r < 8; ++r) {
    fused.dequantize_row(r, row.data());
    for (int c = 0; c < 200; ++c) {
      const double want = r < 5 ? a.weight(r, c) : b.weight(r - 5, c);
      ASSERT_EQ(row[c], float(want)) << r << "," << c;
    }
  }
  // 200 inputs in 7 groups of at most 32: 7 · 32 slots of half a byte, scales
  // and zeros for the rows rounded up to a parameter block (16 rows for the
  // VNNI kernel's interleaved tiles, else 8).
  const size_t param_rows = fused.kernel_name().find("vnni") != std::string::npos ? 16 : 8;
  EXPECT_EQ(fused.weight_bytes(), size_t(8) * 7 * 16 + param_rows * 7 * 3);
}

TEST(KernelsInt4, QuantizeAtLoadRoundsToNearestWithinHalfAStep) {
  std::mt19937 rng(11);
  const int rows = 9, in = 300;  // groups of 128, 128 and 44
  auto w = random_vector(size_t(rows) * in, rng, -0.5f, 0.3f);
  for (int c = 0; c < 128; ++c) w[c] = 0.0f;  // an all-zero group is exact
  const Int4Matrix m = quantize_int4(w.data(), rows, in, 128);
  ASSERT_EQ(m.groups, 3);
  EXPECT_EQ(m.group_of[127], 0);
  EXPECT_EQ(m.group_of[128], 1);
  EXPECT_EQ(m.group_of[299], 2);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < in; ++c) {
      const int g = c / 128;
      const float s = f16_to_f32(m.scale_f16[size_t(r) * 3 + g]);
      const float got = (float(m.q[size_t(r) * in + c]) - m.zero[size_t(r) * 3 + g]) * s;
      // f16 rounding of s may shrink the range by 2^-11 of it: up to ~0.01 step at the ends.
      ASSERT_LE(std::fabs(got - w[size_t(r) * in + c]), 0.51f * s + 1e-7f) << r << "," << c;
    }
  }
  ThreadPool pool(2);
  const Linear linear(w.data(), rows, in, WeightFormat::int4);
  EXPECT_EQ(linear.kernel_name().substr(0, 5), "int4/");
  std::vector<float> row(in);
  linear.dequantize_row(0, row.data());
  for (int c = 0; c < 128; ++c) EXPECT_EQ(row[c], 0.0f);
}

TEST(KernelsInt4, FormatNameRoundTrips) {
  WeightFormat parsed;
  ASSERT_TRUE(parse_weight_format("int4", &parsed));
  EXPECT_EQ(parsed, WeightFormat::int4);
  EXPECT_STREQ(weight_format_name(WeightFormat::int4), "int4");
}

}  // namespace
}  // namespace xft::engine
