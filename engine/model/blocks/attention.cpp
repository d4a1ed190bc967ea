#include "engine/model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "engine/model/weight_reading.h"

namespace xft::engine {

namespace {

struct AttentionRows {
  Range q, kv;
  int q_width = 0, kv_width = 0;
};

AttentionRows attention_rows(const ModelConfig& c, const RankPartition& partition) {
  const AttentionSlice& attn = partition.attention;
  const int d = c.head_dim;
  return {{attn.q_heads.begin * d, attn.q_heads.end * d}, {attn.kv_heads.begin * d, attn.kv_heads.end * d},
          c.heads * d, c.kv_heads * d};
}

// Packs the q/k/v blocks, once read, into one fused projection.
Expected<void> pack_qkv(std::vector<HostMatrix>& qkv, const std::string& layer_prefix, const ModelConfig& c,
                           WeightFormat format, Linear& qkv_out) {
  for (const HostMatrix& m : qkv) {
    if (m.cols != c.hidden) {
      return make_error("tensor " + layer_prefix + "attention q/k/v: " + std::to_string(m.cols) +
                        " columns, config.json says hidden_size " + std::to_string(c.hidden));
    }
  }
  if (format == WeightFormat::int4 && c.quant.method != QuantMethod::none) {
    if (auto same = same_input_groups({&qkv[0], &qkv[1], &qkv[2]}, layer_prefix + "attention q/k/v"); !same) {
      return same.error();
    }
  }
  qkv_out = Linear({qkv[0].block(), qkv[1].block(), qkv[2].block()}, c.hidden, format);
  qkv.clear();
  return {};
}

}  // namespace

Expected<Attention> Attention::load_fused(const WeightSource& weights, const std::string& p,
                                          const RankPartition& partition, WeightFormat format) {
  const ModelConfig& c = weights.config();
  const AttentionRows rows = attention_rows(c, partition);
  const Range hidden{0, c.hidden};
  Attention block;
  // c_attn stacks q, k, v rows of `hidden` each (Qwen1 is multi-head).
  const std::string name = p + "attn.c_attn";
  const int h = rows.q_width;
  std::vector<HostMatrix> qkv;
  for (Range r : {rows.q, Range{h + rows.kv.begin, h + rows.kv.end}, Range{2 * h + rows.kv.begin, 2 * h + rows.kv.end}}) {
    auto m = read_projection(weights, name, r, hidden, 3 * h, c.hidden);
    if (!m) return m.error();
    if (c.qkv_bias) {
      auto b = attach_bias(weights, p + "attn.c_attn.bias", slice_of(r), *m);
      if (!b) return b.error();
    }
    qkv.push_back(std::move(*m));
  }
  if (auto packed = pack_qkv(qkv, p, c, format, block.qkv_); !packed) return packed.error();
  auto o = read_projection(weights, p + "attn.c_proj", hidden, rows.q, c.hidden, rows.q_width);
  if (!o) return o.error();
  block.o_proj_ = Linear({o->block()}, o->cols, format);
  return block;
}

Expected<Attention> Attention::load_split(const WeightSource& weights, const std::string& p,
                                          const RankPartition& partition, WeightFormat format) {
  const ModelConfig& c = weights.config();
  const AttentionRows rows = attention_rows(c, partition);
  const Range hidden{0, c.hidden};
  Attention block;
  if (c.attn_output_gate) return load_gated(weights, p, partition, format);
  std::vector<HostMatrix> qkv;
  for (auto [proj, r, full] : {std::tuple{"q_proj", rows.q, rows.q_width}, {"k_proj", rows.kv, rows.kv_width},
                               {"v_proj", rows.kv, rows.kv_width}}) {
    const std::string base = p + "self_attn." + proj;
    auto m = read_projection(weights, base, r, hidden, full, c.hidden);
    if (!m) return m.error();
    if (c.qkv_bias) {
      auto b = attach_bias(weights, base + ".bias", slice_of(r), *m);
      if (!b) return b.error();
    }
    qkv.push_back(std::move(*m));
  }
  if (c.qk_norm) {
    if (auto r = read_norm(weights, p + "self_attn.q_norm.weight", block.q_norm_); !r) return r.error();
    if (auto r = read_norm(weights, p + "self_attn.k_norm.weight", block.k_norm_); !r) return r.error();
  }
  if (auto packed = pack_qkv(qkv, p, c, format, block.qkv_); !packed) return packed.error();
  auto o = read_projection(weights, p + "self_attn.o_proj", hidden, rows.q, c.hidden, rows.q_width);
  if (!o) return o.error();
  block.o_proj_ = Linear({o->block()}, o->cols, format);
  return block;
}

// Qwen3.5's gated attention: q_proj rows hold, per head, the query then the
// output gate; they are packed as [queries | k | v | gates] so that the
// attention reads q, k and v as it does for the other families.
Expected<Attention> Attention::load_gated(const WeightSource& weights, const std::string& p,
                                          const RankPartition& partition, WeightFormat format) {
  const ModelConfig& c = weights.config();
  const AttentionSlice& attn = partition.attention;
  const AttentionRows rows = attention_rows(c, partition);
  const Range hidden{0, c.hidden};
  const int d = c.head_dim;
  Attention block;
  block.output_gate_ = true;
  std::vector<HostMatrix> queries, gates, kv;
  for (int h = attn.q_heads.begin; h < attn.q_heads.end; ++h) {
    for (auto* into : {&queries, &gates}) {
      const int first = 2 * h * d + (into == &gates ? d : 0);
      auto m = read_projection(weights, p + "self_attn.q_proj", {first, first + d}, hidden, 2 * rows.q_width, c.hidden);
      if (!m) return m.error();
      into->push_back(std::move(*m));
    }
  }
  for (const char* proj : {"k_proj", "v_proj"}) {
    auto m = read_projection(weights, p + "self_attn." + proj, rows.kv, hidden, rows.kv_width, c.hidden);
    if (!m) return m.error();
    kv.push_back(std::move(*m));
  }
  if (c.qkv_bias) return make_error(p + "self_attn: attention_bias with an output gate is not supported");
  for (auto [name, norm] : {std::pair{"q_norm", &block.q_norm_}, {"k_norm", &block.k_norm_}}) {
    if (auto r = read_norm(weights, p + "self_attn." + name + ".weight", *norm); !r) return r.error();
    if (c.zero_centred_norms) {
      for (float& w : *norm) w += 1.0f;
    }
  }
  std::vector<LinearBlock> blocks;
  for (const auto* group : {&queries, &kv, &gates}) {
    for (const HostMatrix& m : *group) blocks.push_back(m.block());
  }
  block.qkv_ = Linear(blocks, c.hidden, format);
  auto o = read_projection(weights, p + "self_attn.o_proj", hidden, rows.q, c.hidden, rows.q_width);
  if (!o) return o.error();
  block.o_proj_ = Linear({o->block()}, o->cols, format);
  return block;
}

void Attention::forward(const float* x, int m, float* out, const AttentionShape& shape, float eps,
                        AttentionPass& pass) const {
  const int d = shape.head_dim;
  pass.qkv.resize(static_cast<size_t>(m) * shape.qkv_width);
  pass.attn.resize(static_cast<size_t>(m) * shape.local_heads * d);
  project(qkv_, x, m, pass.qkv.data(), *pass.pool, pass.rows_independent);
  pass.pool->parallel_rows(m, [&](int r0, int r1) {
    float* rows = pass.qkv.data() + static_cast<size_t>(r0) * shape.qkv_width;
    if (!q_norm_.empty()) {
      for (int r = 0; r < r1 - r0; ++r) {
        float* q = rows + static_cast<size_t>(r) * shape.qkv_width;
        rmsnorm_rows(q, q_norm_.data(), shape.local_heads, d, eps);
        rmsnorm_rows(q + shape.local_heads * d, k_norm_.data(), shape.local_kv_heads, d, eps);
      }
    }
    apply_rope(rows, r1 - r0, shape.qkv_width, shape.local_heads, d, pass.positions + r0, *pass.rope);
    apply_rope(rows + shape.local_heads * d, r1 - r0, shape.qkv_width, shape.local_kv_heads, d, pass.positions + r0,
               *pass.rope);
  });
  attend(shape, pass);
  if (output_gate_) {
    const int width = shape.local_heads * d;
    const int gate_at = (shape.local_heads + 2 * shape.local_kv_heads) * d;
    pass.pool->parallel_rows(m, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) {
        const float* gate = pass.qkv.data() + static_cast<size_t>(r) * shape.qkv_width + gate_at;
        float* a = pass.attn.data() + static_cast<size_t>(r) * width;
        for (int i = 0; i < width; ++i) a[i] /= 1.0f + std::exp(-gate[i]);
      }
    });
  }
  project(o_proj_, pass.attn.data(), m, out, *pass.pool, pass.rows_independent);
}

