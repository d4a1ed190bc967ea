// Tiled online-softmax attention against a naive softmax(QKᵀ/√d)·V in double,
// over the values the cache actually holds (bf16/f16/f32), with GQA, prefill and
// decode, contexts spanning several tiles and KV splits, on every ISA family.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "engine/kernels/attention.h"
#include "engine/kernels/cpu_features.h"
#include "tests/unit/engine/kernels_test_support.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {


// Element d of a cached row, as the cache holds it.
float cached(const KvCache& cache, const void* row, int d) {
  switch (cache.format()) {
    case KvFormat::bf16: return bf16_to_f32(static_cast<const uint16_t*>(row)[d]);
    case KvFormat::f16: return f16_to_f32(static_cast<const uint16_t*>(row)[d]);
    case KvFormat::f32: break;
  }
  return static_cast<const float*>(row)[d];
}

struct Case {
  int heads, kv_heads, head_dim;
  int context;   // positions [0, context) are in the cache
  int m;         // query rows: the last m positions (prefill) or chosen ones
  KvFormat format;
  int threads;
};

void check(const Case& c, std::mt19937& rng) {
  const int kv_width = c.kv_heads * c.head_dim;
  const int q_width = c.heads * c.head_dim;
  std::normal_distribution<float> dist(0.0f, 1.5f);
  KvCache cache(c.kv_heads, c.head_dim, c.context + 3, c.format);
  std::vector<float> k(size_t(c.context) * kv_width), v(k.size());
  for (auto& x : k) x = dist(rng);
  for (auto& x : v) x = dist(rng);
  // Store in two batches, the second one out of order, like prefill then decode.
  std::vector<int> all(c.context);
  for (int i = 0; i < c.context; ++i) all[i] = i;
  const int first = c.context / 2;
  cache.store(k.data(), v.data(), first, kv_width, all.data());
  for (int i = c.context - 1; i >= first; --i) {
    cache.store(k.data() + size_t(i) * kv_width, v.data() + size_t(i) * kv_width, 1, kv_width, &all[i]);
  }

  std::vector<int> positions(c.m);
  for (int r = 0; r < c.m; ++r) positions[r] = c.context - c.m + r;
  const int q_stride = q_width + 3, out_stride = q_width + 1;
  std::vector<float> q(size_t(c.m) * q_stride);
  for (auto& x : q) x = dist(rng);
  std::vector<float> out(size_t(c.m) * out_stride, -7.0f);
  ThreadPool pool(c.threads);
  attention(q.data(), c.m, q_stride, positions.data(), cache, c.heads, out.data(), out_stride, pool);

  const int group = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(double(c.head_dim));
  for (int r = 0; r < c.m; ++r) {
    for (int h = 0; h < c.heads; ++h) {
      const int kvh = h / group;
      const int n = positions[r] + 1;
      std::vector<double> p(n);
      double max_score = -INFINITY;
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int d = 0; d < c.head_dim; ++d) {
          s += double(q[size_t(r) * q_stride + h * c.head_dim + d]) * cached(cache, cache.key(kvh, j), d);
        }
        p[j] = s * scale;
        max_score = std::max(max_score, p[j]);
      }
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - max_score));
      for (int d = 0; d < c.head_dim; ++d) {
        double ref = 0;
        for (int j = 0; j < n; ++j) ref += p[j] / sum * cached(cache, cache.value(kvh, j), d);
        ASSERT_NEAR(out[size_t(r) * out_stride + h * c.head_dim + d], ref, 2e-5 * (1 + std::fabs(ref)))
            << "isa=" << isa_name(active_isa()) << " heads=" << c.heads << "/" << c.kv_heads
            << " d=" << c.head_dim << " ctx=" << c.context << " m=" << c.m << " row=" << r << " head=" << h
            << " dim=" << d;
      }
    }
    // Padding between rows is untouched.
    ASSERT_EQ(out[size_t(r) * out_stride + q_width], -7.0f);
  }
}

TEST(KernelsAttention, PrefillMatchesNaiveSoftmaxWithGqa) {
  std::mt19937 rng(21);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    check({14, 2, 64, 150, 150, KvFormat::bf16, 2}, rng);   // whole prompt, 3 tiles
    check({4, 4, 40, 70, 70, KvFormat::f16, 3}, rng);       // MHA, head_dim not a multiple of 16
    check({6, 2, 128, 65, 20, KvFormat::bf16, 2}, rng);     // chunked prefill after a cached prefix
    check({14, 2, 64, 150, 150, KvFormat::f32, 2}, rng);    // fp32 cache, whole prompt
    check({6, 3, 24, 97, 33, KvFormat::f32, 3}, rng);       // fp32, head_dim 24 (masked tails), chunked
    if (HasFatalFailure()) return;
  }
}

TEST(KernelsAttention, DecodeLongContextSplitsKvTiles) {
  std::mt19937 rng(22);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    check({2, 1, 64, 1000, 1, KvFormat::bf16, 4}, rng);     // 16 tiles split over 4 threads
    check({8, 2, 64, 333, 1, KvFormat::f16, 5}, rng);       // odd tile split
    check({4, 2, 16, 1, 1, KvFormat::bf16, 4}, rng);        // first token: one key, more splits than tiles
    check({12, 2, 128, 257, 3, KvFormat::bf16, 2}, rng);    // a few rows (speculative/batched decode)
    check({8, 2, 64, 333, 1, KvFormat::f32, 4}, rng);       // fp32 cache, odd tile split
    check({4, 1, 40, 1, 1, KvFormat::f32, 2}, rng);         // fp32, first token, head_dim 40
    if (HasFatalFailure()) return;
  }
}

