// The AVX512-BF16 fp8 decode kernel's path for whole 128-column blocks
// (Qwen's FP8 checkpoints, --dtype fp8): rows without an exponent-0 byte skip
// the subnormal patch and read block multipliers formed at load. Each input
// must still get, bit for bit, what the batch-invariant GEMM gives it (the
// server's contract), and a value within the bf16 rounding of x of the sum
// written out here in double from the published layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/fp8.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/linear_internal.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

struct WideBlock {
  int rows = 0;
  std::vector<uint8_t> q;
  std::vector<float> scale;
  Fp8Rows view;
};

// The e4m3 value of a code (sign, exponent bias 7, subnormals at exponent 0).
double e4m3_value(uint8_t b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
  return (b & 0x80) ? -magnitude : magnitude;
}

// Random normal codes (exponent 1..15, never NaN); rows with
// `exponent_zero_row(r)` also get a zero, a negative zero and subnormals.
template <class Pick>
WideBlock random_wide_block(int rows, int in, int block_rows, Pick exponent_zero_row, std::mt19937& rng) {
  WideBlock b;
  b.rows = rows;
  b.q.resize(size_t(rows) * in);
  std::uniform_int_distribution<int> byte(0, 255), column(0, in - 1), mantissa(1, 7);
  for (auto& v : b.q) {
    do v = uint8_t(byte(rng)); while ((v & 0x7F) == 0x7F || (v & 0x78) == 0);
  }
  for (int r = 0; r < rows; ++r) {
    if (!exponent_zero_row(r)) continue;
    uint8_t* row = b.q.data() + size_t(r) * in;
    row[column(rng)] = 0x00;
    row[column(rng)] = 0x80;
    row[column(rng)] = uint8_t(mantissa(rng));
    row[column(rng)] = uint8_t(0x80 | mantissa(rng));
  }
  std::uniform_real_distribution<float> scale(1e-4f, 2e-3f);
  b.scale.resize(size_t((rows + block_rows - 1) / block_rows) * (in / 128));
  for (auto& s : b.scale) s = scale(rng);
  b.view = Fp8Rows{b.q.data(), b.scale.data(), block_rows, 128};
  return b;
}

TEST(KernelsFp8WideBlocks, DecodeEqualsTheGemmBitForBitAndTheReferenceWithAndWithoutExponentZeroRows) {
  if (!use_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  IsaScope scope(Isa::avx512, true);
  std::mt19937 rng(11);
  const int in = 1024;
  // Two fused blocks (gate/up): 128-row and 32-row scale blocks.
  std::vector<WideBlock> blocks;
  blocks.push_back(random_wide_block(150, in, 128, [](int r) { return r % 3 == 0; }, rng));
  blocks.push_back(random_wide_block(40, in, 32, [](int r) { return r % 7 == 5; }, rng));
  std::vector<LinearBlock> views;
  for (const WideBlock& b : blocks) {
    LinearBlock view;
    view.fp8 = &b.view;
    view.rows = b.rows;
    views.push_back(view);
  }
  const Linear linear(views, in, WeightFormat::fp8);
  const PackedWeight& w = linear.packed();
  ASSERT_TRUE(w.use_bf16_dot);
  ASSERT_EQ(w.out, 190);
  for (int r = 0; r < w.out; ++r) {
    const bool expected = r < 150 ? r % 3 == 0 : (r - 150) % 7 == 5;
    ASSERT_EQ(w.fp8_row_exponent_zero[r] != 0, expected) << "row " << r;
  }

  std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
  for (int m : {1, 2, 3, 4}) {
    std::vector<float> x(size_t(m) * in);
    for (auto& v : x) v = xd(rng);
    AlignedBuffer staged_all, staged_one;
    const void* staged = stage_x_fp8(w, x.data(), m, staged_all);
    std::vector<float> decode(size_t(m) * w.out, std::nanf("")), gemm(size_t(m) * w.out, std::nanf(""));
    gemv_fp8_avx512bf16(w, staged, m, decode.data(), 0, w.out);
    gemm_fp8_avx512bf16(w, staged, m, gemm.data(), 0, w.out);
    for (int i = 0; i < m; ++i) {
      std::vector<float> alone(w.out);
      gemv_fp8_avx512bf16(w, stage_x_fp8(w, x.data() + size_t(i) * in, 1, staged_one), 1, alone.data(), 0, w.out);
      for (int r = 0; r < w.out; ++r) {
        const WideBlock& b = r < 150 ? blocks[0] : blocks[1];
        const int br = r < 150 ? r : r - 150, block_rows = r < 150 ? 128 : 32;
        double ref = 0, magnitude = 0;
        for (int c = 0; c < in; ++c) {
          const double weight = e4m3_value(b.q[size_t(br) * in + c]) * b.scale[size_t(br / block_rows) * (in / 128) + c / 128];
          const double p = double(x[size_t(i) * in + c]) * weight;
          ref += p;
          magnitude += std::fabs(p);
        }
        const float got = decode[size_t(i) * w.out + r];
        ASSERT_NEAR(got, ref, (std::ldexp(1.0, -8) + 2.0 * in * 6e-8) * magnitude + 1e-6) << "m=" << m << " row " << r;
        ASSERT_EQ(std::memcmp(&got, &gemm[size_t(i) * w.out + r], sizeof(float)), 0) << "GEMM differs: m=" << m << " row " << r;
        ASSERT_EQ(std::memcmp(&got, &alone[r], sizeof(float)), 0) << "batch changed a row: m=" << m << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace xft::engine
