// Mixture-of-experts Qwen (Qwen2-MoE, Qwen3-MoE): the router against a plain
// reference, the golden logits at 1, 2 and 4 tensor-parallel ranks, batch
// invariance of a row's logits, experts quantized to int4 at load against
// their dequantized weights in fp32, and the rank counts int4 experts refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/blocks/moe.h"
#include "engine/kernels/ops.h"
#include "engine/model/model.h"
#include "checkpoint_test_support.h"
#include "kernels_test_support.h"
#include "model_thread_communicator.h"

namespace xft::engine {
namespace {

// ---- the router ----

struct Routed {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

// softmax in double, a stable sort by probability (so equal ones keep
// ascending index), the first top_k, renormalized when asked.
Routed reference_route(const std::vector<float>& logits, int top_k, bool normalize) {
  const int n = static_cast<int>(logits.size());
  const double largest = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(n);
  double sum = 0;
  for (int e = 0; e < n; ++e) sum += p[e] = std::exp(double(logits[e]) - largest);
  for (double& v : p) v /= sum;
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  Routed r;
  double chosen_sum = 0;
  for (int j = 0; j < top_k; ++j) chosen_sum += p[order[j]];
  for (int j = 0; j < top_k; ++j) {
    r.experts.push_back(order[j]);
    r.weights.push_back(static_cast<float>(normalize ? p[order[j]] / chosen_sum : p[order[j]]));
  }
  return r;
}

Routed route(const std::vector<float>& logits, int top_k, bool normalize) {
  Routed r;
  r.experts.resize(top_k);
  r.weights.resize(top_k);
  route_tokens(logits.data(), 1, static_cast<int>(logits.size()), top_k, normalize, r.experts.data(),
               r.weights.data());
  return r;
}

TEST(MoeRouter, MatchesASoftmaxTopKReference) {
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const int experts = 4 + trial % 125;
    const int top_k = 1 + trial % std::min(experts, 8);
    const bool normalize = trial % 2 == 0;
    std::vector<float> logits(experts);
    for (float& v : logits) v = normal(random);
    const Routed want = reference_route(logits, top_k, normalize);
    const Routed got = route(logits, top_k, normalize);
    ASSERT_EQ(got.experts, want.experts) << "trial " << trial;
    for (int j = 0; j < top_k; ++j) EXPECT_NEAR(got.weights[j], want.weights[j], 1e-6) << "trial " << trial;
    if (normalize) {
      EXPECT_NEAR(std::accumulate(got.weights.begin(), got.weights.end(), 0.0), 1.0, 1e-6);
    }
  }
}

TEST(MoeRouter, TiesGoToTheLowerExpertIndex) {
  // Experts 1, 3 and 4 tie for first: the two lowest win, in index order.
  Routed r = route({0.5f, 2.0f, -1.0f, 2.0f, 2.0f, 0.5f}, 2, false);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(r.weights[0], r.weights[1]);
  // A tie for the last place: expert 0 over expert 5.
  r = route({0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 0.5f}, 3, false);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3, 0}));
  // All equal: the first k.
  r = route(std::vector<float>(8, 0.25f), 4, true);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 1, 2, 3}));
  for (float w : r.weights) EXPECT_FLOAT_EQ(w, 0.25f);
}

