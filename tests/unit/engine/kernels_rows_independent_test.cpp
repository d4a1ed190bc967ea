// The server batches decode rows of different requests into one GEMV call
// (ModelOptions::batch_invariant); each row must come out bit for bit as it
// does alone, or batching would change greedy answers.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/linear.h"
#include "tests/unit/engine/kernels_test_support.h"

namespace xft::engine {
namespace {

TEST(KernelsRowsIndependent, EveryGemvRowEqualsTheSameRowAloneForEveryFormatAndIsa) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int in = 200, out = 77;  // odd shapes: padding and uneven thread splits
  std::vector<float> weight(static_cast<size_t>(in) * out), bias(out);
  for (float& w : weight) w = normal(rng);
  for (float& b : bias) b = normal(rng);
  ThreadPool pool(2);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    for (WeightFormat format : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16, WeightFormat::int8,
                                WeightFormat::int4}) {
      Linear linear(weight.data(), out, in, format, bias.data());
      for (int m : {2, 3, 4, 5, 8, 13, 16}) {
        std::vector<float> x(static_cast<size_t>(m) * in);
        for (float& v : x) v = normal(rng);
        std::vector<float> batched(static_cast<size_t>(m) * out), alone(out);
        linear.forward_gemv(x.data(), m, batched.data(), pool);
        int differing = 0;
        for (int r = 0; r < m; ++r) {
          linear.forward_gemv(x.data() + static_cast<size_t>(r) * in, 1, alone.data(), pool);
          differing += std::memcmp(alone.data(), batched.data() + static_cast<size_t>(r) * out, out * sizeof(float)) != 0;
        }
        EXPECT_EQ(differing, 0) << linear.kernel_name() << " m=" << m << ": rows unlike their batch of one";
      }
    }
  }
}

}  // namespace
}  // namespace xft::engine
