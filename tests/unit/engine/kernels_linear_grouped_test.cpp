// forward_gemv_grouped (several projections in one parallel region, as the
// mixture of experts runs its chosen experts) against forward_gemv of each
// projection alone: bit for bit, for every weight format, batches on both
// sides of kGemvMaxRows, projections of different shapes, inputs and batch
// sizes in one call, and pools of 1 to 3 threads. Also projections whose
// packed data was moved into one arena (as the experts of a layer are).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/linear_internal.h"
#include "engine/kernels/thread_pool.h"

namespace xft::engine {
namespace {

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Shape {
  int out, in, m;
};

class GroupedProjections : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(GroupedProjections, EachOutputIsBitForBitItsProjectionAlone) {
  const WeightFormat format = GetParam();
  std::mt19937 rng(11);
  // Experts' gate/up and down shapes, a projection with no rows this pass,
  // odd widths (padding), and batches of 1, 3 (GEMV), 5, 17 (GEMM or groups).
  const std::vector<Shape> shapes = {{96, 128, 1}, {128, 48, 3}, {96, 128, 0}, {200, 256, 5},
                                     {64, 128, 17}, {33, 192, 1}, {128, 64, 2}};
  std::vector<Linear> linears;
  std::vector<std::vector<float>> inputs, alone, grouped;
  for (const Shape& s : shapes) {
    const auto w = random_vector(size_t(s.out) * s.in, rng);
    linears.emplace_back(w.data(), s.out, s.in, format);
    inputs.push_back(random_vector(size_t(s.m) * s.in, rng));
  }
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    alone.assign(shapes.size(), {});
    grouped.assign(shapes.size(), {});
    std::vector<GroupedProjection> calls;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = shapes[i];
      alone[i].assign(size_t(s.m) * s.out, 0.0f);
      grouped[i].assign(size_t(s.m) * s.out, -7.0f);
      linears[i].forward_gemv(inputs[i].data(), s.m, alone[i].data(), pool);
      calls.push_back({&linears[i], inputs[i].data(), s.m, grouped[i].data()});
    }
    forward_gemv_grouped(calls, pool);
    for (size_t i = 0; i < shapes.size(); ++i) {
      ASSERT_EQ(alone[i].size(), grouped[i].size());
      for (size_t j = 0; j < alone[i].size(); ++j) {
        ASSERT_EQ(alone[i][j], grouped[i][j]) << weight_format_name(format) << ", " << threads
                                               << " threads, projection " << i << ", element " << j;
      }
    }
  }
}

TEST_P(GroupedProjections, ARowsResultDoesNotDependOnItsNeighbours) {
  const WeightFormat format = GetParam();
  std::mt19937 rng(5);
  const int out = 160, in = 128, m = 9;
  const auto w = random_vector(size_t(out) * in, rng);
  const Linear linear(w.data(), out, in, format);
  const auto x = random_vector(size_t(m) * in, rng);
  ThreadPool pool(2);
  std::vector<float> batch(size_t(m) * out), row(out);
  const GroupedProjection together{&linear, x.data(), m, batch.data()};
  forward_gemv_grouped({&together, 1}, pool);
  for (int r = 0; r < m; ++r) {
    const GroupedProjection one{&linear, x.data() + size_t(r) * in, 1, row.data()};
    forward_gemv_grouped({&one, 1}, pool);
    EXPECT_EQ(0, std::memcmp(row.data(), batch.data() + size_t(r) * out, sizeof(float) * out))
        << weight_format_name(format) << " row " << r;
  }
}

// Projections on one x (a decode token's experts, the shared expert and its
// f32 gate) stage it once where their layouts agree and again where they
// do not (another format, another width): each output is still bit for bit
// its projection alone.
TEST_P(GroupedProjections, ProjectionsOnOneXGiveTheirOwnBits) {
  const WeightFormat format = GetParam();
  std::mt19937 rng(31);
  struct OnX {
    int out, in;
    WeightFormat format;
  };
  const std::vector<OnX> shapes = {{96, 128, format}, {80, 128, format}, {16, 128, WeightFormat::f32},
                                   {48, 128, format}, {32, 256, format}, {40, 256, format}};
  std::vector<Linear> linears;
  for (const OnX& s : shapes) {
    const auto w = random_vector(size_t(s.out) * s.in, rng);
    linears.emplace_back(w.data(), s.out, s.in, s.format);
  }
  ThreadPool pool(2);
  for (int m : {1, 3, 17}) {
    const auto x = random_vector(size_t(m) * 256, rng);
    std::vector<std::vector<float>> alone(shapes.size()), grouped(shapes.size());
    std::vector<GroupedProjection> calls;
    for (size_t i = 0; i < shapes.size(); ++i) {
      alone[i].assign(size_t(m) * shapes[i].out, 0.0f);
      grouped[i].assign(size_t(m) * shapes[i].out, -7.0f);
      linears[i].forward_gemv(x.data(), m, alone[i].data(), pool);
      calls.push_back({&linears[i], x.data(), m, grouped[i].data()});
    }
    forward_gemv_grouped(calls, pool);
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_EQ(0, std::memcmp(alone[i].data(), grouped[i].data(), sizeof(float) * alone[i].size()))
          << weight_format_name(format) << " m " << m << " projection " << i;
    }
  }
}

