// The server batches decode rows of different requests into one GEMV call
// (ModelOptions::batch_invariant); each row must come out bit for bit as it
// does alone, or batching would change greedy answers.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

struct Shape {
  int in, out;
};

// Rows of y that differ (bitwise) from the same input run alone through forward_gemv.
int rows_unlike_alone(const Linear& linear, const std::vector<float>& x, int m, const std::vector<float>& batched,
                      ThreadPool& pool) {
  const int in = linear.in(), out = linear.out();
  std::vector<float> alone(out);
  int differing = 0;
  for (int r = 0; r < m; ++r) {
    linear.forward_gemv(x.data() + static_cast<size_t>(r) * in, 1, alone.data(), pool);
    differing += std::memcmp(alone.data(), batched.data() + static_cast<size_t>(r) * out, out * sizeof(float)) != 0;
  }
  return differing;
}

// Odd shapes: padding (200 -> 256), rows already padded (320: no staging
// copy, K blocks of the AVX2 GEMM with a short last one; 1300: 1..3 int8
// blocks after the last four, several int4 groups and K blocks, fp8 column
// blocks of 128 with a last one of 64), uneven
// thread and panel splits (150 rows: more than one panel of the GEMMs);
// batches below, at and above kGemvMaxRows, GEMM tails.
TEST(KernelsRowsIndependent, EveryGemvRowEqualsTheSameRowAloneForEveryFormatAndIsa) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  for (const Shape shape : {Shape{200, 77}, Shape{320, 130}, Shape{1000, 9}, Shape{1300, 150}}) {
    std::vector<float> weight(static_cast<size_t>(shape.in) * shape.out), bias(shape.out);
    for (float& w : weight) w = normal(rng);
    for (float& b : bias) b = normal(rng);
    for (Isa isa : available_isas()) {
      IsaScope scope(isa);
      for (WeightFormat format : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8,
                                  WeightFormat::int4, WeightFormat::fp8}) {
        for (Int4Dot dot : available_int4_dots(format == WeightFormat::int4 ? isa : Isa::scalar)) {
          Int4DotScope dot_scope(dot);
          Linear linear(weight.data(), shape.out, shape.in, format, bias.data());
          for (int m : {2, 3, 4, 5, 6, 7, 8, 13, 16, 17, 64}) {
            std::vector<float> x(static_cast<size_t>(m) * shape.in);
            for (float& v : x) v = normal(rng);
            std::vector<float> batched(static_cast<size_t>(m) * shape.out);
            linear.forward_gemv(x.data(), m, batched.data(), pool);
            EXPECT_EQ(rows_unlike_alone(linear, x, m, batched, pool), 0)
                << linear.kernel_name() << " in=" << shape.in << " out=" << shape.out << " m=" << m
                << ": rows unlike their batch of one";
          }
        }
      }
    }
  }
}

// Where forward() takes the batch-invariant GEMM for prefill, a prompt's rows
// come out as they would one at a time (the plain path is then invariant too).
TEST(KernelsRowsIndependent, PlainPrefillRowsEqualRowsAloneWhereTheGemmServesIt) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  const int in = 896, out = 150, m = 37;
  std::vector<float> weight(static_cast<size_t>(in) * out), x(static_cast<size_t>(m) * in);
  for (float& w : weight) w = normal(rng);
  for (float& v : x) v = normal(rng);
  int checked = 0;
  for (WeightFormat format : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8}) {
    Linear linear(weight.data(), out, in, format);
    if (!linear.prefill_batch_invariant()) continue;  // oneDNN serves this CPU's prefill
    std::vector<float> y(static_cast<size_t>(m) * out);
    linear.forward(x.data(), m, y.data(), pool);
    EXPECT_EQ(rows_unlike_alone(linear, x, m, y, pool), 0) << linear.kernel_name();
    ++checked;
  }
  if (active_isa() == Isa::avx2) {
    EXPECT_EQ(checked, 4) << "AVX2 without AVX-512: every format's prefill is the GEMM";
  }
}

}  // namespace
}  // namespace xft::engine
