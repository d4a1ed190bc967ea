// Linear (the batch-invariant kernels: decode GEMV, AVX2 GEMM, and the oneDNN
// prefill path) against a plain double-precision reference, for every weight
// format, every ISA family this CPU has, odd shapes and batch sizes on both
// sides of kGemvMaxRows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "tests/unit/engine/kernels_test_support.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {


std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The weight the kernels are meant to use, computed independently of the
// library: bf16/f16 rounding, or int8 q * s with s = max|row| / 127.
std::vector<double> effective_weight(const std::vector<float>& w, int out, int in, WeightFormat f) {
  std::vector<double> e(w.size());
  for (int r = 0; r < out; ++r) {
    double max_abs = 0;
    for (int c = 0; c < in; ++c) max_abs = std::max(max_abs, std::fabs(double(w[size_t(r) * in + c])));
    const float s = max_abs > 0 ? float(max_abs) / 127.0f : 1.0f;
    for (int c = 0; c < in; ++c) {
      const float v = w[size_t(r) * in + c];
      double out_v = v;
      if (f == WeightFormat::bf16) out_v = bf16_to_f32(f32_to_bf16(v));
      if (f == WeightFormat::f16) out_v = f16_to_f32(f32_to_f16(v));
      if (f == WeightFormat::int8) out_v = double(std::nearbyint(v / s)) * s;
      e[size_t(r) * in + c] = out_v;
    }
  }
  return e;
}

// Relative error bound (times Σ|x_i w_i|) of a path: decode with vdpbf16ps
// and bf16 oneDNN prefill round x to bf16 (2^-9 relative); f16 prefill also
// rounds the weight to bf16; everything else is exact up to float
// accumulation.
double tolerance(WeightFormat f, Isa isa, bool onednn, int in) {
  const bool bf16_prefill = onednn && f != WeightFormat::f32 && onednn_bf16_matmul_available();
  const bool bf16_decode = !onednn && f == WeightFormat::bf16 && isa == Isa::avx512 && cpu_features().avx512_bf16;
  const double accumulate = 2.0 * in * 6e-8 + 1e-6;
  double rounding = 0;
  if (bf16_prefill || bf16_decode) rounding = std::ldexp(1.0, -8);
  if (bf16_prefill && f == WeightFormat::f16) rounding = std::ldexp(1.0, -7);
  return rounding + accumulate;
}

// The int8 decode kernel on AVX512-VNNI quantizes x per kInt8Block block:
// |x - sx·t| <= sx/2 with sx = max|x_block| / 127, so row r may be off by
// Σ_blocks sx/2 · Σ_block |w_eff|.
bool int8_quantizes_x(WeightFormat f, Isa isa, bool onednn) {
  return f == WeightFormat::int8 && isa == Isa::avx512 && cpu_features().avx512_vnni && !onednn;
}

double x_quantization_bound(const float* x, const double* w_row, int in) {
  double bound = 0;
  for (int b0 = 0; b0 < in; b0 += kInt8Block) {
    const int b1 = std::min(in, b0 + kInt8Block);
    double amax = 0, wsum = 0;
    for (int c = b0; c < b1; ++c) {
      amax = std::max(amax, std::fabs(double(x[c])));
      wsum += std::fabs(w_row[c]);
    }
    bound += amax / 127.0 / 2.0 * wsum;
  }
  return bound;
}

enum class Path { forward, gemv };