TEST(MoeRouter, RenormalizesOnlyWhenAsked) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f};
  const Routed raw = route(logits, 2, false);
  const Routed normalized = route(logits, 2, true);
  EXPECT_EQ(raw.experts, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(normalized.experts, raw.experts);
  const double sum = std::exp(2.0) + 1 + std::exp(1.0) + std::exp(-1.0);
  EXPECT_NEAR(raw.weights[0], std::exp(2.0) / sum, 1e-7);
  EXPECT_NEAR(raw.weights[1], std::exp(1.0) / sum, 1e-7);
  EXPECT_NEAR(normalized.weights[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(normalized.weights[0] + normalized.weights[1], 1.0, 1e-7);
}

// ---- the models ----

struct Golden {
  ModelConfig config;
  uint64_t seed = 0;
  nlohmann::json json;
};

Golden load_golden(const std::string& name) {
  Golden g;
  g.json = testing::golden(name);
  auto spec = parse_generator_args(g.json["generator"].get<std::string>());
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  auto config = test_model_config(*spec);
  EXPECT_TRUE(config.ok()) << config.error().message;
  g.config = *config;
  g.seed = spec->seed;
  return g;
}

Expected<std::unique_ptr<Model>> load(const WeightSource& weights, WeightFormat format, int tp = 1, int rank = 0,
                                      Communicator* comm = nullptr, bool batch_invariant = false,
                                      bool f32_cache = false) {
  ModelOptions options;
  options.dtype = format;
  options.kv = format == WeightFormat::f32 || f32_cache ? KvFormat::f32 : KvFormat::bf16;
  options.threads = tp == 1 ? 2 : 1;
  options.tp_size = tp;
  options.tp_rank = rank;
  options.comm = comm;
  options.max_context = 128;
  options.batch_invariant = batch_invariant;
  return Model::load(weights, options);
}

std::vector<int32_t> ids_of(const nlohmann::json& array) {
  std::vector<int32_t> ids;
  for (const auto& v : array) ids.push_back(v.get<int32_t>());
  return ids;
}

class MoeGolden : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

// Every case's prompt in one pass on tp ranks (threads of this process):
// rank 0's gathered logits at every listed position within the golden's
// fp32 tolerance.
TEST_P(MoeGolden, Fp32LogitsMatchTheReferenceOnEveryRankCount) {
  const auto& [name, tp] = GetParam();
  const Golden g = load_golden(name);
  auto weights = make_fake_weights(g.config, g.seed);
  const auto& cases = g.json["cases"];
  std::vector<std::vector<float>> logits(cases.size());
  testing::run_ranks(tp, [&](int rank, Communicator& comm) {
    auto model = load(*weights, WeightFormat::f32, tp, rank, tp == 1 ? nullptr : &comm);
    ASSERT_TRUE(model.ok()) << model.error().message;
    for (size_t c = 0; c < cases.size(); ++c) {
      const std::vector<int32_t> prompt = ids_of(cases[c]["prompt"]);
      auto seq = (*model)->new_sequence();
      Chunk chunk{seq.get(), prompt};
      auto out = (*model)->forward({&chunk, 1}, true);
      ASSERT_TRUE(out.ok()) << out.error().message;
      std::vector<float> full = (*model)->gather_vocab(*out, static_cast<int>(prompt.size()));
      if (rank == 0) logits[c] = std::move(full);
    }
  });
  const double tolerance = g.json["tolerance"]["fp32_max_abs_rel_to_std"].get<double>();
  const int vocab = g.config.vocab;
  int checked = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    const double limit = tolerance * cases[c]["logit_std"].get<double>();
    ASSERT_EQ(logits[c].size(), cases[c]["positions"].size() * vocab);
    for (size_t p = 0; p < cases[c]["positions"].size(); ++p) {
      for (const auto& top : cases[c]["positions"][p]["top"]) {
        EXPECT_NEAR(logits[c][p * vocab + top[0].get<int>()], top[1].get<double>(), limit)
            << name << " at " << tp << " ranks, case " << c << " position " << p;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

INSTANTIATE_TEST_SUITE_P(Ranks, MoeGolden,
                         ::testing::Combine(::testing::Values("qwen3moe-tiny-s33", "qwen2moe-tiny-s37"),
                                            ::testing::Values(1, 2, 4)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + "_tp" + std::to_string(std::get<1>(info.param));
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

// The server's contract for MoE: with batch_invariant a row's logits are bit
// for bit the same alone as beside other sequences' prompts and decodes (its
// experts, their order and the expert kernels do not depend on what else
// chose them in the step).
TEST(MoeBatchInvariance, ARowsLogitsAloneEqualTheSameRowSharingAStep) {
  for (const char* name : {"qwen3moe-tiny-s33", "qwen2moe-tiny-s37"}) {
    const Golden g = load_golden(name);
    auto weights = make_fake_weights(g.config, g.seed);
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8}) {
      auto model = load(*weights, format, 1, 0, nullptr, true);
      ASSERT_TRUE(model.ok()) << model.error().message;
      Model& m = **model;
      const int vocab = g.config.vocab;
      const std::vector<int32_t> mine = ids_of(g.json["cases"][0]["prompt"]);
      const std::vector<int32_t> other = ids_of(g.json["cases"][2]["prompt"]);
      const std::vector<int32_t> third = ids_of(g.json["cases"][1]["prompt"]);

      // Alone: the prompt, then two decode steps.
      auto alone_seq = m.new_sequence();
      Chunk alone_prompt{alone_seq.get(), mine};
      auto out = m.forward({&alone_prompt, 1}, true);
      ASSERT_TRUE(out.ok()) << out.error().message;
      std::vector<float> alone(out->begin(), out->end());
      const int32_t next[] = {9707, 1879};
      for (int32_t token : next) {
        Chunk step{alone_seq.get(), {&token, 1}};
        out = m.forward({&step, 1});
        ASSERT_TRUE(out.ok());
        alone.insert(alone.end(), out->begin(), out->end());
      }

      // Shared: the same prompt between two others in one pass (all rows),
      // then decode steps beside another sequence's prompt and decode.
      auto seq = m.new_sequence();
      auto before = m.new_sequence();
      auto after = m.new_sequence();
      Chunk prefill[] = {{before.get(), other}, {seq.get(), mine}, {after.get(), third}};
      out = m.forward(prefill, true);
      ASSERT_TRUE(out.ok()) << out.error().message;
      std::vector<float> shared(out->begin() + other.size() * vocab,
                                out->begin() + (other.size() + mine.size()) * vocab);
      const int32_t before_token = 77;
      Chunk step1[] = {{before.get(), {&before_token, 1}}, {seq.get(), {&next[0], 1}}};
      out = m.forward(step1);
      ASSERT_TRUE(out.ok());
      shared.insert(shared.end(), out->begin() + vocab, out->begin() + 2 * vocab);
      auto late = m.new_sequence();
      Chunk step2[] = {{seq.get(), {&next[1], 1}}, {late.get(), other}, {after.get(), {&before_token, 1}}};
      out = m.forward(step2);
      ASSERT_TRUE(out.ok());
      shared.insert(shared.end(), out->begin(), out->begin() + vocab);

      ASSERT_EQ(shared.size(), alone.size());
      EXPECT_EQ(std::memcmp(shared.data(), alone.data(), alone.size() * sizeof(float)), 0)
          << name << " " << weight_format_name(format);
    }
  }
}

// The model as --dtype int4 sees it: every projection quantized here, as
// quant_int4.h describes (groups of 128 inputs, round to nearest even,
// s = f16((max - min) / 15) with zero inside [min, max], w = (q - z) s) and
// dequantized to f32; router, shared-expert gate, norms and the embedding as
// stored.
class Int4AtLoadView final : public WeightSource {
 public:
  explicit Int4AtLoadView(const WeightSource& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  bool has(const std::string& name) const override { return inner_.has(name); }
  Expected<TensorMeta> meta(const std::string& name) const override {
    auto m = inner_.meta(name);
    if (m && quantized(name)) m->dtype = DType::f32;
    return m;
  }
  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows, Slice cols) const override {
    if (!quantized(name)) return inner_.read_f32(name, rows, cols);
    auto shape = inner_.meta(name);
    auto full = inner_.read_f32(name);
    if (!shape || !full) return make_error("cannot read " + name);
    const int64_t n_rows = shape->shape[0], n_cols = shape->shape[1];
    dequantized_groups(*full, n_rows, n_cols);
    const int64_t r0 = rows.begin, r1 = rows.end < 0 ? n_rows : rows.end;
    const int64_t c0 = cols.begin, c1 = cols.end < 0 ? n_cols : cols.end;
    std::vector<float> out;
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = c0; c < c1; ++c) out.push_back((*full)[r * n_cols + c]);
    }
    return out;
  }
  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows, Slice cols) const override {
    return inner_.read_bf16(name, rows, cols);
  }
  uint64_t bytes_read() const override { return inner_.bytes_read(); }

 private:
  // Every projection and the head (a tied head is the embedding table).
  bool quantized(const std::string& name) const {
    const std::string proj = "_proj.weight";
    const std::string head = inner_.config().tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    return name == head ||
           (name.size() > proj.size() && name.compare(name.size() - proj.size(), proj.size(), proj) == 0);
  }
  static void dequantized_groups(std::vector<float>& w, int64_t rows, int64_t cols) {
    constexpr int64_t kGroup = 128;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c0 = 0; c0 < cols; c0 += kGroup) {
        float* g = w.data() + r * cols + c0;
        const int64_t n = std::min(kGroup, cols - c0);
        float lo = 0.0f, hi = 0.0f;
        for (int64_t i = 0; i < n; ++i) lo = std::min(lo, g[i]), hi = std::max(hi, g[i]);
        const float scale = f16_to_f32(f32_to_f16((hi - lo) / 15.0f));
        if (!(scale > 0.0f)) continue;
        const float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f);
        for (int64_t i = 0; i < n; ++i) {
          const float q = std::clamp(std::nearbyint(g[i] / scale) + zero, 0.0f, 15.0f);
          g[i] = (q - zero) * scale;
        }
      }
    }
  }
  const WeightSource& inner_;
};

