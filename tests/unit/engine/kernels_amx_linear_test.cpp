// The AMX kernels through Linear (packing at load, blocking, edges) against
// a scalar reference on random inputs, and row invariance. Every test runs
// on the tile emulator (any machine) and again on the real instructions,
// which skip with a message where the CPU has no AMX.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/amx_linear.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

class AmxModeScope {
 public:
  explicit AmxModeScope(AmxMode mode) : saved_(amx_mode()) { set_amx_mode(mode); }
  ~AmxModeScope() { set_amx_mode(saved_); }

 private:
  AmxMode saved_;
};

struct Shape {
  int in, out;
};

// Odd everything: in not a multiple of a tile (200, 1000, 96 -> padded), out
// not a multiple of 16 or 32 (77, 9, 33), a single block (16), and batches
// around the 16-row A tile and the 32-row chunk.
const Shape kShapes[] = {{200, 77}, {64, 16}, {1000, 9}, {96, 33}};
const int kRows[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 40};

class KernelsAmx : public testing::TestWithParam<AmxMode> {
 protected:
  void SetUp() override {
    if (GetParam() == AmxMode::hardware && !amx_support().bf16) {
      GTEST_SKIP() << "real AMX instructions not run: " << amx_status_line()
                   << "; the emulated variant of this test covers the kernels";
    }
    if (GetParam() == AmxMode::hardware) std::printf("[ info     ] running on the real AMX instructions\n");
    else std::printf("[ info     ] running on the AMX tile emulator\n");
  }
  // Real AMX only packs at the avx512 ISA; the emulator at any.
  Isa isa() const { return GetParam() == AmxMode::hardware ? Isa::avx512 : active_isa(); }
  // Real AMX: int8 needs amx_int8; int4 stays on the vector kernels (amx_linear.h).
  bool has_kernel(WeightFormat format) const {
    if (GetParam() == AmxMode::emulated) return true;
    return format == WeightFormat::bf16 || (format == WeightFormat::int8 && amx_support().int8);
  }
  std::string unit_suffix() const { return GetParam() == AmxMode::hardware ? "/amx" : "/amx-emulated"; }
};

std::vector<float> normal_values(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

float as_bf16(float value) { return bf16_to_f32(f32_to_bf16(value)); }

// |y - reference| within the bound of the format's rounding (linear.h /
// amx_linear.h): fp32 sums of exact bf16 products, or x's int8 rounding.
void expect_near_reference(const Linear& linear, const std::vector<float>& x, int m, const std::vector<float>& bias,
                           const std::vector<float>& y) {
  const int in = linear.in(), out = linear.out();
  std::vector<float> w(in);
  for (int n = 0; n < out; ++n) {
    linear.dequantize_row(n, w.data());
    for (int r = 0; r < m; ++r) {
      const float* xr = x.data() + static_cast<size_t>(r) * in;
      double want = bias[n], magnitude = std::fabs(bias[n]), bound = 0;
      if (linear.format() == WeightFormat::int8) {
        float max_abs = 0;
        for (int i = 0; i < in; ++i) max_abs = std::max(max_abs, std::fabs(xr[i]));
        double sum_w = 0;
        for (int i = 0; i < in; ++i) {
          want += static_cast<double>(xr[i]) * w[i];
          magnitude += std::fabs(static_cast<double>(xr[i]) * w[i]);
          sum_w += std::fabs(w[i]);
        }
        bound = max_abs / 127.0 / 2 * sum_w;
      } else {
        for (int i = 0; i < in; ++i) {
          const double p = static_cast<double>(as_bf16(xr[i])) * as_bf16(w[i]);
          want += p;
          magnitude += std::fabs(p);
        }
      }
      bound += in * 0x1p-24 * magnitude + 1e-6;
      ASSERT_NEAR(y[static_cast<size_t>(r) * out + n], want, bound)
          << linear.kernel_name() << " in=" << in << " out=" << out << " m=" << m << " row " << r << " col " << n;
    }
  }
}

TEST_P(KernelsAmx, EveryFormatMatchesTheScalarReferenceOnOddShapes) {
  IsaScope scope(isa());  // turns AMX off: the mode is set after it
  AmxModeScope mode(GetParam());
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (const Shape shape : kShapes) {
    const auto weight = normal_values(rng, static_cast<size_t>(shape.in) * shape.out);
    const auto bias = normal_values(rng, shape.out);
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4}) {
      if (!has_kernel(format)) continue;
      Linear linear(weight.data(), shape.out, shape.in, format, bias.data());
      ASSERT_EQ(linear.kernel_name(), std::string(weight_format_name(format)) + unit_suffix());
      for (int m : kRows) {
        const auto x = normal_values(rng, static_cast<size_t>(m) * shape.in);
        std::vector<float> y(static_cast<size_t>(m) * shape.out, NAN);
        linear.forward_gemv(x.data(), m, y.data(), pool);
        expect_near_reference(linear, x, m, bias, y);
        std::vector<float> y_forward(y.size(), NAN);
        linear.forward(x.data(), m, y_forward.data(), pool);
        ASSERT_EQ(std::memcmp(y.data(), y_forward.data(), y.size() * sizeof(float)), 0)
            << linear.kernel_name() << ": forward() left the tiles at m=" << m;
      }
    }
  }
}

