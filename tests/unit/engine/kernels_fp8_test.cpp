// The fp8 Linear (e4m3 weights with a float scale per block, as FP8
// checkpoints store them): the e4m3 conversions, and every decode kernel
// this CPU has (scalar, AVX2, AVX-512) against a double-precision reference
// on random bytes and scales, partial edge blocks and fused blocks included;
// a row's result must not depend on what shares the call (the AVX512-BF16
// GEMM above kGemvMaxRows inputs included). On an AVX512-BF16 CPU the
// AVX-512F kernel (float x) runs as well as the vdpbf16ps one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/kernels/fp8.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

// e4m3fn written out from the format's definition, independently of the library.
double reference_e4m3(uint8_t b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (exponent == 0) return sign * mantissa / 8.0 * std::pow(2.0, -6);
  return sign * (1.0 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
}

bool is_nan_code(uint8_t b) { return (b & 0x7F) == 0x7F; }

TEST(KernelsFp8, E4m3DecodesEveryCodeAndEncodesItBack) {
  for (int b = 0; b < 256; ++b) {
    const uint8_t code = static_cast<uint8_t>(b);
    if (is_nan_code(code)) {
      EXPECT_TRUE(std::isnan(e4m3_to_float(code))) << b;
      continue;
    }
    EXPECT_EQ(double(e4m3_to_float(code)), reference_e4m3(code)) << b;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(code)), code) << b;
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
}

TEST(KernelsFp8, E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);   // halfway 1 (0x38) and 1.125 (0x39): even
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3A);   // halfway 1.125 and 1.25 (0x3A): even
  EXPECT_EQ(float_to_e4m3(1.07f), 0x39);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);      // half the smallest subnormal: to 0
  EXPECT_EQ(float_to_e4m3(3 * std::ldexp(1.0f, -10)), 0x02);  // halfway subnormals 1 and 2: 2
  EXPECT_EQ(float_to_e4m3(std::ldexp(15.0f, -10)), 0x08);     // halfway 7/8·2^-6 and 2^-6: the normal
  EXPECT_EQ(float_to_e4m3(432.0f), 0x7E);   // halfway 416 and 448: 448 (mantissa 6 is even)
  EXPECT_EQ(float_to_e4m3(1000.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3(-1e9f), 0xFE);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
}

struct Fp8Block {
  int rows = 0;
  int block_rows = 0;
  std::vector<uint8_t> q;
  std::vector<float> scale;
  std::vector<float> bias;
  Fp8Rows view;
};

// Random codes, NaN excluded (checkpoints hold none). Real weights are rarely
// e4m3 subnormals (exponent 0); rare_subnormals keeps about one in 1600, so
// most 64-byte chunks have none and the SIMD kernels' plain path runs too.
Fp8Block random_block(int rows, int in, int block_rows, int block_cols, bool rare_subnormals, std::mt19937& rng) {
  Fp8Block b;
  b.rows = rows;
  b.block_rows = block_rows;
  std::uniform_int_distribution<int> byte(0, 255);
  b.q.resize(size_t(rows) * in);
  std::uniform_int_distribution<int> one_in_100(0, 99);
  const auto unwanted = [&](uint8_t v) {
    return is_nan_code(v) || (rare_subnormals && ((v >> 3) & 15) == 0 && one_in_100(rng) != 0);
  };
  for (auto& v : b.q) {
    do v = uint8_t(byte(rng)); while (unwanted(v));
  }
  std::uniform_real_distribution<float> scale(1e-4f, 2e-3f), bias(-1.0f, 1.0f);
  b.scale.resize(size_t((rows + block_rows - 1) / block_rows) * ((in + block_cols - 1) / block_cols));
  for (auto& s : b.scale) s = scale(rng);
  b.bias.resize(rows);
  for (auto& v : b.bias) v = bias(rng);
  b.view = Fp8Rows{b.q.data(), b.scale.data(), block_rows, block_cols};
  return b;
}

// Rows of all blocks stacked, dequantized in double from the layout.
std::vector<double> reference_weight(const std::vector<Fp8Block>& blocks, int in, int block_cols) {
  std::vector<double> w;
  const int col_blocks = (in + block_cols - 1) / block_cols;
  for (const Fp8Block& b : blocks) {
    for (int r = 0; r < b.rows; ++r) {
      for (int c = 0; c < in; ++c) {
        w.push_back(reference_e4m3(b.q[size_t(r) * in + c]) *
                    b.scale[size_t(r / b.block_rows) * col_blocks + c / block_cols]);
      }
    }
  }
  return w;
}

