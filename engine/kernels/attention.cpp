#include "engine/kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/attention_internal.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/ops.h"

namespace xft::engine {

int kv_element_bytes(KvFormat format) { return format == KvFormat::f32 ? 4 : 2; }

KvCache::KvCache(int kv_heads, int head_dim, int capacity, KvFormat format)
    : kv_heads_(kv_heads), head_dim_(head_dim), capacity_(capacity), format_(format) {
  if (kv_heads <= 0 || head_dim <= 0 || capacity <= 0) {
    throw std::invalid_argument("KvCache: kv_heads, head_dim and capacity must be positive");
  }
  const size_t count = static_cast<size_t>(kv_heads) * capacity * head_dim * kv_element_bytes(format);
  keys_.assign(count, 0);
  values_.assign(count, 0);
}

void KvCache::store(const float* k, const float* v, int m, int row_stride, const int* positions) {
  for (int r = 0; r < m; ++r) {
    const int pos = positions[r];
    if (pos < 0 || pos >= capacity_) throw std::out_of_range("KvCache::store: position out of range");
    for (int h = 0; h < kv_heads_; ++h) {
      const float* ks = k + static_cast<size_t>(r) * row_stride + static_cast<size_t>(h) * head_dim_;
      const float* vs = v + static_cast<size_t>(r) * row_stride + static_cast<size_t>(h) * head_dim_;
      unsigned char* kd = keys_.data() + offset(h, pos);
      unsigned char* vd = values_.data() + offset(h, pos);
      switch (format_) {
        case KvFormat::bf16:
          f32_to_bf16(ks, reinterpret_cast<uint16_t*>(kd), head_dim_);
          f32_to_bf16(vs, reinterpret_cast<uint16_t*>(vd), head_dim_);
          break;
        case KvFormat::f16:
          f32_to_f16(ks, reinterpret_cast<uint16_t*>(kd), head_dim_);
          f32_to_f16(vs, reinterpret_cast<uint16_t*>(vd), head_dim_);
          break;
        case KvFormat::f32:
          std::memcpy(kd, ks, sizeof(float) * head_dim_);
          std::memcpy(vd, vs, sizeof(float) * head_dim_);
          break;
      }
    }
  }
}

namespace {

// Query rows per task in prefill: K/V tiles are widened once per task and
// reused by every (row, query head) of the block.
constexpr int kRowBlock = 8;

// One unit of work: query rows [row_begin, row_end), kv head `kv_head` (all
// its query heads), key tiles [tile_begin, tile_end) of the block's causal range.
struct Task {
  int row_begin;
  int row_end;
  int kv_head;
  int split;
  int tile_begin;
  int tile_end;
};

struct Partial {
  float max;  // running max of the scores seen (-inf: none)
  float sum;  // Σ exp(score - max)
};

struct Scratch {
  AlignedBuffer q;       // [queries][head_dim] scaled
  AlignedBuffer scores;  // [queries][tile]
  std::vector<float> rescale;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

AttentionKernels pick_kernels(KvFormat format) {
  if (use_avx512()) return attention_kernels_avx512(format);
  if (use_avx2()) return attention_kernels_avx2(format);
  return attention_kernels_scalar(format);
}

int tiles_for(int position) { return (position + 1 + kAttentionTile - 1) / kAttentionTile; }

// Runs one task over its queries (row-major: row, then head of the group).
// Writes per query the (max, sum) and the unnormalized accumulator.
void run_task(const Task& task, const float* q, int q_stride, const int* positions,
              const KvCache& cache, int heads, const AttentionKernels& kernels, Partial* partials,
              float* accs) {
  const int head_dim = cache.head_dim();
  const int group = heads / cache.kv_heads();
  const int rows = task.row_end - task.row_begin;
  const int queries = rows * group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  Scratch& s = scratch();
  s.q.resize(sizeof(float) * queries * head_dim);
  s.scores.resize(sizeof(float) * queries * kAttentionTile);
  s.rescale.assign(queries, 1.0f);
  float* qs = s.q.as<float>();
  float* scores = s.scores.as<float>();
  for (int r = 0; r < rows; ++r) {
    const float* q_row = q + static_cast<size_t>(task.row_begin + r) * q_stride +
                         static_cast<size_t>(task.kv_head) * group * head_dim;
    for (int i = 0; i < group * head_dim; ++i) qs[static_cast<size_t>(r) * group * head_dim + i] = q_row[i] * scale;
  }
  for (int i = 0; i < queries; ++i) partials[i] = Partial{-std::numeric_limits<float>::infinity(), 0.0f};
  std::fill(accs, accs + static_cast<size_t>(queries) * head_dim, 0.0f);

  for (int tile = task.tile_begin; tile < task.tile_end; ++tile) {
    const int j0 = tile * kAttentionTile;
    int last = 0;  // keys of this tile any row of the block may see
    for (int r = task.row_begin; r < task.row_end; ++r) last = std::max(last, positions[r] + 1);
    const int n = std::min(kAttentionTile, last - j0);
    if (n <= 0) break;
    kernels.score(qs, queries, cache.key(task.kv_head, j0), n, head_dim, scores);
    for (int i = 0; i < queries; ++i) {
      const int visible = std::min(n, positions[task.row_begin + i / group] + 1 - j0);  // causal
      float* si = scores + static_cast<size_t>(i) * kAttentionTile;
      Partial& p = partials[i];
      const float tile_max = max_value(si, std::max(visible, 0));
      const float new_max = std::max(p.max, tile_max);
      if (visible <= 0 || new_max == -std::numeric_limits<float>::infinity()) {
        std::fill(si, si + n, 0.0f);
        s.rescale[i] = 1.0f;
        continue;
      }
      const float tile_sum = exp_shift_sum(si, visible, new_max);
      std::fill(si + visible, si + n, 0.0f);
      s.rescale[i] = std::exp(p.max - new_max);  // 0 while nothing was seen (max = -inf)
      p.sum = p.sum * s.rescale[i] + tile_sum;
      p.max = new_max;
    }
    kernels.accumulate(scores, queries, cache.value(task.kv_head, j0), n, head_dim, s.rescale.data(), accs);
  }
}

}  // namespace

void attention(const float* q, int m, int q_stride, const int* positions, const KvCache& cache,
               int heads, float* out, int out_stride, ThreadPool& pool, bool rows_alone) {
  if (m <= 0) return;
  const int kv_heads = cache.kv_heads();
  const int head_dim = cache.head_dim();
  if (heads <= 0 || heads % kv_heads != 0) {
    throw std::invalid_argument("attention: heads must be a positive multiple of kv_heads");
  }
  const int group = heads / kv_heads;
  int max_tiles = 1;
  for (int r = 0; r < m; ++r) {
    if (positions[r] < 0 || positions[r] >= cache.capacity()) {
      throw std::out_of_range("attention: position outside the KV cache");
    }
    max_tiles = std::max(max_tiles, tiles_for(positions[r]));
  }
  // Decode: too few (row block, kv head) pairs to feed every thread, so split
  // the key range; each split keeps its own softmax state, merged below.
  const int row_blocks = (m + kRowBlock - 1) / kRowBlock;
  const int base_tasks = row_blocks * kv_heads;
  const int splits = std::clamp((pool.size() + base_tasks - 1) / base_tasks, 1, max_tiles);
  // A row's own split count: the batch's, or with rows_alone the one it gets alone.
  std::vector<int> row_splits(static_cast<size_t>(m), splits);
  if (rows_alone) {
    for (int r = 0; r < m; ++r)
      row_splits[r] = std::clamp((pool.size() + kv_heads - 1) / kv_heads, 1, tiles_for(positions[r]));
  }

  std::vector<Task> tasks;
  tasks.reserve(static_cast<size_t>(base_tasks) * splits);
  auto add_block = [&](int r0, int r1, int block_splits) {
    int tiles = 0;
    for (int r = r0; r < r1; ++r) tiles = std::max(tiles, tiles_for(positions[r]));
    for (int h = 0; h < kv_heads; ++h) {
      for (int s = 0; s < block_splits; ++s) {
        const int t0 = static_cast<int>(static_cast<int64_t>(tiles) * s / block_splits);
        const int t1 = static_cast<int>(static_cast<int64_t>(tiles) * (s + 1) / block_splits);
        tasks.push_back(Task{r0, r1, h, s, t0, t1});
      }
    }
  };
  if (!rows_alone) {
    for (int b = 0; b < row_blocks; ++b) add_block(b * kRowBlock, std::min(m, (b + 1) * kRowBlock), splits);
  } else {
    // Rows split alone run as one-row blocks with their own tile ranges;
    // consecutive unsplit rows share blocks of up to kRowBlock.
    for (int r = 0; r < m;) {
      if (row_splits[r] > 1) {
        add_block(r, r + 1, row_splits[r]);
        ++r;
        continue;
      }
      int end = r + 1;
      while (end < m && end - r < kRowBlock && row_splits[end] == 1) ++end;
      add_block(r, end, 1);
      r = end;
    }
  }
  // Longest first, then a shared counter: causal prefill blocks differ in length.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
    return (a.tile_end - a.tile_begin) * (a.row_end - a.row_begin) >
           (b.tile_end - b.tile_begin) * (b.row_end - b.row_begin);
  });