// --dtype int4 experts (quantized at load) against the same quantized weights
// run in fp32, within the golden's fp32 tolerance: the scalar int4 kernel on
// every row (batch-invariant; oneDNN prefill would round the weights to bf16),
// which keeps x in float (the AVX2 kernel quantizes x to int8, the AVX-512
// BF16 one rounds it to bf16, and the quantized weights put some tokens' k-th
// and (k+1)-th experts within 2e-4 of each other, which that rounding may
// swap); an f32 KV cache on both sides.
void check_int4_at_load(const char* name) {
  IsaScope float_x(Isa::scalar);  // chosen when each Linear is packed
  const Golden g = load_golden(name);
  auto weights = make_fake_weights(g.config, g.seed);
  const Int4AtLoadView dequantized(*weights);
  auto int4 = load(*weights, WeightFormat::int4, 1, 0, nullptr, true, true);
  auto reference = load(dequantized, WeightFormat::f32);
  ASSERT_TRUE(int4.ok()) << int4.error().message;
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  EXPECT_EQ((*int4)->format_name(), "int4");
  const int vocab = g.config.vocab;
  for (const auto& c : g.json["cases"]) {
    const std::vector<int32_t> prompt = ids_of(c["prompt"]);
    std::vector<std::vector<float>> logits;
    for (Model* m : {int4->get(), reference->get()}) {
      auto seq = m->new_sequence();
      Chunk chunk{seq.get(), prompt};
      auto out = m->forward({&chunk, 1}, true);
      ASSERT_TRUE(out.ok()) << out.error().message;
      logits.emplace_back(out->begin(), out->end());
    }
    const double limit = g.json["tolerance"]["fp32_max_abs_rel_to_std"].get<double>() * c["logit_std"].get<double>();
    for (size_t p = 0; p < prompt.size(); ++p) {
      for (const auto& top : c["positions"][p]["top"]) {
        const size_t at = p * vocab + top[0].get<int>();
        EXPECT_NEAR(logits[0][at], logits[1][at], limit) << name << " position " << p;
      }
    }
  }
}