struct Shape {
  int in, block_rows, block_cols;
  std::vector<int> rows;  // one fused block each
};

TEST(KernelsFp8, EveryKernelMatchesDoubleReferenceWithPartialBlocksAndFusedRows) {
  const Shape shapes[] = {{64, 128, 128, {128}},            // one partial column block
                          {176, 128, 128, {176, 176}},      // gate/up: two partial edges
                          {300, 128, 128, {64, 32, 32}},    // q/k/v of a tiny model
                          {384, 128, 128, {200}},           // three whole column blocks
                          {256, 32, 64, {96, 40}}};         // smaller blocks, several row blocks
  std::mt19937 rng(7);
  std::string kernels_run;
  for (const KernelPath path : available_kernel_paths()) {
    const Isa isa = path.isa;
    IsaScope scope(isa, path.avx512_bf16);
    ThreadPool pool(2);
    for (const bool rare_subnormals : {false, true}) {
      for (const Shape& s : shapes) {
        std::vector<Fp8Block> blocks;
        std::vector<LinearBlock> views;
        for (int rows : s.rows) blocks.push_back(random_block(rows, s.in, s.block_rows, s.block_cols, rare_subnormals, rng));
        for (const Fp8Block& b : blocks) {
          LinearBlock view;
          view.fp8 = &b.view;
          view.rows = b.rows;
          view.bias = b.bias.data();
          views.push_back(view);
        }
        const Linear linear(views, s.in, WeightFormat::fp8);
        ASSERT_EQ(linear.isa(), isa);
        // With vdpbf16ps, decode rounds x to bf16 once (as the bf16 and int4 kernels do).
        const bool bf16_x = path.avx512_bf16;
        ASSERT_EQ(linear.kernel_name(), std::string("fp8/") + isa_name(isa) + (bf16_x ? "-bf16" : ""));
        if (kernels_run.find(linear.kernel_name()) == std::string::npos) kernels_run += " " + linear.kernel_name();
        const double decode_rounding = bf16_x ? std::ldexp(1.0, -8) : 0.0;
        const int out = linear.out();
        const std::vector<double> w = reference_weight(blocks, s.in, s.block_cols);
        std::vector<double> bias;
        for (const Fp8Block& b : blocks) bias.insert(bias.end(), b.bias.begin(), b.bias.end());
        // Weight bytes: one per (padded) weight plus the block scales.
        size_t scales = 0;
        for (const Fp8Block& b : blocks) scales += b.scale.size();
        EXPECT_EQ(linear.weight_bytes(), size_t(out) * ((s.in + 63) / 64 * 64) + scales * sizeof(float));

        std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
        // Above kGemvMaxRows inputs the batch-invariant GEMM where the CPU has one.
        for (int m : {1, 2, 3, 4, 5, 7, 13}) {
          std::vector<float> x(size_t(m) * s.in);
          for (auto& v : x) v = xd(rng);
          std::vector<float> y(size_t(m) * out, std::nanf(""));
          linear.forward_gemv(x.data(), m, y.data(), pool);
          for (int i = 0; i < m; ++i) {
            std::vector<float> alone(out);
            linear.forward_gemv(x.data() + size_t(i) * s.in, 1, alone.data(), pool);
            for (int r = 0; r < out; ++r) {
              double ref = bias[r], magnitude = std::fabs(bias[r]);
              for (int c = 0; c < s.in; ++c) {
                const double p = double(x[size_t(i) * s.in + c]) * w[size_t(r) * s.in + c];
                ref += p;
                magnitude += std::fabs(p);
              }
              const float got = y[size_t(i) * out + r];
              ASSERT_NEAR(got, ref, (decode_rounding + 2.0 * s.in * 6e-8 + 1e-6) * magnitude + 1e-6)
                  << "isa=" << isa_name(isa) << " in=" << s.in << " m=" << m << " input " << i << " row " << r;
              ASSERT_EQ(std::memcmp(&got, &alone[r], sizeof(float)), 0)
                  << "batch changed a row: isa=" << isa_name(isa) << " in=" << s.in << " m=" << m << " row " << r;
            }
          }
          // Prefill (oneDNN on dequantized tiles, bf16 where it has bf16 matmul).
          std::vector<float> prefill(size_t(m) * out);
          linear.forward_matmul(x.data(), m, prefill.data(), pool);
          const double rounding = isa != Isa::scalar && onednn_bf16_matmul_available() ? std::ldexp(1.0, -7) : 0.0;
          for (int i = 0; i < m; ++i) {
            for (int r = 0; r < out; ++r) {
              double ref = bias[r], magnitude = std::fabs(bias[r]);
              for (int c = 0; c < s.in; ++c) {
                const double p = double(x[size_t(i) * s.in + c]) * w[size_t(r) * s.in + c];
                ref += p;
                magnitude += std::fabs(p);
              }
              ASSERT_NEAR(prefill[size_t(i) * out + r], ref, (rounding + 2.0 * s.in * 6e-8 + 1e-6) * magnitude + 1e-6)
                  << "prefill isa=" << isa_name(isa) << " in=" << s.in << " m=" << m;
            }
          }
        }
        // dequantize_row gives the weight the kernels use.
        std::vector<float> row(s.in);
        for (int r : {0, out - 1}) {
          linear.dequantize_row(r, row.data());
          for (int c = 0; c < s.in; ++c) ASSERT_EQ(row[c], static_cast<float>(w[size_t(r) * s.in + c])) << r << "," << c;
        }
      }
    }
  }
  std::printf("fp8 decode kernels checked:%s\n", kernels_run.c_str());
  RecordProperty("kernels", kernels_run);
}