// y = forward(x) (or forward_gemv) against the double reference within the
// bound of the path that ran.
void check_linear(WeightFormat format, Isa isa, int in, int out, int m, bool with_bias, ThreadPool& pool,
                  std::mt19937& rng, Path path = Path::forward) {
  const auto w = random_vector(size_t(out) * in, rng);
  const auto bias = random_vector(out, rng);
  const auto x = random_vector(size_t(m) * in, rng, -2.0f, 2.0f);
  const Linear linear(w.data(), out, in, format, with_bias ? bias.data() : nullptr);
  ASSERT_EQ(linear.out(), out);
  ASSERT_EQ(linear.in(), in);
  ASSERT_EQ(linear.isa(), isa);
  std::vector<float> y(size_t(m) * out, std::nanf(""));
  if (path == Path::gemv) linear.forward_gemv(x.data(), m, y.data(), pool);
  else linear.forward(x.data(), m, y.data(), pool);
  const bool onednn =
      path == Path::forward && m > kGemvMaxRows && isa != Isa::scalar && !linear.prefill_batch_invariant();

  const auto e = effective_weight(w, out, in, format);
  const double tol = tolerance(format, isa, onednn, in);
  for (int i = 0; i < m; ++i) {
    for (int r = 0; r < out; ++r) {
      double ref = with_bias ? bias[r] : 0.0;
      double magnitude = std::fabs(ref);
      for (int c = 0; c < in; ++c) {
        const double p = double(x[size_t(i) * in + c]) * e[size_t(r) * in + c];
        ref += p;
        magnitude += std::fabs(p);
      }
      const double got = y[size_t(i) * out + r];
      const double x_bound = int8_quantizes_x(format, isa, onednn)
                                 ? x_quantization_bound(&x[size_t(i) * in], &e[size_t(r) * in], in)
                                 : 0.0;
      ASSERT_NEAR(got, ref, tol * magnitude + x_bound + 1e-6)
          << weight_format_name(format) << " isa=" << isa_name(isa) << " in=" << in << " out=" << out
          << " m=" << m << " row=" << i << " col=" << r << " kernel=" << linear.kernel_name()
          << (path == Path::gemv ? " forward_gemv" : onednn ? " oneDNN" : " forward");
    }
  }
}

