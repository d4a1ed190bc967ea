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

// out[t][c] = silu(Σ_j w[c][j] · input(t − (K−1) + j)) for the channels
// [begin, end), inputs before the chunk coming from the state, which then
// keeps those channels' last K−1 inputs.
void GatedDeltaNet::convolve(const float* in, int n, int stride, int begin, int end, LinearAttentionState& state,
                             float* out) const {
  const int history = kernel_ - 1;
  float* kept = state.conv.data();
  auto input = [&](int t) -> const float* {
    return t >= 0 ? in + static_cast<size_t>(t) * stride : kept + static_cast<size_t>(history + t) * channels_;
  };
  // Tap by tap over the channels (contiguous rows), then silu.
  for (int t = 0; t < n; ++t) {
    float* row = out + static_cast<size_t>(t) * channels_;
    for (int ch = begin; ch < end; ++ch) row[ch] = 0.0f;
    for (int j = 0; j < kernel_; ++j) {
      const float* x = input(t - history + j);
      const float* taps = conv_taps_.data() + static_cast<size_t>(j) * channels_;
      for (int ch = begin; ch < end; ++ch) row[ch] += taps[ch] * x[ch];
    }
    for (int ch = begin; ch < end; ++ch) row[ch] = silu(row[ch]);
  }
  // Kept row i is input n − K + 1 + i: a later kept row or the chunk, so
  // shifting in order overwrites only rows already read.
  for (int i = 0; i < history; ++i) {
    const float* from = input(n - history + i);
    float* to = kept + static_cast<size_t>(i) * channels_;
    if (from != to) std::memmove(to + begin, from + begin, static_cast<size_t>(end - begin) * sizeof(float));
  }
}

// The local value heads [first, last) that read local key head `key`.
Range GatedDeltaNet::readers_of(int key) const {
  const int global = key_begin_ + key;
  return {std::max(0, global * ratio_ - value_begin_), std::min(value_heads_, (global + 1) * ratio_ - value_begin_)};
}

// One key head over one chunk of n tokens: the convolution of its q and k
// channels and of its value heads' v channels, then each of those value
// heads' delta rule and gated norm into core[n][value heads × dv].
void GatedDeltaNet::mix_key_head(int key, const float* projected, int n, LinearAttentionState& state, float* mixed,
                                 float* core, bool recurrent, int chunk_size, HeadScratch& s) const {
  const int key_width = key_heads_ * dk_;
  const int core_width = value_heads_ * dv_;
  const Range readers = readers_of(key);
  convolve(projected, n, projected_width_, key * dk_, (key + 1) * dk_, state, mixed);
  convolve(projected, n, projected_width_, key_width + key * dk_, key_width + (key + 1) * dk_, state, mixed);
  convolve(projected, n, projected_width_, 2 * key_width + readers.begin * dv_, 2 * key_width + readers.end * dv_,
           state, mixed);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk_));
  s.q.resize(static_cast<size_t>(n) * dk_);
  s.k.resize(s.q.size());
  s.v.resize(static_cast<size_t>(n) * dv_);
  s.out.resize(s.v.size());
  s.g.resize(n);
  s.beta.resize(n);
  for (int t = 0; t < n; ++t) {
    const float* row = mixed + static_cast<size_t>(t) * channels_;
    l2_normalize(row + key * dk_, dk_, q_scale, s.q.data() + static_cast<size_t>(t) * dk_);
    l2_normalize(row + key_width + key * dk_, dk_, 1.0f, s.k.data() + static_cast<size_t>(t) * dk_);
  }
  for (int h = readers.begin; h < readers.end; ++h) {
    for (int t = 0; t < n; ++t) {
      const float* row = mixed + static_cast<size_t>(t) * channels_;
      const float* prow = projected + static_cast<size_t>(t) * projected_width_;
      std::memcpy(s.v.data() + static_cast<size_t>(t) * dv_, row + 2 * key_width + h * dv_, dv_ * sizeof(float));
      const float b = prow[channels_ + core_width + h];
      const float a = prow[channels_ + core_width + value_heads_ + h];
      s.beta[t] = sigmoid(b);
      s.g[t] = -std::exp(a_log_[h]) * softplus(a + dt_bias_[h]);
    }
    const DeltaRuleHead head{s.q.data(), s.k.data(), s.v.data(), s.g.data(), s.beta.data(), s.out.data(), n, dk_, dv_};
    float* state_h = state.recurrent.data() + static_cast<size_t>(h) * dk_ * dv_;
    if (recurrent) {
      delta_rule_recurrent(head, state_h);
    } else {
      delta_rule_chunked(head, state_h, chunk_size, s.chunk);
    }
    for (int t = 0; t < n; ++t) {
      gate_and_norm(s.out.data() + static_cast<size_t>(t) * dv_,
                    projected + static_cast<size_t>(t) * projected_width_ + channels_ + h * dv_,
                    core + static_cast<size_t>(t) * core_width + h * dv_);
    }
  }
}

// o = rmsnorm(o) · w · silu(z) over one value head's dv values.
void GatedDeltaNet::gate_and_norm(const float* o, const float* z, float* out) const {
  float sum = 0.0f;
  for (int i = 0; i < dv_; ++i) sum += o[i] * o[i];
  const float inv = 1.0f / std::sqrt(sum / dv_ + eps_);
  for (int i = 0; i < dv_; ++i) out[i] = o[i] * inv * norm_[i] * silu(z[i]);
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
  const size_t chunks = pass.chunk_rows.size();
  pass.chunk_begin.resize(chunks);
  for (size_t c = 0, row = 0; c < chunks; row += pass.chunk_rows[c++]) pass.chunk_begin[c] = static_cast<int>(row);
  // One region for the whole layer: a task per key head (its conv channels
  // and state matrices are its own), each going through the chunks in order.
  // A rank with fewer key heads than threads leaves threads idle here.
  pass.pool->parallel_for_balanced(key_heads_, [&](int begin, int end) {
    thread_local HeadScratch scratch;
    for (int key = begin; key < end; ++key) {
      for (size_t c = 0; c < chunks; ++c) {
        const int n = pass.chunk_rows[c], row = pass.chunk_begin[c];
        mix_key_head(key, pass.projected.data() + static_cast<size_t>(row) * projected_width_, n, *pass.chunk_states[c],
                     pass.mixed.data() + static_cast<size_t>(row) * channels_,
                     pass.core.data() + static_cast<size_t>(row) * core_width, n == 1 || pass.rows_independent,
                     pass.chunk_size, scratch);
      }
    }
  });
  project(out_proj_, pass.core.data(), m, out, *pass.pool, pass.rows_independent);
}

}  // namespace xft::engine
