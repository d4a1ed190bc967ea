// 4-bit checkpoints (GPTQ, AWQ; Qwen1, Qwen2/3 and their MoE names; desc_act) written
// by the test-model writer, loaded as downloaded and run with the int4
// kernels, against the same model with its weights dequantized here, from
// the published layouts and independently of the loader, and run in fp32:
// max |diff| <= 0.05 of the logit standard deviation on the reference's
// top-8 tokens, top-1 equal where it leads clearly; at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <unistd.h>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/model.h"
#include "model_thread_communicator.h"

namespace xft::engine {
namespace {

namespace fs = std::filesystem;

// The quantized checkpoint seen as the plain model: every projection's
// "<base>.weight" dequantized from qweight / qzeros / scales (/ g_idx).
class Dequantized final : public WeightSource {
 public:
  explicit Dequantized(const WeightSource& packed) : packed_(packed), config_(packed.config()) {
    config_.quant = QuantConfig{};
  }
  const ModelConfig& config() const override { return config_; }
  bool has(const std::string& name) const override { return packed_.has(name) || packed_.has(base(name) + ".qweight"); }
  Expected<TensorMeta> meta(const std::string& name) const override {
    if (packed_.has(name)) return packed_.meta(name);
    auto scales = packed_.meta(base(name) + ".scales");
    if (!scales) return scales.error();
    const int64_t out = scales->shape[1];
    auto qweight = packed_.meta(base(name) + ".qweight");
    const bool gptq = packed_.config().quant.method == QuantMethod::gptq;
    const int64_t in = gptq ? qweight->shape[0] * 8 : qweight->shape[0];
    return TensorMeta{name, DType::f32, {out, in}};
  }
  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows, Slice cols) const override {
    if (packed_.has(name)) return packed_.read_f32(name, rows, cols);
    auto m = meta(name);
    if (!m) return m.error();
    const int64_t out = m->shape[0], in = m->shape[1];
    const std::vector<float> w = dequantize(base(name), int(out), int(in));
    const int64_t r1 = rows.end < 0 ? out : rows.end, c1 = cols.end < 0 ? in : cols.end;
    std::vector<float> sliced;
    for (int64_t r = rows.begin; r < r1; ++r) {
      for (int64_t c = cols.begin; c < c1; ++c) sliced.push_back(w[size_t(r) * in + c]);
    }
    return sliced;
  }
  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows, Slice cols) const override {
    return packed_.read_bf16(name, rows, cols);
  }
  uint64_t bytes_read() const override { return 0; }

 private:
  static std::string base(const std::string& name) { return name.substr(0, name.rfind('.')); }

  // weight[o][c] = (q - zero) * scale, from the layouts in the issue:
  // GPTQ qweight [in/8, out] (nibble i of word (r, o) is input 8r+i), qzeros
  // [groups, out/8] holding zero - 1 (nibble i of word (g, k) is output 8k+i),
  // g_idx [in]; AWQ qweight [in, out/8] and qzeros with nibble i of packed
  // column k holding output 8k + [0,2,4,6,1,3,5,7][i], zero itself, group c / G.
  std::vector<float> dequantize(const std::string& b, int out, int in) const {
    const QuantConfig& q = packed_.config().quant;
    const bool gptq = q.method == QuantMethod::gptq;
    const auto qweight = *packed_.read_i32(b + ".qweight");
    const auto qzeros = *packed_.read_i32(b + ".qzeros");
    const auto scale = *packed_.read_f32(b + ".scales");
    std::vector<int32_t> g_idx(in);
    if (gptq) g_idx = *packed_.read_i32(b + ".g_idx");
    else for (int c = 0; c < in; ++c) g_idx[c] = q.group_size > 0 ? c / q.group_size : 0;
    static const int awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    auto nib = [](int32_t word, int i) { return int((uint32_t(word) >> (4 * i)) & 15u); };
    std::vector<float> w(size_t(out) * in);
    for (int o = 0; o < out; ++o) {
      for (int c = 0; c < in; ++c) {
        const int g = g_idx[c];
        int qv = 0, zero = 0;
        if (gptq) {
          qv = nib(qweight[size_t(c / 8) * out + o], c % 8);
          zero = nib(qzeros[size_t(g) * (out / 8) + o / 8], o % 8) + (q.zero_minus_one ? 1 : 0);
        } else {
          const int i = int(std::find(awq_order, awq_order + 8, o % 8) - awq_order);
          qv = nib(qweight[size_t(c) * (out / 8) + o / 8], i);
          zero = nib(qzeros[size_t(g) * (out / 8) + o / 8], i);
        }
        w[size_t(o) * in + c] = float(qv - zero) * scale[size_t(g) * out + o];
      }
    }
    return w;
  }

  const WeightSource& packed_;
  ModelConfig config_;
};