// --dtype fp8: float rows quantized at load in 128x128 blocks, each block's
// largest magnitude mapped to 448, every weight rounded to the nearest e4m3
// (ties to even), written out here from that rule: the dequantized rows equal
// it exactly, and decode matches them.
TEST(KernelsFp8, FloatRowsQuantizeAtLoadInBlocksOf128) {
  const int out = 200, in = 300, block = 128;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(size_t(out) * in);
  for (auto& v : w) v = normal(rng);
  w[5] = 0.0f;
  const Linear linear(w.data(), out, in, WeightFormat::fp8);
  EXPECT_EQ(linear.kernel_name().rfind("fp8/", 0), 0u);
  std::vector<float> expected(size_t(out) * in);
  for (int rb = 0; rb < out; rb += block) {
    for (int cb = 0; cb < in; cb += block) {
      float amax = 0;
      for (int r = rb; r < std::min(out, rb + block); ++r)
        for (int c = cb; c < std::min(in, cb + block); ++c) amax = std::max(amax, std::fabs(w[size_t(r) * in + c]));
      const float scale = amax / 448.0f;
      for (int r = rb; r < std::min(out, rb + block); ++r) {
        for (int c = cb; c < std::min(in, cb + block); ++c) {
          const size_t i = size_t(r) * in + c;
          // Nearest of the 254 finite codes, the even mantissa on a tie.
          const float v = w[i] / scale;
          int best = 0;
          for (int b = 0; b < 256; ++b) {
            if (is_nan_code(uint8_t(b))) continue;
            const double d = std::fabs(reference_e4m3(uint8_t(b)) - v), db = std::fabs(reference_e4m3(uint8_t(best)) - v);
            if (d < db || (d == db && (b & 1) == 0 && (best & 1) == 1)) best = b;
          }
          expected[i] = float(reference_e4m3(uint8_t(best))) * scale;
        }
      }
    }
  }
  std::vector<float> row(in);
  for (int r = 0; r < out; ++r) {
    linear.dequantize_row(r, row.data());
    for (int c = 0; c < in; ++c) ASSERT_EQ(row[c], expected[size_t(r) * in + c]) << r << "," << c;
  }
  ThreadPool pool(2);
  std::vector<float> x(in), y(out);
  std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
  for (auto& v : x) v = xd(rng);
  linear.forward_gemv(x.data(), 1, y.data(), pool);
  const double rounding = use_avx512_bf16() ? std::ldexp(1.0, -8) : 0.0;
  for (int r = 0; r < out; ++r) {
    double ref = 0, magnitude = 0;
    for (int c = 0; c < in; ++c) {
      ref += double(x[c]) * expected[size_t(r) * in + c];
      magnitude += std::fabs(double(x[c]) * expected[size_t(r) * in + c]);
    }
    ASSERT_NEAR(y[r], ref, (rounding + 2.0 * in * 6e-8 + 1e-6) * magnitude + 1e-6) << r;
  }
}