class MoeInt4 : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeInt4, ExpertsQuantizedAtLoadMatchTheirDequantizedWeightsInFp32) { check_int4_at_load(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Models, MoeInt4, ::testing::Values("qwen3moe-tiny-s33", "qwen2moe-tiny-s37"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

// int4 experts over 2 ranks: experts 384 wide are 3 groups of 128, split
// 256 + 128 (not 192 + 192, which would cut a group), so each rank quantizes
// exactly the groups one rank does and the logits differ from one rank's
// only by the order of float sums. (Heads of 128 keep o_proj's input groups
// whole too: a rank's o_proj columns are its heads.)
TEST(MoeInt4, TwoRanksQuantizeTheGroupsOneRankDoes) {
  IsaScope float_x(Isa::scalar);  // x stays float: no bf16 rounding of the ranks' slightly different sums
  TestModelSpec spec;
  spec.arch = Architecture::qwen3_moe;
  spec.seed = 5;
  spec.heads = 2;
  spec.kv_heads = 2;
  spec.head_dim = 128;
  spec.experts = 4;
  spec.topk = 2;
  spec.moe_intermediate = 384;
  spec.vocab = 4096;
  auto config = test_model_config(spec);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto weights = make_fake_weights(*config, spec.seed);
  const std::vector<int32_t> prompt = {151 % 4096, 872, 198, 3838, 374, 3797, 835, 30};
  auto logits_of = [&](Model& m) {
    auto seq = m.new_sequence();
    Chunk chunk{seq.get(), prompt};
    auto out = m.forward({&chunk, 1}, true);
    EXPECT_TRUE(out.ok()) << out.error().message;
    return m.gather_vocab(*out, static_cast<int>(prompt.size()));
  };
  std::vector<float> one;
  {
    auto model = load(*weights, WeightFormat::int4, 1, 0, nullptr, true, true);
    ASSERT_TRUE(model.ok()) << model.error().message;
    one = logits_of(**model);
  }
  std::vector<float> two;
  std::vector<Range> expert_rows(2);
  testing::run_ranks(2, [&](int rank, Communicator& comm) {
    auto model = load(*weights, WeightFormat::int4, 2, rank, &comm, true, true);
    ASSERT_TRUE(model.ok()) << model.error().message;
    expert_rows[rank] = (*model)->partition().expert;
    std::vector<float> logits = logits_of(**model);
    if (rank == 0) two = std::move(logits);
  });
  EXPECT_EQ(expert_rows[0], (Range{0, 256}));
  EXPECT_EQ(expert_rows[1], (Range{256, 384}));
  ASSERT_EQ(two.size(), one.size());
  double worst = 0.0, spread = 0.0;
  for (size_t i = 0; i < one.size(); ++i) {
    worst = std::max(worst, std::abs(double(two[i]) - one[i]));
    spread = std::max(spread, std::abs(double(one[i])));
  }
  EXPECT_LT(worst, 1e-4 * spread);
  EXPECT_GT(spread, 1.0);
}

TEST(MoeErrors, Int4ExpertsRefuseRankCountsThatCutAGroup) {
  const Golden g = load_golden("qwen3moe-tiny-s33");
  auto weights = make_fake_weights(g.config, g.seed);
  SingleRankCommunicator comm;  // never reached: the split is refused first
  ModelOptions options;
  options.dtype = WeightFormat::int4;
  options.tp_size = 2;
  options.comm = &comm;
  auto model = Model::load(*weights, options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().message,
            "tensor parallel size 2 cannot split the experts without cutting an int4 quantization group: rank 1 "
            "would get no group of an expert's 32 rows (moe_intermediate_size) in groups of 128 (rank counts that "
            "work: 1)");
  // bf16 experts split at any rank count the heads allow.
  auto partition = partition_model(g.config, 4, 3);
  ASSERT_TRUE(partition.ok()) << partition.error().message;
  EXPECT_EQ(partition->expert, (Range{24, 32}));
}

// Decode reads the router, top_k experts and the shared expert, not every expert.
TEST(MoeWeights, DecodeBytesCountOnlyTheChosenExperts) {
  const Golden g = load_golden("qwen2moe-tiny-s37");
  auto weights = make_fake_weights(g.config, g.seed);
  auto model = load(*weights, WeightFormat::bf16);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const uint64_t all = (*model)->weight_bytes();
  const uint64_t decode = (*model)->decode_weight_bytes();
  // Each expert holds gate/up/down of 32 x 64 bf16 (rows padded to 64 elements).
  const uint64_t expert = 2 * 32 * 64 * 2 + 64 * 64 * 2;
  const uint64_t embedding = uint64_t(g.config.vocab) * g.config.hidden * 2;
  EXPECT_EQ(all - embedding + g.config.hidden * 2 - decode, 2 * uint64_t(8 - 2) * expert);
  EXPECT_TRUE((*model)->has_experts());
}

}  // namespace
}  // namespace xft::engine
