#include "engine/model/blocks/gated_delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/delta_rule.h"
#include "engine/model/weight_reading.h"

namespace xft::engine {

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// x / sqrt(Σx² + 1e-6), as transformers' l2norm.
void l2_normalize(const float* x, int n, float scale, float* out) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += x[i] * x[i];
  const float inv = scale / std::sqrt(sum + 1e-6f);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv;
}

Expected<std::vector<float>> read_rows_f32(const WeightSource& weights, const std::string& name, Range rows) {
  return weights.read_f32(name, slice_of(rows));
}

}  // namespace

void LinearAttentionState::reset() {
  std::fill(conv.begin(), conv.end(), 0.0f);
  std::fill(recurrent.begin(), recurrent.end(), 0.0f);
}

LinearAttentionSlice linear_attention_slice(const ModelConfig& c, int tp_size, int tp_rank) {
  const LinearAttentionConfig& l = c.linear;
  const int ratio = l.value_heads / l.key_heads;
  LinearAttentionSlice s;
  s.value_heads = split_range(l.value_heads, tp_size, tp_rank);
  s.key_heads = s.value_heads.size() == 0
                    ? Range{0, 0}
                    : Range{s.value_heads.begin / ratio, (s.value_heads.end - 1) / ratio + 1};
  return s;
}

Expected<GatedDeltaNet> GatedDeltaNet::load(const WeightSource& weights, const std::string& layer_prefix,
                                            const RankPartition& partition, WeightFormat format) {
  const ModelConfig& c = weights.config();
  const LinearAttentionConfig& l = c.linear;
  const LinearAttentionSlice slice = linear_attention_slice(c, partition.tp_size, partition.tp_rank);
  const std::string p = layer_prefix + "linear_attn.";
  GatedDeltaNet block;
  block.key_heads_ = slice.key_heads.size();
  block.value_heads_ = slice.value_heads.size();
  block.key_begin_ = slice.key_heads.begin;
  block.value_begin_ = slice.value_heads.begin;
  block.ratio_ = l.value_heads / l.key_heads;
  block.dk_ = l.key_head_dim;
  block.dv_ = l.value_head_dim;
  block.kernel_ = l.conv_kernel;
  block.eps_ = static_cast<float>(c.rms_eps);
  block.channels_ = 2 * block.key_heads_ * block.dk_ + block.value_heads_ * block.dv_;
  block.projected_width_ = block.channels_ + block.value_heads_ * (block.dv_ + 2);

  const int key_dim = l.key_dim();
  const Range q_rows{slice.key_heads.begin * l.key_head_dim, slice.key_heads.end * l.key_head_dim};
  const Range k_rows{key_dim + q_rows.begin, key_dim + q_rows.end};
  const Range v_rows{2 * key_dim + slice.value_heads.begin * l.value_head_dim,
                     2 * key_dim + slice.value_heads.end * l.value_head_dim};
  const Range z_rows{slice.value_heads.begin * l.value_head_dim, slice.value_heads.end * l.value_head_dim};
  const Range hidden{0, c.hidden};
  std::vector<HostMatrix> parts;
  struct Part {
    std::string name;
    Range rows;
    int full_rows;
  };
  const Part projections[] = {{p + "in_proj_qkv", q_rows, l.conv_channels()},
                              {p + "in_proj_qkv", k_rows, l.conv_channels()},
                              {p + "in_proj_qkv", v_rows, l.conv_channels()},
                              {p + "in_proj_z", z_rows, l.value_dim()},
                              {p + "in_proj_b", slice.value_heads, l.value_heads},
                              {p + "in_proj_a", slice.value_heads, l.value_heads}};
  for (const Part& part : projections) {
    auto m = read_projection(weights, part.name, part.rows, hidden, part.full_rows, c.hidden);
    if (!m) return m.error();
    parts.push_back(std::move(*m));
  }
  std::vector<LinearBlock> blocks;
  for (const HostMatrix& m : parts) blocks.push_back(m.block());
  auto quantized = [](const HostMatrix& m) { return !m.fp8.q.empty() || !m.int4.q.empty(); };
  const bool ba_apart = quantized(parts.front()) && !quantized(parts.back());
  if (ba_apart) {
    // The bf16 rows pack as they are stored, a one-row-per-head matrix too
    // small for the quantized kernels' blocks anyway.
    block.in_proj_ = Linear(std::vector<LinearBlock>(blocks.begin(), blocks.end() - 2), c.hidden, format);
    block.in_proj_ba_ = Linear(std::vector<LinearBlock>(blocks.end() - 2, blocks.end()), c.hidden, WeightFormat::bf16);
  } else {
    block.in_proj_ = Linear(blocks, c.hidden, format);
  }
  parts.clear();

  for (Range rows : {q_rows, k_rows, v_rows}) {
    auto w = read_rows_f32(weights, p + "conv1d.weight", rows);
    if (!w) return w.error();
    if (w->size() != static_cast<size_t>(rows.size()) * l.conv_kernel) {
      return make_error("tensor " + p + "conv1d.weight: expected [" + std::to_string(l.conv_channels()) + ", 1, " +
                        std::to_string(l.conv_kernel) + "] (config.json's linear_conv_kernel_dim)");
    }
    block.conv_weight_.insert(block.conv_weight_.end(), w->begin(), w->end());
  }
  // Stored [channel][tap]; kept [tap][channel] for the convolution's contiguous rows.
  block.conv_taps_.resize(block.conv_weight_.size());
  for (int ch = 0; ch < block.channels_; ++ch) {
    for (int j = 0; j < block.kernel_; ++j) {
      block.conv_taps_[static_cast<size_t>(j) * block.channels_ + ch] = block.conv_weight_[static_cast<size_t>(ch) * block.kernel_ + j];
    }
  }
  block.conv_weight_.clear();
  auto a_log = read_vector(weights, p + "A_log", slice_of(slice.value_heads));
  if (!a_log) return a_log.error();
  block.a_log_ = std::move(*a_log);
  auto dt_bias = read_vector(weights, p + "dt_bias", slice_of(slice.value_heads));
  if (!dt_bias) return dt_bias.error();
  block.dt_bias_ = std::move(*dt_bias);
  if (auto r = read_norm(weights, p + "norm.weight", block.norm_); !r) return r.error();
  if (block.norm_.size() != static_cast<size_t>(l.value_head_dim)) {
    return make_error("tensor " + p + "norm.weight: " + std::to_string(block.norm_.size()) +
                      " values, config.json's linear_value_head_dim is " + std::to_string(l.value_head_dim));
  }
  auto out = read_projection(weights, p + "out_proj", hidden, z_rows, c.hidden, l.value_dim());
  if (!out) return out.error();
  block.out_proj_ = Linear({out->block()}, out->cols, format);
  return block;
}