// The AVX512-BF16 GEMM on any row range (panels cut anywhere, a lone last
// row, more rows than one panel) gives each input, bit for bit, what the
// decode kernel gives it alone; random codes put e4m3 subnormals in most
// chunks, and the 32x64 blocks give several scale rows per panel.
TEST(KernelsFp8, Avx512Bf16GemmOfAnyRowRangeEqualsTheDecodeKernelOnOneInput) {
  if (!use_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  IsaScope scope(Isa::avx512, true);
  std::mt19937 rng(5);
  const int in = 1000;
  for (const bool rare_subnormals : {false, true}) {
    std::vector<Fp8Block> blocks;  // moved in: each view keeps pointing at its block's bytes
    blocks.push_back(random_block(150, in, 32, 64, rare_subnormals, rng));
    blocks.push_back(random_block(33, in, 128, 64, rare_subnormals, rng));
    std::vector<LinearBlock> views;
    for (const Fp8Block& b : blocks) {
      LinearBlock view;
      view.fp8 = &b.view;
      view.rows = b.rows;
      view.bias = b.bias.data();
      views.push_back(view);
    }
    const Linear linear(views, in, WeightFormat::fp8);
    const PackedWeight& w = linear.packed();
    ASSERT_TRUE(w.use_bf16_dot);
    const int panel = gemm_fp8_avx512bf16_panel_rows(w);
    ASSERT_LT(panel, w.out);
    std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
    for (int m : {1, 2, 4, 5, 6, 9, 11}) {
      std::vector<float> x(size_t(m) * in);
      for (auto& v : x) v = xd(rng);
      AlignedBuffer staged_all, staged_one;
      const void* staged = stage_x_fp8(w, x.data(), m, staged_all);
      for (const auto& [rb, re] : {std::pair{0, w.out}, std::pair{1, panel + 2}, std::pair{w.out - 1, w.out}}) {
        std::vector<float> y(size_t(m) * w.out, std::nanf("")), alone(w.out);
        gemm_fp8_avx512bf16(w, staged, m, y.data(), rb, re);
        for (int i = 0; i < m; ++i) {
          const void* one = stage_x_fp8(w, x.data() + size_t(i) * in, 1, staged_one);
          gemv_fp8_avx512bf16(w, one, 1, alone.data(), rb, re);
          for (int r = rb; r < re; ++r) {
            const float got = y[size_t(i) * w.out + r];
            ASSERT_EQ(std::memcmp(&got, &alone[r], sizeof(float)), 0)
                << "m=" << m << " rows [" << rb << ", " << re << ") input " << i << " row " << r << ": " << got
                << " vs " << alone[r];
          }
        }
      }
    }
  }
}

// x for vdpbf16ps: each input times 2^64 rounded to bf16 (nearest even, NaN
// kept quiet), each 64-input chunk as its 32 even inputs then its 32 odd
// ones, zero past the row's end; written out here input by input.
TEST(KernelsFp8, StagedXForVdpbf16psIsEachInputTimes2To64InEvenThenOddLanes) {
  if (!use_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const int in = 200, out = 8, m = 3;
  std::mt19937 rng(9);
  Fp8Block b = random_block(out, in, 128, 128, false, rng);
  LinearBlock view;
  view.fp8 = &b.view;
  view.rows = b.rows;
  const Linear linear({view}, in, WeightFormat::fp8);
  const PackedWeight& w = linear.packed();
  ASSERT_TRUE(w.use_bf16_dot);
  std::uniform_real_distribution<float> xd(-3.0f, 3.0f);
  std::vector<float> x(size_t(m) * in);
  for (auto& v : x) v = xd(rng);
  x[1] = std::nanf("");
  x[2] = 1e30f;  // times 2^64: infinity
  x[3] = 1e-40f;  // subnormal input, normal once scaled
  x[4] = -0.0f;
  AlignedBuffer buffer;
  const uint16_t* staged = static_cast<const uint16_t*>(stage_x_fp8(w, x.data(), m, buffer));
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < w.ld; ++c) {
      const int chunk = c / 64 * 64, i = c % 64;
      const int lane = chunk + (i % 2) * 32 + i / 2;
      const uint16_t expected = c < in ? f32_to_bf16(x[size_t(r) * in + c] * 0x1p64f) : 0;
      ASSERT_EQ(staged[size_t(r) * w.ld + lane], expected) << "row " << r << " input " << c;
    }
  }
}

TEST(KernelsFp8, Fp8BlocksNeedFormatFp8) {
  Fp8Block b;
  std::mt19937 rng(3);
  b = random_block(64, 64, 128, 128, false, rng);
  LinearBlock view;
  view.fp8 = &b.view;
  view.rows = b.rows;
  EXPECT_THROW(Linear({view}, 64, WeightFormat::bf16), std::invalid_argument);
  EXPECT_STREQ(weight_format_name(WeightFormat::fp8), "fp8");
}

}  // namespace
}  // namespace xft::engine
