#include "engine/model/model.h"

#include <numa.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <chrono>
#include <cstring>
#include <string>

#include "engine/checkpoint/safetensors.h"
#include "engine/model/architectures.h"
#include "engine/model/blocks/dense_mlp.h"
#include "engine/model/blocks/fused_experts.h"
#include "engine/model/blocks/moe.h"
#include "engine/model/memory_estimate.h"
#include "engine/model/weight_reading.h"

namespace xft::engine {

namespace {

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Weights are allocated by the loading thread: prefer the NUMA node of the
// rank's cpus so a rank's weights sit beside the cores that stream them.
void prefer_numa_node_of(const std::vector<int>& cpus) {
  if (cpus.empty() || numa_available() < 0) return;
  const int node = numa_node_of_cpu(cpus.front());
  if (node >= 0) numa_set_preferred(node);
}

// Which cache each run of local query heads reads. When the rank's heads
// start on a group boundary and cover whole groups, one cache holds all its
// KV heads and the attention kernel's own GQA mapping applies; otherwise
// (uneven splits) each KV head gets its own cache and its query heads.
std::vector<int> kv_of_local_heads(const AttentionSlice& s) {
  std::vector<int> kv;
  for (int h = s.q_heads.begin; h < s.q_heads.end; ++h) kv.push_back(s.local_kv_head(h));
  return kv;
}

}  // namespace

bool Sequence::has_linear_state() const {
  for (const auto& state : linear_) {
    if (!state.recurrent.empty()) return true;
  }
  return false;
}

void Sequence::truncate(int n) {
  if (n < 0 || n >= length()) return;
  if (has_linear_state()) {
    for (auto& state : linear_) state.reset();
    n = 0;
  }
  tokens_.resize(n);
}

size_t Sequence::linear_state_bytes() const {
  size_t total = 0;
  for (const auto& state : linear_) total += state.bytes();
  return total;
}

size_t Sequence::kv_bytes() const {
  size_t total = 0;
  for (const auto& layer : layers_) {
    for (const auto& g : layer) total += g.cache.bytes();
  }
  return total;
}

namespace {

// Cached elements back to float; store() turns them into the same bits
// (bf16 and f16 values are exact in float).
void widen(const void* in, KvFormat format, float* out, int n) {
  switch (format) {
    case KvFormat::bf16:
      bf16_to_f32(static_cast<const uint16_t*>(in), out, n);
      break;
    case KvFormat::f16:
      f16_to_f32(static_cast<const uint16_t*>(in), out, n);
      break;
    case KvFormat::f32:
      std::memcpy(out, in, sizeof(float) * n);
      break;
  }
}

void copy_positions(const KvCache& from, int begin, int n, KvCache& to, int at) {
  const int d = from.head_dim();
  const int stride = from.kv_heads() * d;
  std::vector<float> k(static_cast<size_t>(n) * stride), v(k.size());
  std::vector<int> positions(n);
  for (int r = 0; r < n; ++r) {
    positions[r] = at + r;
    for (int h = 0; h < from.kv_heads(); ++h) {
      const size_t o = static_cast<size_t>(r) * stride + static_cast<size_t>(h) * d;
      widen(from.key(h, begin + r), from.format(), k.data() + o, d);
      widen(from.value(h, begin + r), from.format(), v.data() + o, d);
    }
  }
  to.store(k.data(), v.data(), n, stride, positions.data());
}

bool same_layout(const KvCache& a, const KvCache& b) {
  return a.kv_heads() == b.kv_heads() && a.head_dim() == b.head_dim() && a.format() == b.format();
}

}  // namespace

Expected<void> Sequence::append_copy(const Sequence& from, int begin, int n) {
  if (has_linear_state()) {
    return make_error("KV copy: a linear-attention (Qwen3.5) sequence's state cannot be copied by positions");
  }
  return copy_attention(from, begin, n);
}

Expected<void> Sequence::resume(std::span<const Sequence* const> blocks, const LinearStates& state) {
  if (length() != 0) return make_error("resume: the sequence already holds " + std::to_string(length()) + " positions");
  bool same = state.size() == linear_.size();
  for (size_t l = 0; same && l < state.size(); ++l) {
    same = state[l].conv.size() == linear_[l].conv.size() && state[l].recurrent.size() == linear_[l].recurrent.size();
  }
  if (!same) return make_error("resume: the linear-attention state belongs to another model or rank");
  for (const Sequence* block : blocks) {
    if (auto copied = copy_attention(*block, 0, block->length()); !copied) return copied;
  }
  linear_ = state;
  return {};
}

// Keys and values of the attention layers and the tokens; a linear-attention state is the caller's.
Expected<void> Sequence::copy_attention(const Sequence& from, int begin, int n) {
  if (begin < 0 || n < 0 || begin + n > from.length()) {
    return make_error("KV copy: positions [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                      ") are not all cached in the source sequence of " + std::to_string(from.length()));
  }
  if (length() + n > capacity()) {
    return make_error("KV copy: " + std::to_string(length()) + " + " + std::to_string(n) +
                      " positions exceed the sequence's capacity of " + std::to_string(capacity()));
  }
  bool same = layers_.size() == from.layers_.size();
  for (size_t l = 0; same && l < layers_.size(); ++l) {
    same = layers_[l].size() == from.layers_[l].size();
    for (size_t g = 0; same && g < layers_[l].size(); ++g) same = same_layout(layers_[l][g].cache, from.layers_[l][g].cache);
  }
  if (!same) return make_error("KV copy: the sequences belong to different models or ranks");
  for (size_t l = 0; l < layers_.size(); ++l) {
    for (size_t g = 0; g < layers_[l].size(); ++g) {
      copy_positions(from.layers_[l][g].cache, begin, n, layers_[l][g].cache, length());
    }
  }
  tokens_.insert(tokens_.end(), from.tokens_.begin() + begin, from.tokens_.begin() + begin + n);
  return {};
}

namespace {

size_t dtype_bytes(DType type) { return dtype_size(type); }

// The bytes this rank's slice of the model holds as stored: what a load reads.
uint64_t expected_read_bytes(const WeightSource& weights, const ModelConfig& c, const RankPartition& part,
                             bool embed_once) {
  const std::string embed = architecture_layout(c.arch).embed;
  auto meta = weights.meta(embed);
  const double unit = meta ? dtype_bytes(meta->dtype) : 2;
  // 4-bit checkpoints store a projection's weights packed, half a byte each;
  // FP8 ones a byte each (block scales are a fraction of a percent on top).
  const double projection_unit =
      c.quant.method == QuantMethod::none ? unit : c.quant.method == QuantMethod::fp8 ? 1.0 : 0.5;
  TensorBytes stored;
  stored.projection = [projection_unit](uint64_t out, uint64_t in) { return projection_unit * out * in; };
  stored.float_projection = [unit](uint64_t out, uint64_t in) { return unit * out * in; };
  stored.head = stored.float_projection;
  stored.vector_unit = unit;
  stored.table_unit = unit;
  stored.embedding_held = !embed_once;
  return rank_weight_bytes(c, part, stored);
}

// Counts the bytes read through it (as stored) and tells the load's progress callback.
class CountingWeights : public WeightSource {
 public:
  CountingWeights(const WeightSource& inner, uint64_t total,
                  const std::function<void(uint64_t, uint64_t)>& progress)
      : inner_(inner), total_(total), progress_(progress) {}
  const ModelConfig& config() const override { return inner_.config(); }
  bool has(const std::string& name) const override { return inner_.has(name); }
  Expected<TensorMeta> meta(const std::string& name) const override { return inner_.meta(name); }
  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows, Slice cols) const override {
    return counted(name, inner_.read_f32(name, rows, cols));
  }
  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows, Slice cols) const override {
    return counted(name, inner_.read_bf16(name, rows, cols));
  }
  Expected<std::vector<int32_t>> read_i32(const std::string& name, Slice rows, Slice cols) const override {
    return counted(name, inner_.read_i32(name, rows, cols));
  }
  Expected<std::vector<uint8_t>> read_f8(const std::string& name, Slice rows, Slice cols) const override {
    return counted(name, inner_.read_f8(name, rows, cols));
  }
  uint64_t bytes_read() const override { return inner_.bytes_read(); }
  void finish() const {
    std::lock_guard lock(mutex_);
    progress_(total_, total_);
  }