LinearAttentionState GatedDeltaNet::new_state() const {
  LinearAttentionState state;
  state.conv.assign(static_cast<size_t>(kernel_ - 1) * channels_, 0.0f);
  state.recurrent.assign(static_cast<size_t>(value_heads_) * dk_ * dv_, 0.0f);
  return state;
}

size_t GatedDeltaNet::state_bytes() const {
  return (static_cast<size_t>(kernel_ - 1) * channels_ + static_cast<size_t>(value_heads_) * dk_ * dv_) * sizeof(float);
}

uint64_t GatedDeltaNet::weight_bytes() const {
  return in_proj_.weight_bytes() + in_proj_ba_.weight_bytes() + out_proj_.weight_bytes() +
         (conv_taps_.size() + a_log_.size() + dt_bias_.size() + norm_.size()) * sizeof(float);
}

// out[t][c] = silu(Σ_j w[c][j] · input(t − (K−1) + j)), inputs before the
// chunk coming from the state, which then keeps the last K−1 inputs.
void GatedDeltaNet::convolve(const float* in, int n, int stride, LinearAttentionState& state, float* out) const {
  const int history = kernel_ - 1;
  auto input = [&](int t) -> const float* {
    return t >= 0 ? in + static_cast<size_t>(t) * stride : state.conv.data() + static_cast<size_t>(history + t) * channels_;
  };
  // Tap by tap over all channels (contiguous rows), then silu.
  for (int t = 0; t < n; ++t) {
    float* row = out + static_cast<size_t>(t) * channels_;
    std::fill(row, row + channels_, 0.0f);
    for (int j = 0; j < kernel_; ++j) {
      const float* x = input(t - history + j);
      for (int ch = 0; ch < channels_; ++ch) row[ch] += conv_taps_[static_cast<size_t>(j) * channels_ + ch] * x[ch];
    }
    for (int ch = 0; ch < channels_; ++ch) row[ch] = silu(row[ch]);
  }
  std::vector<float> kept(static_cast<size_t>(history) * channels_);
  for (int i = 0; i < history; ++i) {
    std::memcpy(kept.data() + static_cast<size_t>(i) * channels_, input(n - history + i), channels_ * sizeof(float));
  }
  state.conv.swap(kept);
}