TEST_P(GroupedProjections, DataMovedIntoAnArenaGivesTheSameBits) {
  const WeightFormat format = GetParam();
  std::mt19937 rng(23);
  const std::vector<Shape> shapes = {{96, 128, 1}, {128, 48, 3}, {64, 128, 17}, {33, 192, 2}};
  std::vector<Linear> own, moved;
  std::vector<std::vector<float>> inputs;
  size_t total = 0;
  for (const Shape& s : shapes) {
    const auto w = random_vector(size_t(s.out) * s.in, rng);
    own.emplace_back(w.data(), s.out, s.in, format);
    moved.emplace_back(w.data(), s.out, s.in, format);
    inputs.push_back(random_vector(size_t(s.m) * s.in, rng));
    ASSERT_EQ(moved.back().data_bytes() % 64, 0u) << weight_format_name(format);
    total += moved.back().data_bytes();
  }
  AlignedBuffer arena(total);
  size_t offset = 0;
  for (Linear& linear : moved) {
    const size_t bytes = linear.data_bytes();
    linear.move_data_into(arena.as<unsigned char>() + offset);
    EXPECT_EQ(linear.data_bytes(), bytes);
    EXPECT_EQ(static_cast<const void*>(linear.packed().data.as<unsigned char>()),
              static_cast<const void*>(arena.as<unsigned char>() + offset));
    offset += bytes;
  }
  ThreadPool pool(2);
  std::vector<std::vector<float>> expected(shapes.size()), grouped(shapes.size());
  std::vector<GroupedProjection> calls;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    expected[i].assign(size_t(s.m) * s.out, 0.0f);
    grouped[i].assign(size_t(s.m) * s.out, -7.0f);
    own[i].forward_gemv(inputs[i].data(), s.m, expected[i].data(), pool);
    calls.push_back({&moved[i], inputs[i].data(), s.m, grouped[i].data()});
  }
  forward_gemv_grouped(calls, pool);
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(expected[i].data(), grouped[i].data(), sizeof(float) * expected[i].size()))
        << weight_format_name(format) << " projection " << i;
    std::vector<float> alone(expected[i].size());
    moved[i].forward(inputs[i].data(), shapes[i].m, alone.data(), pool);
    std::vector<float> reference(expected[i].size());
    own[i].forward(inputs[i].data(), shapes[i].m, reference.data(), pool);
    EXPECT_EQ(0, std::memcmp(reference.data(), alone.data(), sizeof(float) * alone.size()))
        << weight_format_name(format) << " projection " << i << " through forward (prefill path)";
  }
  // The moved Linears free nothing of the arena: destroying them first and
  // the arena last is what MixtureOfExperts does.
  moved.clear();
}

TEST(AlignedBufferBorrowed, ReadsTheOwnersBytesAndFreesNothing) {
  AlignedBuffer owner(256);
  for (int i = 0; i < 256; ++i) owner.as<unsigned char>()[i] = static_cast<unsigned char>(i);
  {
    AlignedBuffer view = AlignedBuffer::borrowed(owner.as<unsigned char>() + 64, 128);
    EXPECT_EQ(view.size(), 128u);
    EXPECT_EQ(view.as<unsigned char>()[0], 64);
    AlignedBuffer moved = std::move(view);
    EXPECT_EQ(moved.as<unsigned char>()[127], 191);
    moved.resize(64);  // no larger: stays the view
    EXPECT_EQ(moved.as<unsigned char>(), owner.as<unsigned char>() + 64);
    moved.resize(4096);  // larger: its own zeroed memory, the owner's bytes untouched
    EXPECT_NE(moved.as<unsigned char>(), owner.as<unsigned char>() + 64);
    EXPECT_EQ(moved.as<unsigned char>()[0], 0);
  }
  for (int i = 0; i < 256; ++i) ASSERT_EQ(owner.as<unsigned char>()[i], static_cast<unsigned char>(i));
}

INSTANTIATE_TEST_SUITE_P(Formats, GroupedProjections,
                         ::testing::Values(WeightFormat::f32, WeightFormat::bf16, WeightFormat::f16,
                                           WeightFormat::int8, WeightFormat::int4, WeightFormat::fp8),
                         [](const ::testing::TestParamInfo<WeightFormat>& info) {
                           return std::string(weight_format_name(info.param));
                         });

}  // namespace
}  // namespace xft::engine