 private:
  template <typename T>
  Expected<std::vector<T>> counted(const std::string& name, Expected<std::vector<T>> read) const {
    if (!read) return read;
    auto meta = inner_.meta(name);
    const uint64_t bytes = read->size() * (meta ? dtype_bytes(meta->dtype) : sizeof(T));
    const uint64_t done = done_.fetch_add(bytes) + bytes;
    std::lock_guard lock(mutex_);
    progress_(done, total_);
    return read;
  }

  const WeightSource& inner_;
  const uint64_t total_;
  const std::function<void(uint64_t, uint64_t)>& progress_;
  mutable std::atomic<uint64_t> done_{0};
  mutable std::mutex mutex_;
};

}  // namespace

Model::~Model() = default;

Expected<std::unique_ptr<Model>> Model::load(const WeightSource& weights,
                                             const ModelOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->config_ = weights.config();
  model->options_ = options;
  const ModelConfig& c = model->config_;
  if (c.hidden <= 0 || c.layers <= 0 || c.heads <= 0 || c.head_dim <= 0 || c.vocab <= 0 ||
      c.intermediate <= 0 || c.head_dim % 2 != 0) {
    return make_error("config.json: the model shape (hidden " + std::to_string(c.hidden) +
                      ", heads " + std::to_string(c.heads) + ", head_dim " +
                      std::to_string(c.head_dim) + ") cannot be run");
  }
  // --dtype int4 quantizes at load in groups of kInt4DefaultGroup inputs:
  // experts split in whole groups, so every rank quantizes as one rank would.
  const bool quantize_at_load = options.dtype == WeightFormat::int4 && c.quant.method == QuantMethod::none;
  auto partition = partition_model(c, options.tp_size, options.tp_rank, quantize_at_load ? kInt4DefaultGroup : 1);
  if (!partition) return partition.error();
  model->partition_ = *partition;
  if (options.comm) {
    if (options.comm->size() != options.tp_size || options.comm->rank() != options.tp_rank) {
      return make_error("communicator is rank " + std::to_string(options.comm->rank()) + " of " +
                        std::to_string(options.comm->size()) + " but the model was asked for rank " +
                        std::to_string(options.tp_rank) + " of " +
                        std::to_string(options.tp_size));
    }
    model->comm_ = options.comm;
  } else {
    if (options.tp_size != 1) {
      return make_error("tensor parallel size " + std::to_string(options.tp_size) +
                        " needs a communicator");
    }
    model->own_comm_ = std::make_unique<SingleRankCommunicator>();
    model->comm_ = model->own_comm_.get();
  }

  int threads = options.threads;
  if (threads <= 0) threads = options.cpus.empty() ? usable_cpus() : static_cast<int>(options.cpus.size());
  std::vector<int> pinned = options.cpus;
  if (!pinned.empty()) pinned.resize(std::min<size_t>(pinned.size(), threads));
  if (!pinned.empty() && static_cast<int>(pinned.size()) < threads) threads = pinned.size();
  model->pool_ = std::make_unique<ThreadPool>(threads, pinned);
  prefer_numa_node_of(pinned);

  int context = options.max_context > 0 ? options.max_context : 8192;
  if (c.max_positions > 0) context = std::min(context, c.max_positions);
  model->max_context_ = context;
  model->rope_ = RopeTable(c.rotary_dim > 0 ? c.rotary_dim : c.head_dim, context, c.rope_theta);

  if (!options.progress) {
    auto loaded = model->load_weights(weights);
    if (!loaded) return loaded.error();
    return model;
  }
  const bool embed_once = c.tie_embeddings && options.dtype == WeightFormat::int4;
  const CountingWeights counting(weights, expected_read_bytes(weights, c, model->partition_, embed_once),
                                 options.progress);
  auto loaded = model->load_weights(counting);
  if (!loaded) return loaded.error();
  counting.finish();
  model->options_.progress = nullptr;  // the caller's, for the load only
  return model;
}