std::vector<float> prompt_logits(const WeightSource& weights, WeightFormat format, int tp, int rank,
                                 Communicator* comm, const std::vector<int32_t>& prompt) {
  ModelOptions options;
  options.dtype = format;
  options.kv = KvFormat::f32;
  options.threads = tp == 1 ? 2 : 1;
  options.tp_size = tp;
  options.tp_rank = rank;
  options.comm = comm;
  options.max_context = 64;
  auto model = Model::load(weights, options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (!model.ok()) return {};
  auto seq = (*model)->new_sequence();
  // The prompt in one pass (prefill through dequantized tiles), then two
  // more tokens one at a time (the decode kernels).
  std::vector<float> all;
  Chunk prefill[] = {{seq.get(), std::span<const int32_t>(prompt.data(), prompt.size() - 2)}};
  auto logits = (*model)->forward(prefill, true);
  EXPECT_TRUE(logits.ok()) << logits.error().message;
  all = (*model)->gather_vocab(*logits, int(prompt.size() - 2));
  for (size_t i = prompt.size() - 2; i < prompt.size(); ++i) {
    Chunk step[] = {{seq.get(), std::span<const int32_t>(&prompt[i], 1)}};
    auto out = (*model)->forward(step);
    EXPECT_TRUE(out.ok()) << out.error().message;
    auto row = (*model)->gather_vocab(*out, 1);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

// Returns how many positions had a clear top-1 (checked equal).
int expect_close(const std::vector<float>& ref, const std::vector<float>& got, int vocab, const std::string& what) {
  EXPECT_EQ(ref.size(), got.size()) << what;
  if (ref.size() != got.size()) return 0;
  int clear = 0;
  for (size_t p = 0; p < ref.size() / vocab; ++p) {
    const float* r = ref.data() + p * vocab;
    const float* g = got.data() + p * vocab;
    double mean = 0, sq = 0;
    for (int i = 0; i < vocab; ++i) mean += r[i];
    mean /= vocab;
    for (int i = 0; i < vocab; ++i) sq += (r[i] - mean) * (r[i] - mean);
    const double std_dev = std::sqrt(sq / vocab);
    std::vector<int> ids(vocab);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + 8, ids.end(), [&](int a, int b) { return r[a] > r[b]; });
    for (int k = 0; k < 8; ++k) {
      EXPECT_LE(std::fabs(double(g[ids[k]]) - r[ids[k]]), 0.05 * std_dev)
          << what << " position " << p << " token " << ids[k] << " (top " << k << ")";
    }
    if (r[ids[0]] - r[ids[1]] > 0.1 * std_dev) {
      ++clear;
      EXPECT_EQ(std::max_element(g, g + vocab) - g, ids[0]) << what << " position " << p;
    }
  }
  return clear;
}

struct Case {
  const char* name;
  Architecture arch;
  const char* quant;
  int group_size;
  bool desc_act;
};

class Int4Checkpoint : public ::testing::TestWithParam<Case> {};

TEST_P(Int4Checkpoint, LogitsMatchTheDequantizedModelInFp32AtOneAndTwoRanks) {
  const Case& c = GetParam();
  TestModelSpec spec;
  spec.arch = c.arch;
  spec.seed = 21;
  spec.vocab = 4096;
  spec.quant = c.quant;
  spec.group_size = c.group_size;
  spec.desc_act = c.desc_act;
  spec.experts = 4;
  spec.moe_intermediate = 64;  // two groups of 32 per expert: one a rank at 2 ranks
  spec.linear_value_heads = 16;  // in_proj_a/b: a row per value head, 8 (one packed int32) a rank at 2 ranks
  spec.full_attn_interval = 2;   // Qwen3.5: the second layer gated attention
  const std::string dir = (fs::temp_directory_path() / ("xft-int4-" + std::string(c.name) + "-" +
                                                        std::to_string(::getpid()))).string();
  auto written = write_test_model(dir, spec, WriteOptions{"", true});
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto packed = open_checkpoint(dir);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  const Dequantized reference(**packed);
  if (c.arch == Architecture::qwen3_moe || c.arch == Architecture::qwen2_moe) {
    // As Qwen publishes them: the experts packed, the router (and shared-expert gate) as they were.
    const std::string mlp = "model.layers.1.mlp.";
    EXPECT_TRUE((*packed)->has(mlp + "experts.3.down_proj.qweight"));
    EXPECT_FALSE((*packed)->has(mlp + "experts.3.down_proj.weight"));
    EXPECT_TRUE((*packed)->has(mlp + "gate.weight"));
    if (c.arch == Architecture::qwen2_moe) {
      EXPECT_TRUE((*packed)->has(mlp + "shared_expert.up_proj.qweight"));
      EXPECT_TRUE((*packed)->has(mlp + "shared_expert_gate.weight"));
    }
  }
  if (c.arch == Architecture::qwen3_5_moe) {
    // As the published 4-bit Qwen3.5-MoE checkpoints store them: one packed tensor set per expert.
    const std::string mlp = "model.language_model.layers.1.mlp.";
    EXPECT_TRUE((*packed)->has(mlp + "experts.3.gate_proj.qweight"));
    EXPECT_TRUE((*packed)->has(mlp + "experts.3.down_proj.scales"));
    EXPECT_FALSE((*packed)->has(mlp + "experts.gate_up_proj"));
    EXPECT_TRUE((*packed)->has(mlp + "shared_expert.up_proj.qweight"));
    EXPECT_TRUE((*packed)->has(mlp + "gate.weight"));
    EXPECT_TRUE((*packed)->has(mlp + "shared_expert_gate.weight"));
  }
  const std::vector<int32_t> prompt{17, 400, 3001, 9, 77, 1234, 2048, 5, 4000, 12};
  const int vocab = spec.vocab;

  const auto want = prompt_logits(reference, WeightFormat::f32, 1, 0, nullptr, prompt);
  const auto got = prompt_logits(**packed, WeightFormat::f32, 1, 0, nullptr, prompt);
  ASSERT_FALSE(want.empty());
  const int clear = expect_close(want, got, vocab, std::string(c.name) + " 1 rank");
  EXPECT_GE(clear, 3) << "too few positions with a clear top-1 to check";

  std::vector<std::vector<float>> ranks(2);
  testing::run_ranks(2, [&](int rank, Communicator& comm) {
    ranks[rank] = prompt_logits(**packed, WeightFormat::f32, 2, rank, &comm, prompt);
  });
  expect_close(want, ranks[0], vocab, std::string(c.name) + " 2 ranks");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Int4Checkpoint,
    ::testing::Values(Case{"gptq_g32", Architecture::qwen2, "gptq", 32, false},
                      Case{"gptq_g64_desc_act", Architecture::qwen2, "gptq", 64, true},
                      Case{"gptq_whole_rows", Architecture::qwen3, "gptq", -1, false},
                      Case{"awq_g64", Architecture::qwen2, "awq", 64, false},
                      Case{"awq_g32_qwen3", Architecture::qwen3, "awq", 32, false},
                      Case{"qwen1_gptq_g32", Architecture::qwen1, "gptq", 32, false},
                      Case{"qwen1_gptq_desc_act", Architecture::qwen1, "gptq", 32, true},
                      // Every expert (and Qwen2-MoE's shared expert) quantized; router and shared-expert gate not.
                      Case{"qwen3_moe_gptq_g32", Architecture::qwen3_moe, "gptq", 32, false},
                      Case{"qwen3_moe_gptq_desc_act", Architecture::qwen3_moe, "gptq", 32, true},
                      Case{"qwen3_moe_awq_g32", Architecture::qwen3_moe, "awq", 32, false},
                      Case{"qwen2_moe_gptq_g32", Architecture::qwen2_moe, "gptq", 32, false},
                      Case{"qwen2_moe_awq_g64", Architecture::qwen2_moe, "awq", 64, false},
                      // Every Gated DeltaNet and gated-attention projection packed; conv1d, A_log, norms not.
                      Case{"qwen3_5_gptq_g32", Architecture::qwen3_5, "gptq", 32, false},
                      Case{"qwen3_5_gptq_desc_act", Architecture::qwen3_5, "gptq", 32, true},
                      Case{"qwen3_5_awq_g32", Architecture::qwen3_5, "awq", 32, false},
                      // Qwen3.5-MoE: each expert packed apart (not the bf16 checkpoints' fused stacks).
                      Case{"qwen3_5_moe_gptq_g32", Architecture::qwen3_5_moe, "gptq", 32, false},
                      Case{"qwen3_5_moe_gptq_desc_act", Architecture::qwen3_5_moe, "gptq", 32, true},
                      Case{"qwen3_5_moe_awq_g32", Architecture::qwen3_5_moe, "awq", 32, false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Int4Checkpoint, FormatNameAndDecodeBytesFollowTheCheckpoint) {
  TestModelSpec spec;
  spec.vocab = 1024;
  spec.quant = "awq";
  spec.group_size = 32;
  const std::string dir = (fs::temp_directory_path() / ("xft-int4-format-" + std::to_string(::getpid()))).string();
  ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
  auto packed = open_checkpoint(dir);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  ModelOptions options;
  options.threads = 1;
  options.max_context = 16;
  auto model = Model::load(**packed, options);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->format_name(), "awq-int4");
  EXPECT_EQ((*model)->kernel_name().substr(0, 5), "int4/");
  EXPECT_LT((*model)->decode_weight_bytes(), (*model)->weight_bytes());
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace xft::engine