  // Partials: [row][head][split] of (max, sum) and acc[head_dim]; a row uses
  // its first row_splits[row] of the split slots.
  const int slot_splits = *std::max_element(row_splits.begin(), row_splits.end());
  const size_t slots = static_cast<size_t>(m) * heads * slot_splits;
  std::vector<Partial> partials(slots);
  AlignedBuffer accs(sizeof(float) * slots * head_dim);
  auto slot = [&](int row, int head, int split) {
    return (static_cast<size_t>(row) * heads + head) * slot_splits + split;
  };
  const AttentionKernels kernels = pick_kernels(cache.format());
  std::atomic<int> next{0};
  pool.run([&](int, int) {
    std::vector<Partial> local(static_cast<size_t>(kRowBlock) * group);
    AlignedBuffer local_acc(sizeof(float) * kRowBlock * group * head_dim);
    for (int i = next.fetch_add(1); i < static_cast<int>(tasks.size()); i = next.fetch_add(1)) {
      const Task& task = tasks[i];
      float* acc = local_acc.as<float>();
      run_task(task, q, q_stride, positions, cache, heads, kernels, local.data(), acc);
      for (int r = task.row_begin; r < task.row_end; ++r) {
        for (int g = 0; g < group; ++g) {
          const int query = (r - task.row_begin) * group + g;
          const size_t at = slot(r, task.kv_head * group + g, task.split);
          partials[at] = local[query];
          std::copy(acc + static_cast<size_t>(query) * head_dim, acc + static_cast<size_t>(query + 1) * head_dim,
                    accs.as<float>() + at * head_dim);
        }
      }
    }
  });
  // Merge splits: out = Σ_s e^(max_s - M) acc_s / Σ_s e^(max_s - M) sum_s.
  auto merge = [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      const int row = i / heads;
      const int head = i % heads;
      float global_max = -std::numeric_limits<float>::infinity();
      for (int s = 0; s < row_splits[row]; ++s) global_max = std::max(global_max, partials[slot(row, head, s)].max);
      float* dst = out + static_cast<size_t>(row) * out_stride + static_cast<size_t>(head) * head_dim;
      std::fill(dst, dst + head_dim, 0.0f);
      float total = 0.0f;
      for (int s = 0; s < row_splits[row]; ++s) {
        const Partial& p = partials[slot(row, head, s)];
        if (p.sum == 0.0f) continue;
        const float w = std::exp(p.max - global_max);
        total += w * p.sum;
        const float* acc = accs.as<float>() + slot(row, head, s) * head_dim;
        for (int d = 0; d < head_dim; ++d) dst[d] += w * acc[d];
      }
      const float inv = 1.0f / total;
      for (int d = 0; d < head_dim; ++d) dst[d] *= inv;
    }
  };
  // Decode merges a few thousand floats: less than waking the pool costs.
  const size_t merge_floats = static_cast<size_t>(m) * heads * slot_splits * head_dim;
  if (merge_floats <= 16384) {
    merge(0, m * heads);
  } else {
    pool.parallel_for(m * heads, merge);
  }
}

}  // namespace xft::engine