TEST_P(KernelsAmx, EveryRowIsBitIdenticalAloneAndAmongMRows) {
  IsaScope scope(isa());  // turns AMX off: the mode is set after it
  AmxModeScope mode(GetParam());
  std::mt19937 rng(5);
  ThreadPool pool(2);
  for (const Shape shape : {Shape{200, 77}, Shape{96, 33}}) {
    const auto weight = normal_values(rng, static_cast<size_t>(shape.in) * shape.out);
    const auto bias = normal_values(rng, shape.out);
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4}) {
      if (!has_kernel(format)) continue;
      Linear linear(weight.data(), shape.out, shape.in, format, bias.data());
      for (int m : {2, 5, 16, 17, 33, 64}) {
        const auto x = normal_values(rng, static_cast<size_t>(m) * shape.in);
        std::vector<float> batched(static_cast<size_t>(m) * shape.out), alone(shape.out);
        linear.forward_gemv(x.data(), m, batched.data(), pool);
        for (int r = 0; r < m; ++r) {
          linear.forward_gemv(x.data() + static_cast<size_t>(r) * shape.in, 1, alone.data(), pool);
          ASSERT_EQ(std::memcmp(alone.data(), batched.data() + static_cast<size_t>(r) * shape.out,
                                shape.out * sizeof(float)), 0)
              << linear.kernel_name() << " in=" << shape.in << " out=" << shape.out << " m=" << m << " row " << r;
        }
      }
    }
  }
}

// TDPBF16PS sums a pair's even and odd products apart (the SDM's order):
// inputs (1, 1, 1, 1) against weights (2^24, 1, -2^24, 0) give 1, where one
// running sum would round 2^24 + 1 to 2^24 and give 0. On the real
// instructions this checks that the hardware matches the emulator's order.
TEST_P(KernelsAmx, Bf16KernelKeepsTheInstructionsPairOrder) {
  IsaScope scope(isa());  // turns AMX off: the mode is set after it
  AmxModeScope mode(GetParam());
  ThreadPool pool(1);
  std::vector<float> weight(64, 0.0f), x(64, 0.0f);
  weight[0] = 16777216.0f;
  weight[1] = 1.0f;
  weight[2] = -16777216.0f;
  for (int i = 0; i < 4; ++i) x[i] = 1.0f;
  Linear linear(weight.data(), 1, 64, WeightFormat::bf16);
  float y = NAN;
  linear.forward_gemv(x.data(), 1, &y, pool);
  EXPECT_EQ(y, 1.0f) << linear.kernel_name();
}

INSTANTIATE_TEST_SUITE_P(Units, KernelsAmx, testing::Values(AmxMode::emulated, AmxMode::hardware),
                         [](const testing::TestParamInfo<AmxMode>& info) {
                           return std::string(info.param == AmxMode::hardware ? "RealInstructions" : "Emulated");
                         });

TEST(KernelsAmxSelection, FallsBackToTheVectorKernelsWhereAmxIsAbsentOrOff) {
  if (!cpu_features().amx_tile) {
    EXPECT_EQ(amx_status_line(), "AMX: not present");
  }
  std::vector<float> weight(64 * 16, 0.5f);
  {
    AmxModeScope mode(AmxMode::hardware);  // auto
    Linear linear(weight.data(), 16, 64, WeightFormat::bf16);
    const bool amx = linear.kernel_name().find("/amx") != std::string::npos;
    EXPECT_EQ(amx, amx_support().bf16 && active_isa() >= Isa::avx512) << linear.kernel_name();
  }
  {
    AmxModeScope mode(AmxMode::off);
    Linear linear(weight.data(), 16, 64, WeightFormat::bf16);
    EXPECT_EQ(linear.kernel_name().find("amx"), std::string::npos) << linear.kernel_name();
  }
  {
    AmxModeScope mode(AmxMode::emulated);
    EXPECT_EQ(Linear(weight.data(), 16, 64, WeightFormat::f32).kernel_name().find("amx"), std::string::npos)
        << "f32 has no AMX kernel";
    EXPECT_EQ(Linear(weight.data(), 16, 64, WeightFormat::int4).kernel_name(), "int4/amx-emulated");
  }
}

// The peak loops bench_roofline measures with load their tile configuration
// from a local: on the real instructions a configuration the compiler did not
// fully write faults (SIGSEGV at ldtilecfg, SIGILL at the first tile use).
TEST(KernelsAmxPeak, PeakLoopsRunOnTheRealTiles) {
  if (!amx_support().bf16 || !amx_support().int8) {
    GTEST_SKIP() << "real AMX instructions not run: " << amx_status_line();
  }
  EXPECT_EQ(amx_bf16_peak_flops(1000), 4.0 * 2 * 16 * 16 * 32 * 1000);
  EXPECT_EQ(amx_int8_peak_ops(1000), 4.0 * 2 * 16 * 16 * 64 * 1000);
}

TEST(KernelsAmxSelection, ParsesTheModeNames) {
  AmxMode mode = AmxMode::off;
  EXPECT_TRUE(parse_amx_mode("emulate", &mode));
  EXPECT_EQ(mode, AmxMode::emulated);
  EXPECT_TRUE(parse_amx_mode("auto", &mode));
  EXPECT_EQ(mode, AmxMode::hardware);
  EXPECT_TRUE(parse_amx_mode("off", &mode));
  EXPECT_EQ(mode, AmxMode::off);
  EXPECT_FALSE(parse_amx_mode("on", &mode));
}

}  // namespace
}  // namespace xft::engine