Expected<void> Model::load_weights(const WeightSource& weights) {
  const ModelConfig& c = config_;
  const ArchitectureLayout& names = architecture_layout(c.arch);
  const AttentionSlice& attn = partition_.attention;
  shape_.head_dim = c.head_dim;
  shape_.local_heads = attn.q_heads.size();
  shape_.local_kv_heads = attn.kv_heads.size();
  shape_.qkv_width = (shape_.local_heads + 2 * shape_.local_kv_heads) * shape_.head_dim;
  if (c.attn_output_gate) shape_.qkv_width += shape_.local_heads * shape_.head_dim;
  const int local_heads = shape_.local_heads, local_kv_heads = shape_.local_kv_heads;

  // Head groups: see kv_of_local_heads.
  head_groups_.clear();
  const bool aligned = attn.q_heads.begin % attn.group == 0 &&
                       local_heads == local_kv_heads * attn.group;
  if (aligned) {
    head_groups_.push_back({0, local_heads, 0, local_kv_heads, {}});
  } else {
    const std::vector<int> kv = kv_of_local_heads(attn);
    for (int j = 0; j < local_heads;) {
      int end = j;
      while (end < local_heads && kv[end] == kv[j]) ++end;
      head_groups_.push_back({j, end - j, kv[j], 1, {}});
      j = end;
    }
  }

  auto embed = read_matrix(weights, names.embed, slice_of(partition_.vocab), {});
  if (!embed) return embed.error();
  if (embed->cols != c.hidden) {
    return make_error("tensor " + std::string(names.embed) + ": " + std::to_string(embed->cols) +
                      " columns, config.json says hidden_size " + std::to_string(c.hidden));
  }
  // A tied int4 model keeps one 4-bit copy of the table, the head's, and
  // dequantizes the rows it embeds: a bf16 table beside it would be 4x the
  // head's size and most of the model's resident memory at 1.5B.
  embed_from_head_ = c.tie_embeddings && options_.dtype == WeightFormat::int4;
  if (embed_from_head_) {
    lm_head_ = Linear({embed->block()}, c.hidden, options_.dtype);
  } else {
    embed_bf16_ = std::move(embed->bf16);
    embed_f32_ = std::move(embed->f32);
  }
  embed = HostMatrix{};

  // Layers load in parallel: generating fake weights and packing are
  // CPU-bound, and both weight sources are safe to read from many threads.
  // Each loader prefers the rank's NUMA node, as this thread does.
  layers_.resize(c.layers);
  std::vector<std::optional<Error>> errors(c.layers);
  const int loaders = std::max(1, std::min(pool_->size(), c.layers));
  auto load_every = [&](int first) {
    prefer_numa_node_of(pool_->cpus());
    for (int i = first; i < c.layers; i += loaders) {
      auto layer = load_layer(weights, i);
      if (layer) {
        layers_[i] = std::move(*layer);
      } else {
        errors[i] = layer.error();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < loaders; ++t) threads.emplace_back(load_every, t);
  load_every(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) return *e;
  }

  auto ln_f = read_vector(weights, names.final_norm);
  if (!ln_f) return ln_f.error();
  ln_f_ = std::move(*ln_f);
  if (c.zero_centred_norms) {
    for (float& w : ln_f_) w += 1.0f;
  }

  if (embed_from_head_) return {};
  const std::string head_name = c.tie_embeddings ? names.embed : names.lm_head;
  auto head = read_matrix(weights, head_name, slice_of(partition_.vocab), {});
  if (!head) return head.error();
  // --dtype fp8 applies to the projections, as FP8 checkpoints quantize them; the head stays bf16.
  lm_head_ = Linear({head->block()}, c.hidden, options_.dtype == WeightFormat::fp8 ? WeightFormat::bf16 : options_.dtype);
  return {};
}

Expected<Model::Layer> Model::load_layer(const WeightSource& weights, int index) {
  const ModelConfig& c = config_;
  const ArchitectureLayout& names = architecture_layout(c.arch);
  const std::string p = names.layer_prefix + std::to_string(index) + ".";
  // Projections of a 4-bit (FP8) checkpoint are int4 (fp8) whatever --dtype
  // says (it applies to the unquantized embedding and head).
  const WeightFormat format = c.quant.method == QuantMethod::none  ? options_.dtype
                              : c.quant.method == QuantMethod::fp8 ? WeightFormat::fp8
                                                                   : WeightFormat::int4;
  Layer layer;

  const TokenMixerKind mixer_kind = token_mixer_kind(c, index);
  if (mixer_kind == TokenMixerKind::gated_delta_net) {
    auto linear = GatedDeltaNet::load(weights, p, partition_, format);
    if (!linear) return linear.error();
    layer.linear_mixer = std::make_unique<GatedDeltaNet>(std::move(*linear));
  } else {
    auto mixer = mixer_kind == TokenMixerKind::attention_fused_qkv ? Attention::load_fused(weights, p, partition_, format)
                                                                   : Attention::load_split(weights, p, partition_, format);
    if (!mixer) return mixer.error();
    layer.mixer = std::move(*mixer);
  }
  if (auto r = read_norm(weights, p + names.input_norm, layer.ln_1); !r) return r.error();
  if (auto r = read_norm(weights, p + names.post_norm, layer.ln_2); !r) return r.error();
  if (c.zero_centred_norms) {  // applied as x * (1 + w)
    for (auto* norm : {&layer.ln_1, &layer.ln_2}) {
      for (float& w : *norm) w += 1.0f;
    }
  }

  switch (feed_forward_kind(c, index)) {
    case FeedForwardKind::dense_mlp: {
      auto mlp = DenseMlp::load(weights, p + names.mlp_gate, p + names.mlp_up, p + names.mlp_down, partition_.mlp,
                                c.intermediate, format);
      if (!mlp) return mlp.error();
      layer.feed_forward = std::make_unique<DenseMlp>(std::move(*mlp));
      break;
    }
    case FeedForwardKind::mixture_of_experts: {
      const FusedExpertView fused(weights);
      // Qwen3.5-MoE's FP8 checkpoints store the experts one tensor each, as Qwen3-MoE does.
      const bool stacked = names.fused_experts && weights.has(p + names.moe_prefix + "experts.gate_up_proj");
      const WeightSource& experts = stacked ? static_cast<const WeightSource&>(fused) : weights;
      auto moe = MixtureOfExperts::load(experts, p + names.moe_prefix, partition_, format);
      if (!moe) return moe.error();
      layer.feed_forward = std::make_unique<MixtureOfExperts>(std::move(*moe));
      break;
    }
  }
  return layer;
}

uint64_t Model::weight_bytes() const {
  uint64_t total = lm_head_.weight_bytes();
  for (const Layer& l : layers_) {
    total += (l.linear_mixer ? l.linear_mixer->weight_bytes() : l.mixer.weight_bytes()) + l.feed_forward->weight_bytes();
    total += (l.ln_1.size() + l.ln_2.size()) * sizeof(float);
  }
  total += embed_bf16_.size() * sizeof(uint16_t) + embed_f32_.size() * sizeof(float);
  total += ln_f_.size() * sizeof(float);
  return total;
}

uint64_t Model::decode_weight_bytes() const {
  uint64_t total = weight_bytes() - embed_bf16_.size() * sizeof(uint16_t) - embed_f32_.size() * sizeof(float);
  // A mixture of experts reads only the experts a token chose.
  for (const Layer& l : layers_) total -= l.feed_forward->weight_bytes() - l.feed_forward->token_bytes();
  return total + static_cast<uint64_t>(config_.hidden) * (embed_f32_.empty() ? 2 : 4);
}

bool Model::has_experts() const {
  for (int l = 0; l < config_.layers; ++l) {
    if (feed_forward_kind(config_, l) == FeedForwardKind::mixture_of_experts) return true;
  }
  return false;
}

std::string Model::format_name() const {
  if (config_.quant.method != QuantMethod::none) return quant_format_name(config_.quant);
  return weight_format_name(options_.dtype);
}

std::string Model::kernel_name() const {
  for (const Layer& layer : layers_) {
    if (!layer.linear_mixer) return layer.mixer.kernel_name();
  }
  return lm_head_.kernel_name();
}

std::unique_ptr<Sequence> Model::new_sequence(int capacity) const {
  auto seq = std::make_unique<Sequence>();
  seq->capacity_ = capacity > 0 ? std::min(capacity, max_context_) : max_context_;
  seq->layers_.resize(config_.layers);
  seq->linear_.resize(config_.layers);
  for (int l = 0; l < config_.layers; ++l) {
    if (layers_[l].linear_mixer) {
      seq->linear_[l] = layers_[l].linear_mixer->new_state();
      continue;
    }
    auto& layer = seq->layers_[l];
    layer = head_groups_;
    for (auto& g : layer) g.cache = KvCache(g.kv_count, shape_.head_dim, seq->capacity_, options_.kv);
  }
  return seq;
}

void Model::allreduce(float* data, size_t n) {
  if (comm_->size() <= 1) return;
  if (!allreduce_clock_) return comm_->allreduce_sum(data, n);
  auto start = std::chrono::steady_clock::now();
  comm_->allreduce_sum(data, n);
  *allreduce_clock_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void Model::enable_profile(bool on) {
  profiling_ = on;
  profile_.assign(on ? config_.layers + 1 : 0, LayerTime{});
}

void Model::embed(std::span<const int32_t> tokens, float* out) {
  const int h = config_.hidden;
  const Range vocab = partition_.vocab;
  for (size_t r = 0; r < tokens.size(); ++r) {
    float* row = out + r * h;
    const int id = tokens[r];
    if (!vocab.contains(id)) {
      std::fill(row, row + h, 0.0f);
      continue;
    }
    const size_t offset = static_cast<size_t>(id - vocab.begin) * h;
    if (embed_from_head_) {
      lm_head_.dequantize_row(id - vocab.begin, row);
    } else if (!embed_bf16_.empty()) {
      bf16_to_f32(embed_bf16_.data() + offset, row, h);
    } else {
      std::memcpy(row, embed_f32_.data() + offset, h * sizeof(float));
    }
  }
  // Each token's row lives on exactly one rank; the others contribute zeros.
  allreduce(out, tokens.size() * h);
}

void Model::project(const Linear& linear, const float* x, int m, float* y) const {
  if (rows_independent_) linear.forward_gemv(x, m, y, *pool_);
  else linear.forward(x, m, y, *pool_);
}

void Model::run_layer(const Layer& layer, int layer_index, std::span<const Chunk> chunks, int m) {
  const int h = config_.hidden;
  const float eps = static_cast<float>(config_.rms_eps);
  const size_t hm = static_cast<size_t>(m) * h;

  ThreadPool& pool = *pool_;
  const auto residual_then_norm = [&](const std::vector<float>& ln, bool add_residual) {
    pool.parallel_rows(m, [&](int r0, int r1) {
      const size_t at = static_cast<size_t>(r0) * h, n = static_cast<size_t>(r1 - r0) * h;
      if (add_residual) add_inplace(hidden_.data() + at, proj_.data() + at, n);
      rmsnorm_rows(hidden_.data() + at, ln.data(), normed_.data() + at, r1 - r0, h, eps);
    });
  };

  residual_then_norm(layer.ln_1, false);
  if (layer.linear_mixer) {
    LinearAttentionPass& linear = linear_pass_;
    linear.rows_independent = rows_independent_;
    for (size_t c = 0; c < chunks.size(); ++c) linear.chunk_states[c] = &chunks[c].sequence->linear_[layer_index];
    layer.linear_mixer->forward(normed_.data(), m, proj_.data(), linear);
  } else {
    AttentionPass& attention = attention_pass_;
    attention.rows_independent = rows_independent_;
    for (size_t c = 0; c < chunks.size(); ++c) attention.chunk_caches[c] = &chunks[c].sequence->layers_[layer_index];
    layer.mixer.forward(normed_.data(), m, proj_.data(), shape_, eps, attention);
  }
  allreduce(proj_.data(), hm);
  residual_then_norm(layer.ln_2, true);
  FeedForwardPass& feed_forward = feed_forward_pass_;
  feed_forward.rows_independent = rows_independent_;
  const bool timed = profiling_;
  feed_forward.router_ms = timed ? &profile_[layer_index].router_ms : nullptr;
  feed_forward.experts_ms = timed ? &profile_[layer_index].experts_ms : nullptr;
  layer.feed_forward->forward(normed_.data(), m, proj_.data(), feed_forward);
  allreduce(proj_.data(), hm);
  pool.parallel_rows(m, [&](int r0, int r1) {
    const size_t at = static_cast<size_t>(r0) * h;
    add_inplace(hidden_.data() + at, proj_.data() + at, static_cast<size_t>(r1 - r0) * h);
  });
}

Expected<std::span<float>> Model::forward(std::span<const Chunk> chunks, bool all_rows) {
  const int h = config_.hidden;
  tokens_.clear();
  positions_.clear();
  for (const Chunk& chunk : chunks) {
    if (!chunk.sequence || chunk.tokens.empty()) return make_error("empty chunk in a forward pass");
    const int start = chunk.sequence->length();
    const int n = static_cast<int>(chunk.tokens.size());
    if (start + n > chunk.sequence->capacity()) {
      return make_error("context full: " + std::to_string(start) + " + " + std::to_string(n) +
                        " tokens exceed the sequence's capacity of " +
                        std::to_string(chunk.sequence->capacity()) +
                        " positions (raise --max-context)");
    }
    for (int i = 0; i < n; ++i) {
      const int32_t id = chunk.tokens[i];
      if (id < 0 || id >= config_.vocab) {
        return make_error("token id " + std::to_string(id) + " is outside the vocabulary [0," +
                          std::to_string(config_.vocab) + ")");
      }
      tokens_.push_back(id);
      positions_.push_back(start + i);
    }
  }
  const int m = static_cast<int>(tokens_.size());
  if (m == 0) return make_error("nothing to run: no tokens");
  const size_t hm = static_cast<size_t>(m) * h;
  rows_independent_ = options_.batch_invariant;
  hidden_.resize(hm);
  normed_.resize(hm);
  proj_.resize(hm);
  attention_pass_.pool = pool_.get();
  attention_pass_.batch_invariant = options_.batch_invariant;
  attention_pass_.rope = &rope_;
  attention_pass_.positions = positions_.data();
  attention_pass_.chunk_rows.clear();
  for (const Chunk& chunk : chunks) attention_pass_.chunk_rows.push_back(static_cast<int>(chunk.tokens.size()));
  attention_pass_.chunk_caches.assign(chunks.size(), nullptr);
  linear_pass_.pool = pool_.get();
  linear_pass_.chunk_rows = attention_pass_.chunk_rows;
  linear_pass_.chunk_states.assign(chunks.size(), nullptr);
  feed_forward_pass_.pool = pool_.get();

  embed(tokens_, hidden_.data());
  for (int l = 0; l < config_.layers; ++l) {
    if (!profiling_) {
      run_layer(layers_[l], l, chunks, m);
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    allreduce_clock_ = &profile_[l].allreduce_ms;
    run_layer(layers_[l], l, chunks, m);
    allreduce_clock_ = nullptr;
    profile_[l].total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  const auto head_start = std::chrono::steady_clock::now();
  for (const Chunk& chunk : chunks) {
    auto& seq_tokens = chunk.sequence->tokens_;
    seq_tokens.insert(seq_tokens.end(), chunk.tokens.begin(), chunk.tokens.end());
  }

  // Only the rows whose logits are wanted go through the final norm and head.
  int rows = 0;
  if (all_rows) {
    rows = m;
    last_.assign(hidden_.begin(), hidden_.end());
  } else {
    rows = static_cast<int>(chunks.size());
    last_.resize(static_cast<size_t>(rows) * h);
    int end = 0;
    for (int c = 0; c < rows; ++c) {
      end += static_cast<int>(chunks[c].tokens.size());
      std::memcpy(last_.data() + static_cast<size_t>(c) * h,
                  hidden_.data() + static_cast<size_t>(end - 1) * h, h * sizeof(float));
    }
  }
  rmsnorm_rows(last_.data(), ln_f_.data(), rows, h, static_cast<float>(config_.rms_eps));
  const size_t vocab_local = partition_.vocab.size();
  logits_.resize(rows * vocab_local);
  project(lm_head_, last_.data(), rows, logits_.data());
  if (profiling_)
    profile_.back().total_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - head_start).count();
  return std::span<float>(logits_.data(), logits_.size());
}

std::vector<float> Model::gather_vocab(std::span<const float> local_rows, int rows) {
  const int ranks = comm_->size();
  const int vocab = config_.vocab;
  if (ranks == 1) return std::vector<float>(local_rows.begin(), local_rows.end());
  // Slices differ by at most one id: pad each to the largest.
  const int widest = split_range(vocab, ranks, 0).size();
  std::vector<float> padded(static_cast<size_t>(rows) * widest, 0.0f);
  const int mine = partition_.vocab.size();
  for (int r = 0; r < rows; ++r) {
    std::memcpy(padded.data() + static_cast<size_t>(r) * widest,
                local_rows.data() + static_cast<size_t>(r) * mine, mine * sizeof(float));
  }
  std::vector<float> gathered(padded.size() * ranks);
  comm_->allgather(padded.data(), padded.size() * sizeof(float), gathered.data());
  std::vector<float> full(static_cast<size_t>(rows) * vocab);
  for (int k = 0; k < ranks; ++k) {
    const Range slice = split_range(vocab, ranks, k);
    for (int r = 0; r < rows; ++r) {
      std::memcpy(full.data() + static_cast<size_t>(r) * vocab + slice.begin,
                  gathered.data() + (static_cast<size_t>(k) * rows + r) * widest,
                  slice.size() * sizeof(float));
    }
  }
  return full;
}

}  // namespace xft::engine
