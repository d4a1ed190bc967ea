#include "engine/model/blocks/moe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/kernels/ops.h"
#include "engine/model/weight_reading.h"

namespace xft::engine {

namespace {

using Clock = std::chrono::steady_clock;

void add_elapsed(double* total_ms, Clock::time_point since) {
  if (total_ms) *total_ms += std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// A replicated fp32 projection (router, shared-expert gate): the checkpoint's
// values exactly, whatever --dtype says, as transformers keeps the router in
// the model's dtype and routes in fp32.
Expected<Linear> read_replicated_f32(const WeightSource& weights, const std::string& name, int rows, int hidden) {
  auto values = weights.read_f32(name);
  if (!values) return values.error();
  if (values->size() != static_cast<size_t>(rows) * hidden) {
    return make_error("tensor " + name + ": " + std::to_string(values->size()) + " values, expected " +
                      std::to_string(rows) + " x " + std::to_string(hidden) + " (config.json's num_experts x hidden_size)");
  }
  return Linear(values->data(), rows, hidden, WeightFormat::f32);
}

}  // namespace

void route_tokens(const float* logits, int m, int experts, int top_k, bool normalize, int32_t* chosen,
                  float* weights) {
  thread_local std::vector<float> probability;  // kept: decode allocates nothing
  thread_local std::vector<char> taken;
  probability.resize(experts);
  taken.resize(experts);
  for (int r = 0; r < m; ++r) {
    const float* row = logits + static_cast<size_t>(r) * experts;
    float largest = row[0];
    for (int e = 1; e < experts; ++e) largest = std::max(largest, row[e]);
    float sum = 0.0f;
    for (int e = 0; e < experts; ++e) {
      probability[e] = std::exp(row[e] - largest);
      sum += probability[e];
    }
    for (int e = 0; e < experts; ++e) probability[e] /= sum;
    std::fill(taken.begin(), taken.end(), 0);
    int32_t* row_chosen = chosen + static_cast<size_t>(r) * top_k;
    float* row_weights = weights + static_cast<size_t>(r) * top_k;
    for (int slot = 0; slot < top_k; ++slot) {
      int best = -1;
      for (int e = 0; e < experts; ++e) {
        // Strictly greater: on a tie the lower index, found first, stays.
        if (!taken[e] && (best < 0 || probability[e] > probability[best])) best = e;
      }
      taken[best] = 1;
      row_chosen[slot] = best;
      row_weights[slot] = probability[best];
    }
    if (normalize) {
      float chosen_sum = 0.0f;
      for (int slot = 0; slot < top_k; ++slot) chosen_sum += row_weights[slot];
      for (int slot = 0; slot < top_k; ++slot) row_weights[slot] /= chosen_sum;
    }
  }
}

Expected<MixtureOfExperts> MixtureOfExperts::load(const WeightSource& weights, const std::string& prefix,
                                                  const RankPartition& partition, WeightFormat format) {
  const ModelConfig& c = weights.config();
  const MoeConfig& moe = c.moe;
  MixtureOfExperts block;
  block.top_k_ = moe.experts_per_token;
  block.normalize_ = moe.norm_topk_prob;
  block.hidden_ = c.hidden;
  auto router = read_replicated_f32(weights, prefix + "gate.weight", moe.experts, c.hidden);
  if (!router) return router.error();
  block.router_ = std::move(*router);
  block.experts_.reserve(moe.experts);
  size_t expert_bytes = 0;
  for (int e = 0; e < moe.experts; ++e) {
    const std::string expert = prefix + "experts." + std::to_string(e) + ".";
    auto mlp = DenseMlp::load(weights, expert + "gate_proj", expert + "up_proj", expert + "down_proj",
                              partition.expert, moe.expert_intermediate, format);
    if (!mlp) return mlp.error();
    // Each expert's weights go into the layer's arena as soon as they are
    // packed, so a load holds one expert twice at most.
    if (e == 0) {
      expert_bytes = mlp->data_bytes();
      block.expert_data_.resize(expert_bytes * moe.experts);
    }
    if (mlp->data_bytes() != expert_bytes) {
      return make_error("tensor " + expert + "*: packed to " + std::to_string(mlp->data_bytes()) +
                        " bytes where expert 0 took " + std::to_string(expert_bytes) +
                        " (every expert of a layer must have one shape and format)");
    }
    mlp->move_data_into(block.expert_data_.as<unsigned char>() + e * expert_bytes);
    block.experts_.push_back(std::move(*mlp));
  }
  if (moe.shared_expert_intermediate > 0) {
    const std::string shared = prefix + "shared_expert.";
    auto mlp = DenseMlp::load(weights, shared + "gate_proj", shared + "up_proj", shared + "down_proj",
                              partition.shared_expert, moe.shared_expert_intermediate, format);
    if (!mlp) return mlp.error();
    block.shared_ = std::move(*mlp);
    auto gate = read_replicated_f32(weights, prefix + "shared_expert_gate.weight", 1, c.hidden);
    if (!gate) return gate.error();
    block.shared_gate_ = std::move(*gate);
    block.has_shared_ = true;
  }
  return block;
}

void MixtureOfExperts::forward(const float* x, int m, float* out, FeedForwardPass& pass) const {
  const int experts = static_cast<int>(experts_.size());
  const int k = top_k_;
  const size_t h = static_cast<size_t>(hidden_);
  ThreadPool& pool = *pass.pool;

  // Routing: the batch-invariant kernel always, so that every rank and every
  // batch composition picks the same experts for a row.
  auto start = Clock::now();
  pass.router_logits.resize(static_cast<size_t>(m) * experts);
  router_.forward_gemv(x, m, pass.router_logits.data(), pool);
  pass.chosen_experts.resize(static_cast<size_t>(m) * k);
  pass.chosen_weights.resize(static_cast<size_t>(m) * k);
  route_tokens(pass.router_logits.data(), m, experts, k, normalize_, pass.chosen_experts.data(),
               pass.chosen_weights.data());
  // Group the (row, slot) choices by expert, rows ascending (a counting sort).
  pass.expert_starts.assign(experts + 1, 0);
  for (int i = 0; i < m * k; ++i) ++pass.expert_starts[pass.chosen_experts[i] + 1];
  for (int e = 0; e < experts; ++e) pass.expert_starts[e + 1] += pass.expert_starts[e];
  pass.expert_rows.resize(static_cast<size_t>(m) * k);
  std::vector<int32_t>& next = pass.expert_next;
  next.assign(pass.expert_starts.begin(), pass.expert_starts.end() - 1);
  pass.choice_position.resize(static_cast<size_t>(m) * k);
  for (int i = 0; i < m * k; ++i) {
    const int at = next[pass.chosen_experts[i]]++;
    pass.expert_rows[at] = i;
    pass.choice_position[i] = at;
  }
  add_elapsed(pass.router_ms, start);

  start = Clock::now();
  run_experts(x, m, pass);
  // Experts in ascending index: each row receives its experts' outputs in
  // that order (the order of their positions in expert_rows), then the
  // shared expert's, whatever else shares the pass.
  pool.parallel_rows(m, [&](int r0, int r1) {
    thread_local std::vector<int32_t> positions;
    positions.resize(k);
    for (int r = r0; r < r1; ++r) {
      float* target = out + r * h;
      std::fill(target, target + h, 0.0f);
      std::copy_n(pass.choice_position.data() + static_cast<size_t>(r) * k, k, positions.begin());
      std::sort(positions.begin(), positions.end());
      for (const int i : positions) {
        const float weight = pass.chosen_weights[pass.expert_rows[i]];
        const float* y = pass.rows_out.data() + i * h;
        for (size_t j = 0; j < h; ++j) target[j] += y[j] * weight;
      }
      if (has_shared_) {
        const float gate = 1.0f / (1.0f + std::exp(-pass.shared_gate[r]));
        const float* y = pass.shared_out.data() + r * h;
        for (size_t j = 0; j < h; ++j) target[j] += gate * y[j];
      }
    }
  });
  add_elapsed(pass.experts_ms, start);
}

void MixtureOfExperts::run_experts(const float* x, int m, FeedForwardPass& pass) const {
  const int experts = static_cast<int>(experts_.size());
  const int choices = m * top_k_;
  const size_t h = static_cast<size_t>(hidden_);
  const size_t width = static_cast<size_t>(experts_.front().rows());
  // Each expert's rows of x side by side, in expert_rows' order. One row (a
  // decode step) is every chosen expert's input as it is: the grouped call
  // then stages it once for all of their gate/up projections.
  const bool one_row = m == 1;
  ThreadPool& pool = *pass.pool;
  if (!one_row) {
    pass.rows_in.resize(choices * h);
    pool.parallel_rows(choices, [&](int i0, int i1) {
      for (int i = i0; i < i1; ++i) {
        const int row = pass.expert_rows[i] / top_k_;
        std::memcpy(pass.rows_in.data() + i * h, x + row * h, h * sizeof(float));
      }
    });
  }
  pass.gate_up.resize(choices * 2 * width);
  pass.act.resize(choices * width);
  pass.rows_out.resize(choices * h);
  if (has_shared_) {
    pass.shared_gate_up.resize(static_cast<size_t>(m) * 2 * shared_.rows());
    pass.shared_act.resize(static_cast<size_t>(m) * shared_.rows());
    pass.shared_out.resize(static_cast<size_t>(m) * h);
    pass.shared_gate.resize(static_cast<size_t>(m));
  }

  // gate/up of every chosen expert (and the shared expert) in one parallel
  // region, then down likewise: at decode each expert alone is a few
  // microseconds of work per thread, less than a fork/join of the pool costs
  // on a busy machine. The kernels are the batch-invariant ones, so a row's
  // result never depends on the other rows of its expert.
  std::vector<GroupedProjection>& calls = pass.projections;
  calls.clear();
  for (int e = 0; e < experts; ++e) {
    const int begin = pass.expert_starts[e], n = pass.expert_starts[e + 1] - begin;
    if (n > 0) {
      calls.push_back({&experts_[e].gate_up(), one_row ? x : pass.rows_in.data() + begin * h, n,
                       pass.gate_up.data() + begin * 2 * width});
    }
  }
  if (has_shared_) {
    calls.push_back({&shared_.gate_up(), x, m, pass.shared_gate_up.data()});
    calls.push_back({&shared_gate_, x, m, pass.shared_gate.data()});
  }
  forward_gemv_grouped(calls, pool);

  pool.parallel_rows(choices, [&](int i0, int i1) {
    silu_mul_fused(pass.gate_up.data() + i0 * 2 * width, i1 - i0, static_cast<int>(width), pass.act.data() + i0 * width);
  });
  if (has_shared_) {
    const size_t shared_width = static_cast<size_t>(shared_.rows());
    pool.parallel_rows(m, [&](int r0, int r1) {
      silu_mul_fused(pass.shared_gate_up.data() + r0 * 2 * shared_width, r1 - r0, shared_.rows(),
                     pass.shared_act.data() + r0 * shared_width);
    });
  }

  calls.clear();
  for (int e = 0; e < experts; ++e) {
    const int begin = pass.expert_starts[e], n = pass.expert_starts[e + 1] - begin;
    if (n > 0) {
      calls.push_back({&experts_[e].down(), pass.act.data() + begin * width, n, pass.rows_out.data() + begin * h});
    }
  }
  if (has_shared_) calls.push_back({&shared_.down(), pass.shared_act.data(), m, pass.shared_out.data()});
  forward_gemv_grouped(calls, pool);
}

uint64_t MixtureOfExperts::weight_bytes() const {
  uint64_t total = router_.weight_bytes();
  for (const DenseMlp& expert : experts_) total += expert.weight_bytes();
  if (has_shared_) total += shared_.weight_bytes() + shared_gate_.weight_bytes();
  return total;
}

uint64_t MixtureOfExperts::token_bytes() const {
  // All experts have one shape: a token reads top_k of them.
  uint64_t total = router_.weight_bytes() + static_cast<uint64_t>(top_k_) * experts_.front().weight_bytes();
  if (has_shared_) total += shared_.weight_bytes() + shared_gate_.weight_bytes();
  return total;
}

}  // namespace xft::engine