void Attention::attend(const AttentionShape& shape, AttentionPass& pass) const {
  const int d = shape.head_dim;
  const int qkv_width = shape.qkv_width;
  const int attn_width = shape.local_heads * d;
  int row = 0;
  for (size_t c = 0; c < pass.chunk_rows.size(); ++c) {
    const int n = pass.chunk_rows[c];
    const int* pos = pass.positions + row;
    float* q = pass.qkv.data() + static_cast<size_t>(row) * qkv_width;
    float* k = q + shape.local_heads * d;
    float* v = k + shape.local_kv_heads * d;
    float* out = pass.attn.data() + static_cast<size_t>(row) * attn_width;
    for (auto& g : *pass.chunk_caches[c]) {
      g.cache.store(k + g.kv_begin * d, v + g.kv_begin * d, n, qkv_width, pos);
      // rows_alone: a token's attention is the same however its prompt is
      // chunked and whatever shares the step.
      attention(q + g.q_begin * d, n, qkv_width, pos, g.cache, g.q_count, out + g.q_begin * d, attn_width, *pass.pool,
                pass.batch_invariant);
    }
    row += n;
  }
}

uint64_t Attention::weight_bytes() const {
  return qkv_.weight_bytes() + o_proj_.weight_bytes() + (q_norm_.size() + k_norm_.size()) * sizeof(float);
}

}  // namespace xft::engine