// rows_alone: every row of a batch gets the bits it gets as the only row,
// whether it shares a row block (unsplit) or gets its own key-range split.
void check_rows_alone(int heads, int kv_heads, int head_dim, int context, int m, int threads, std::mt19937& rng) {
  const int kv_width = kv_heads * head_dim, q_width = heads * head_dim;
  std::normal_distribution<float> dist(0.0f, 1.5f);
  KvCache cache(kv_heads, head_dim, context, KvFormat::bf16);
  std::vector<float> k(size_t(context) * kv_width), v(k.size());
  for (auto& x : k) x = dist(rng);
  for (auto& x : v) x = dist(rng);
  std::vector<int> all(context);
  for (int i = 0; i < context; ++i) all[i] = i;
  cache.store(k.data(), v.data(), context, kv_width, all.data());
  // A chunk's rows at the end of the context, then a few scattered decode rows.
  std::vector<int> positions;
  for (int r = 0; r < m; ++r) positions.push_back(context - m + r);
  for (int p : {0, 3, context / 2, 64, 65}) positions.push_back(std::min(p, context - 1));
  const int rows = static_cast<int>(positions.size());
  std::vector<float> q(size_t(rows) * q_width);
  for (auto& x : q) x = dist(rng);
  ThreadPool pool(threads);
  std::vector<float> batch(size_t(rows) * q_width), alone(q_width);
  attention(q.data(), rows, q_width, positions.data(), cache, heads, batch.data(), q_width, pool, true);
  for (int r = 0; r < rows; ++r) {
    attention(q.data() + size_t(r) * q_width, 1, q_width, &positions[r], cache, heads, alone.data(), q_width, pool);
    for (int i = 0; i < q_width; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(batch[size_t(r) * q_width + i]), std::bit_cast<uint32_t>(alone[i]))
          << isa_name(active_isa()) << " heads " << heads << "/" << kv_heads << " threads " << threads << " row " << r
          << " at " << positions[r] << " element " << i;
    }
  }
}

TEST(KernelsAttention, RowsAloneGiveEachRowItsOwnBits) {
  std::mt19937 rng(23);
  for (Isa isa : available_isas()) {
    IsaScope scope(isa);
    check_rows_alone(14, 2, 64, 300, 150, 2, rng);  // unsplit rows in blocks of 8
    check_rows_alone(8, 1, 64, 300, 37, 2, rng);    // one kv head: each row split alone
    check_rows_alone(6, 2, 40, 130, 21, 5, rng);    // head_dim 40, more threads than kv heads
    if (HasFatalFailure()) return;
  }
}

TEST(KernelsAttention, RejectsBadShapesAndPositions) {
  KvCache cache(2, 8, 4, KvFormat::bf16);
  std::vector<float> row(16, 1.0f), out(48);
  int pos = 4;
  EXPECT_THROW(cache.store(row.data(), row.data(), 1, 16, &pos), std::out_of_range);
  ThreadPool pool(1);
  pos = 0;
  cache.store(row.data(), row.data(), 1, 16, &pos);
  EXPECT_THROW(attention(row.data(), 1, 48, &pos, cache, 3, out.data(), 48, pool), std::invalid_argument);
  pos = 9;
  EXPECT_THROW(attention(row.data(), 1, 48, &pos, cache, 6, out.data(), 48, pool), std::out_of_range);
  EXPECT_EQ(cache.bytes(), size_t(2) * 2 * 4 * 8 * 2);
}

TEST(KernelsAttention, Fp32CacheHoldsExactValuesAtFourBytes) {
  KvCache cache(2, 5, 3, KvFormat::f32);
  EXPECT_EQ(cache.bytes(), size_t(2) * 2 * 3 * 5 * 4);
  EXPECT_EQ(kv_element_bytes(KvFormat::f32), 4);
  EXPECT_EQ(kv_element_bytes(KvFormat::bf16), 2);
  // 1 + 2^-20 is not representable in bf16 or f16: the fp32 cache keeps it.
  std::vector<float> k(10), v(10);
  for (int i = 0; i < 10; ++i) {
    k[i] = 1.0f + std::ldexp(1.0f, -20) * (i + 1);
    v[i] = -3.0f - std::ldexp(1.0f, -19) * i;
  }
  const int pos = 2;
  cache.store(k.data(), v.data(), 1, 10, &pos);
  for (int h = 0; h < 2; ++h) {
    for (int d = 0; d < 5; ++d) {
      EXPECT_EQ(static_cast<const float*>(cache.key(h, pos))[d], k[h * 5 + d]);
      EXPECT_EQ(static_cast<const float*>(cache.value(h, pos))[d], v[h * 5 + d]);
    }
  }
  // Untouched positions stay zero.
  EXPECT_EQ(static_cast<const float*>(cache.key(1, 1))[4], 0.0f);
}

}  // namespace
}  // namespace xft::engine