TEST(KernelsLinear, MatchesDoubleReferenceOnOddShapesForEveryFormatAndIsa) {
  std::mt19937 rng(1234);
  ThreadPool pool(3);  // more workers than cores and uneven row splits
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    for (WeightFormat format : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8}) {
      for (int in : {1, 7, 65, 130, 1000}) {
        for (int out : {1, 3, 33, 257}) {
          for (int m : {1, 2, 3, 4, 17, 130}) {
            if (size_t(in) * out * m > 4'000'000) continue;  // keep the sanitizer run short
            check_linear(format, isa, in, out, m, (in + out + m) % 2 == 0, pool, rng);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// The batch-invariant path for large batches (the decode kernel's GEMM, else
// the decode kernel in groups) whatever forward() picks: K blocks (1300: with
// 1..3 int8 blocks after the last four),
// panels split over three workers, inputs in chunks with a tail, rows already
// padded (no copy).
TEST(KernelsLinear, BatchInvariantKernelsMatchDoubleReferenceForLargeBatches) {
  std::mt19937 rng(4321);
  ThreadPool pool(3);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    for (WeightFormat format : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8}) {
      for (int in : {64, 130, 320, 1000, 1300}) {
        for (int out : {1, 7, 130}) {
          for (int m : {5, 6, 7, 13, 64}) {
            check_linear(format, isa, in, out, m, (in + m) % 2 == 0, pool, rng, Path::gemv);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(KernelsLinear, LargeShapeBothPathsAgreeWithReference) {
  std::mt19937 rng(99);
  ThreadPool pool(2);
  for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8}) {
    check_linear(format, active_isa(), 896, 1000, 1, true, pool, rng);
    check_linear(format, active_isa(), 896, 1000, 33, false, pool, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(KernelsLinear, DecodeKernelChunksLargeBatchesAndPrefillPathServesSmallOnes) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  const int in = 130, out = 33;
  const auto w = random_vector(size_t(out) * in, rng);
  const auto x = random_vector(size_t(9) * in, rng);
  const Linear linear(w.data(), out, in, WeightFormat::f32);
  std::vector<float> gemv(size_t(9) * out), matmul(size_t(9) * out), single(out);
  linear.forward_gemv(x.data(), 9, gemv.data(), pool);
  linear.forward_matmul(x.data(), 9, matmul.data(), pool);
  for (int i = 0; i < 9; ++i) {
    linear.forward(x.data() + size_t(i) * in, 1, single.data(), pool);
    for (int r = 0; r < out; ++r) {
      // m = 1 streams one row at a time, m = 4 four rows: another summation order.
      EXPECT_NEAR(gemv[size_t(i) * out + r], single[r], 1e-5) << i << "," << r;
      EXPECT_NEAR(matmul[size_t(i) * out + r], single[r], 1e-4) << i << "," << r;
    }
  }
}

TEST(KernelsLinear, FusedBlocksEqualStackedRowsWithPerBlockBias) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  const int in = 65;
  const auto wq = random_vector(size_t(5) * in, rng);
  const auto wk = random_vector(size_t(3) * in, rng);
  const auto bk = random_vector(3, rng);
  std::vector<uint16_t> wk_bf16(wk.size());
  f32_to_bf16(wk.data(), wk_bf16.data(), wk.size());
  const Linear fused({LinearBlock{wq.data(), nullptr, nullptr, 5}, LinearBlock{nullptr, wk_bf16.data(), bk.data(), 3}},
                     in, WeightFormat::f32);
  ASSERT_EQ(fused.out(), 8);
  std::vector<float> stacked(wq);
  for (uint16_t b : wk_bf16) stacked.push_back(bf16_to_f32(b));
  std::vector<float> bias{0, 0, 0, 0, 0, bk[0], bk[1], bk[2]};
  const Linear reference(stacked.data(), 8, in, WeightFormat::f32, bias.data());
  const auto x = random_vector(in, rng);
  std::vector<float> y1(8), y2(8);
  fused.forward(x.data(), 1, y1.data(), pool);
  reference.forward(x.data(), 1, y2.data(), pool);
  for (int r = 0; r < 8; ++r) EXPECT_FLOAT_EQ(y1[r], y2[r]) << r;
}

TEST(KernelsLinear, Bf16SourceIsKeptBitExactAndSizesArePadded) {
  const int out = 3, in = 7;
  std::vector<uint16_t> w(size_t(out) * in);
  for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(0.5f + 0.001f * float(i));
  const Linear linear(w.data(), out, in, WeightFormat::bf16);
  EXPECT_EQ(linear.weight_bytes(), size_t(out) * 64 * 2);  // rows padded to 64 elements
  ThreadPool pool(1);
  std::vector<float> x(in, 0.0f), y(out);
  for (int c = 0; c < in; ++c) {
    std::fill(x.begin(), x.end(), 0.0f);
    x[c] = 1.0f;
    linear.forward(x.data(), 1, y.data(), pool);
    for (int r = 0; r < out; ++r) EXPECT_EQ(y[r], bf16_to_f32(w[size_t(r) * in + c])) << r << "," << c;
  }
  const std::vector<float> wf(size_t(out) * in, 1.0f);
  EXPECT_EQ(Linear(wf.data(), out, in, WeightFormat::int8).weight_bytes(), size_t(out) * 64 + out * 4);
  EXPECT_EQ(Linear(wf.data(), out, in, WeightFormat::f32).weight_bytes(), size_t(out) * 64 * 4);
}

TEST(KernelsLinear, Int8ZeroRowAndExtremesQuantizeSymmetrically) {
  ThreadPool pool(1);
  const int in = 4;
  const std::vector<float> w{0, 0, 0, 0, 31.75f, -31.75f, 0.125f, 0.375f};
  const Linear linear(w.data(), 2, in, WeightFormat::int8);
  const std::vector<float> x{1, 10, 100, 127};  // exact on every path, VNNI's block quantization too
  std::vector<float> y(2);
  linear.forward(x.data(), 1, y.data(), pool);
  EXPECT_EQ(y[0], 0.0f);
  // s = 31.75 / 127 = 0.25: q = {127, -127, 0 (0.5 rounds to even), 2 (1.5 rounds to even)}.
  EXPECT_EQ(y[1], 31.75f - 317.5f + 0.0f + 63.5f);
}

TEST(KernelsLinear, FormatNamesRoundTrip) {
  for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8}) {
    WeightFormat parsed;
    ASSERT_TRUE(parse_weight_format(weight_format_name(f), &parsed));
    EXPECT_EQ(parsed, f);
  }
  WeightFormat parsed;
  EXPECT_FALSE(parse_weight_format("int3", &parsed));
}

}  // namespace
}  // namespace xft::engine