void GatedDeltaNet::run_rule(const float* mixed, const float* projected, int n, LinearAttentionState& state, float* core,
                             LinearAttentionPass& pass) const {
  const int key_width = key_heads_ * dk_;
  const int core_width = value_heads_ * dv_;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk_));
  const bool recurrent = n == 1 || pass.rows_independent;
  // Value heads are independent (each has its own state matrix): one task
  // each, with the task's own gathered inputs.
  pass.pool->parallel_for(value_heads_, [&](int begin, int end) {
    std::vector<float> q(static_cast<size_t>(n) * dk_), k(q.size()), v(static_cast<size_t>(n) * dv_), out(v.size());
    std::vector<float> g(n), beta(n), scratch;
    for (int h = begin; h < end; ++h) {
      // The key head of local value head h, from the global numbering (key heads may be replicated).
      const int key = (value_begin_ + h) / ratio_ - key_begin_;
      for (int t = 0; t < n; ++t) {
        const float* row = mixed + static_cast<size_t>(t) * channels_;
        const float* prow = projected + static_cast<size_t>(t) * projected_width_;
        l2_normalize(row + key * dk_, dk_, q_scale, q.data() + static_cast<size_t>(t) * dk_);
        l2_normalize(row + key_width + key * dk_, dk_, 1.0f, k.data() + static_cast<size_t>(t) * dk_);
        std::memcpy(v.data() + static_cast<size_t>(t) * dv_, row + 2 * key_width + h * dv_, dv_ * sizeof(float));
        const float b = prow[channels_ + core_width + h];
        const float a = prow[channels_ + core_width + value_heads_ + h];
        beta[t] = sigmoid(b);
        g[t] = -std::exp(a_log_[h]) * softplus(a + dt_bias_[h]);
      }
      const DeltaRuleHead head{q.data(), k.data(), v.data(), g.data(), beta.data(), out.data(), n, dk_, dv_};
      float* s = state.recurrent.data() + static_cast<size_t>(h) * dk_ * dv_;
      if (recurrent) {
        delta_rule_recurrent(head, s);
      } else {
        delta_rule_chunked(head, s, pass.chunk_size, scratch);
      }
      for (int t = 0; t < n; ++t) {
        std::memcpy(core + static_cast<size_t>(t) * core_width + h * dv_, out.data() + static_cast<size_t>(t) * dv_,
                    dv_ * sizeof(float));
      }
    }
  });
}

// core = rmsnorm(core per value head) · w · silu(z).
void GatedDeltaNet::gate_and_norm(const float* projected, int m, float* core) const {
  const int core_width = value_heads_ * dv_;
  for (int r = 0; r < m; ++r) {
    const float* z = projected + static_cast<size_t>(r) * projected_width_ + channels_;
    for (int h = 0; h < value_heads_; ++h) {
      float* o = core + static_cast<size_t>(r) * core_width + h * dv_;
      float sum = 0.0f;
      for (int i = 0; i < dv_; ++i) sum += o[i] * o[i];
      const float inv = 1.0f / std::sqrt(sum / dv_ + eps_);
      for (int i = 0; i < dv_; ++i) o[i] = o[i] * inv * norm_[i] * silu(z[h * dv_ + i]);
    }
  }
}

// pass.projected[m][q|k|v|z|b|a]: one product, or two laid side by side.
void GatedDeltaNet::project_inputs(const float* x, int m, LinearAttentionPass& pass) const {
  if (in_proj_ba_.out() == 0) {
    project(in_proj_, x, m, pass.projected.data(), *pass.pool, pass.rows_independent);
    return;
  }
  const int qkvz = in_proj_.out(), ba = in_proj_ba_.out();
  pass.projected_qkvz.resize(static_cast<size_t>(m) * qkvz);
  pass.projected_ba.resize(static_cast<size_t>(m) * ba);
  project(in_proj_, x, m, pass.projected_qkvz.data(), *pass.pool, pass.rows_independent);
  project(in_proj_ba_, x, m, pass.projected_ba.data(), *pass.pool, pass.rows_independent);
  for (int r = 0; r < m; ++r) {
    float* row = pass.projected.data() + static_cast<size_t>(r) * projected_width_;
    std::copy_n(pass.projected_qkvz.data() + static_cast<size_t>(r) * qkvz, qkvz, row);
    std::copy_n(pass.projected_ba.data() + static_cast<size_t>(r) * ba, ba, row + qkvz);
  }
}

void GatedDeltaNet::forward(const float* x, int m, float* out, LinearAttentionPass& pass) const {
  const int core_width = value_heads_ * dv_;
  pass.projected.resize(static_cast<size_t>(m) * projected_width_);
  pass.mixed.resize(static_cast<size_t>(m) * channels_);
  pass.core.resize(static_cast<size_t>(m) * core_width);
  project_inputs(x, m, pass);
  int row = 0;
  for (size_t c = 0; c < pass.chunk_rows.size(); ++c) {
    const int n = pass.chunk_rows[c];
    LinearAttentionState& state = *pass.chunk_states[c];
    const float* projected = pass.projected.data() + static_cast<size_t>(row) * projected_width_;
    float* mixed = pass.mixed.data() + static_cast<size_t>(row) * channels_;
    convolve(projected, n, projected_width_, state, mixed);
    run_rule(mixed, projected, n, state, pass.core.data() + static_cast<size_t>(row) * core_width, pass);
    row += n;
  }
  gate_and_norm(pass.projected.data(), m, pass.core.data());
  project(out_proj_, pass.core.data(), m, out, *pass.pool, pass.rows_independent);
}

}  // namespace xft::engine
