// FP8 checkpoints (quant_method fp8, e4m3 weights with a weight_scale_inv
// per 128x128 block) of dense Qwen3 and Qwen3-MoE, written by the test-model
// writer, loaded as downloaded and run with the fp8 kernels, against the same
// model with its weights dequantized here from the published layout
// (w = e4m3(q) * scale_inv[r / 128][c / 128]) and run in fp32: max |diff| <=
// 0.05 of the logit standard deviation on the reference's top-8 tokens,
// top-1 equal where it leads clearly, at 1 and 2 ranks where the blocks allow;
// token by token through the decode kernels, every logit within 1e-3 std.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/cpu_features.h"
#include "engine/model/model.h"
#include "model_thread_communicator.h"

namespace xft::engine {
namespace {

namespace fs = std::filesystem;

// e4m3fn from its definition: sign, 4 exponent bits (bias 7), 3 mantissa bits.
float e4m3_value(uint8_t b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(float(mantissa), -9);
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

// The FP8 checkpoint seen as the plain model: every "<base>.weight" stored
// as F8_E4M3 dequantized with its "<base>.weight_scale_inv" blocks.
class Dequantized final : public WeightSource {
 public:
  explicit Dequantized(const WeightSource& packed) : packed_(packed), config_(packed.config()) {
    config_.quant = QuantConfig{};
  }
  const ModelConfig& config() const override { return config_; }
  bool has(const std::string& name) const override { return packed_.has(name); }
  Expected<TensorMeta> meta(const std::string& name) const override {
    auto m = packed_.meta(name);
    if (m && m->dtype == DType::f8_e4m3) m->dtype = DType::f32;
    return m;
  }
  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows, Slice cols) const override {
    auto stored = packed_.meta(name);
    if (!stored) return stored.error();
    if (stored->dtype != DType::f8_e4m3) return packed_.read_f32(name, rows, cols);
    const int64_t out = stored->shape[0], in = stored->shape[1];
    const std::vector<float> w = dequantize(name, out, in);
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
  std::vector<float> dequantize(const std::string& name, int64_t out, int64_t in) const {
    const std::string base = name.substr(0, name.rfind('.'));
    const auto q = *packed_.read_f8(name);
    const auto scale_inv = *packed_.read_f32(base + ".weight_scale_inv");
    const int64_t col_blocks = (in + 127) / 128;
    std::vector<float> w(size_t(out) * in);
    for (int64_t r = 0; r < out; ++r) {
      for (int64_t c = 0; c < in; ++c) {
        w[size_t(r) * in + c] = e4m3_value(q[size_t(r) * in + c]) * scale_inv[size_t(r / 128) * col_blocks + c / 128];
      }
    }
    return w;
  }

  const WeightSource& packed_;
  ModelConfig config_;
};

Expected<std::unique_ptr<Model>> load(const WeightSource& weights, int tp, int rank, Communicator* comm) {
  ModelOptions options;
  options.dtype = WeightFormat::f32;
  options.kv = KvFormat::f32;
  options.threads = tp == 1 ? 2 : 1;
  options.tp_size = tp;
  options.tp_rank = rank;
  options.comm = comm;
  options.max_context = 64;
  return Model::load(weights, options);
}

std::vector<float> prompt_logits(const WeightSource& weights, int tp, int rank, Communicator* comm,
                                 const std::vector<int32_t>& prompt) {
  auto model = load(weights, tp, rank, comm);
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (!model.ok()) return {};
  auto seq = (*model)->new_sequence();
  // The prompt in one pass (prefill), then two more tokens one at a time (decode kernels).
  Chunk prefill[] = {{seq.get(), std::span<const int32_t>(prompt.data(), prompt.size() - 2)}};
  auto logits = (*model)->forward(prefill, true);
  EXPECT_TRUE(logits.ok()) << logits.error().message;
  std::vector<float> all = (*model)->gather_vocab(*logits, int(prompt.size() - 2));
  for (size_t i = prompt.size() - 2; i < prompt.size(); ++i) {
    Chunk step[] = {{seq.get(), std::span<const int32_t>(&prompt[i], 1)}};
    auto out = (*model)->forward(step);
    EXPECT_TRUE(out.ok()) << out.error().message;
    auto row = (*model)->gather_vocab(*out, 1);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

// Every token through the decode kernels (m = 1): the fp8 kernels and the
// reference's f32 ones read the same weights and differ only in the order
// they sum, so every logit must agree to 1e-3 of the logit standard
// deviation, tight enough to see one block's scale misplaced. Where the fp8
// kernel rounds x to bf16 (vdpbf16ps, as the bf16 and int4 kernels do), that
// rounding alone moves these logits by up to 0.025 std: 0.05 there.
void expect_decode_equal(const WeightSource& reference, const WeightSource& packed, const std::vector<int32_t>& prompt,
                         int vocab, const std::string& what) {
  auto want_model = load(reference, 1, 0, nullptr);
  auto got_model = load(packed, 1, 0, nullptr);
  ASSERT_TRUE(want_model.ok() && got_model.ok());
  auto want_seq = (*want_model)->new_sequence();
  auto got_seq = (*got_model)->new_sequence();
  for (size_t i = 0; i < prompt.size(); ++i) {
    Chunk want_step[] = {{want_seq.get(), std::span<const int32_t>(&prompt[i], 1)}};
    Chunk got_step[] = {{got_seq.get(), std::span<const int32_t>(&prompt[i], 1)}};
    auto want = (*want_model)->forward(want_step);
    auto got = (*got_model)->forward(got_step);
    ASSERT_TRUE(want.ok() && got.ok());
    const auto r = (*want_model)->gather_vocab(*want, 1);
    const auto g = (*got_model)->gather_vocab(*got, 1);
    double mean = 0, sq = 0, worst = 0;
    for (int t = 0; t < vocab; ++t) mean += r[t];
    mean /= vocab;
    for (int t = 0; t < vocab; ++t) {
      sq += (r[t] - mean) * (r[t] - mean);
      worst = std::max(worst, std::fabs(double(g[t]) - r[t]));
    }
    const double tolerance = use_avx512_bf16() ? 0.05 : 1e-3;
    EXPECT_LE(worst, tolerance * std::sqrt(sq / vocab)) << what << " decode position " << i;
  }
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
  bool wide;  // hidden 256, two 128-wide query heads, widths 256: splits on 128x128 blocks at 2 ranks
  int ranks;  // the most ranks the blocks allow
};

TestModelSpec spec_of(const Case& c) {
  TestModelSpec spec;
  spec.arch = c.arch;
  spec.seed = 23;
  spec.vocab = 4096;
  spec.quant = "fp8";
  spec.experts = 4;
  spec.topk = 2;
  if (c.wide) {
    spec.hidden = 256;
    spec.heads = 2;
    spec.kv_heads = 1;
    spec.head_dim = 128;
    spec.intermediate = 256;
    spec.moe_intermediate = 256;
    spec.shared_intermediate = 256;
  }
  if (c.arch == Architecture::qwen3_5 || c.arch == Architecture::qwen3_5_moe) {
    // Qwen3.5's 128-wide linear heads: each rank's q, k, v and z rows start and end on blocks;
    // the second layer is gated attention.
    spec.linear_head_dim = 128;
    spec.full_attn_interval = 2;
    if (c.ranks == 4) {  // a query head, a key head, two value heads and 128 MLP rows a rank
      spec.heads = 4;
      spec.linear_key_heads = 4;
      spec.linear_value_heads = 8;
      spec.intermediate = 512;
      spec.moe_intermediate = 512;
      spec.shared_intermediate = 512;
    }
  }
  return spec;
}

// The test rule gives every 128x128 block the same max|w|, hence the same
// scale: rewritten in place (same bytes, same header) to differ per block,
// so that a scale read for the wrong block, or the wrong rank's blocks,
// changes the logits.
void vary_block_scales(const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data(), 8);
  const auto header = nlohmann::json::parse(std::string(file.data() + 8, header_bytes));
  for (const auto& [name, tensor] : header.items()) {
    if (name.size() < 17 || name.compare(name.size() - 17, 17, ".weight_scale_inv") != 0) continue;
    const int64_t cols = tensor["shape"][1];
    float* scale = reinterpret_cast<float*>(file.data() + 8 + header_bytes + tensor["data_offsets"][0].get<uint64_t>());
    const int64_t count = tensor["shape"][0].get<int64_t>() * cols;
    for (int64_t i = 0; i < count; ++i) scale[i] *= 1.0f + 0.3f * float((3 * (i / cols) + i % cols) % 4);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(file.data(), std::streamsize(file.size()));
}

std::string temp_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("xft-fp8-" + name + "-" + std::to_string(::getpid()))).string();
}

class Fp8Checkpoint : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8Checkpoint, LogitsMatchTheDequantizedModelInFp32) {
  const Case& c = GetParam();
  const TestModelSpec spec = spec_of(c);
  const std::string dir = temp_dir(c.name);
  auto written = write_test_model(dir, spec, WriteOptions{"", true});
  ASSERT_TRUE(written.ok()) << written.error().message;
  vary_block_scales(dir);
  auto packed = open_checkpoint(dir);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  const Dequantized reference(**packed);
  const std::vector<int32_t> prompt{17, 400, 3001, 9, 77, 1234, 2048, 5, 4000, 12};

  const auto want = prompt_logits(reference, 1, 0, nullptr, prompt);
  const auto got = prompt_logits(**packed, 1, 0, nullptr, prompt);
  ASSERT_FALSE(want.empty());
  const int clear = expect_close(want, got, spec.vocab, std::string(c.name) + " 1 rank");
  EXPECT_GE(clear, 3) << "too few positions with a clear top-1 to check";
  expect_decode_equal(reference, **packed, prompt, spec.vocab, c.name);

  if (c.ranks >= 2) {
    std::vector<std::vector<float>> ranks(c.ranks);
    testing::run_ranks(c.ranks, [&](int rank, Communicator& comm) {
      ranks[rank] = prompt_logits(**packed, c.ranks, rank, &comm, prompt);
    });
    expect_close(want, ranks[0], spec.vocab, std::string(c.name) + " " + std::to_string(c.ranks) + " ranks");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(
    Models, Fp8Checkpoint,
    ::testing::Values(Case{"qwen3_partial_blocks", Architecture::qwen3, false, 1},
                      Case{"qwen3_wide", Architecture::qwen3, true, 2},
                      Case{"qwen3_moe_partial_blocks", Architecture::qwen3_moe, false, 1},
                      Case{"qwen3_moe_wide", Architecture::qwen3_moe, true, 2},
                      // No published Qwen2-MoE FP8 checkpoint, but the same layout covers its shared expert.
                      Case{"qwen2_moe_shared_expert", Architecture::qwen2_moe, true, 2},
                      // in_proj_a/b (a row per value head) stay bf16, as modules_to_not_convert says.
                      Case{"qwen3_5_wide", Architecture::qwen3_5, true, 2},
                      Case{"qwen3_5_four_ranks", Architecture::qwen3_5, true, 4},
                      // Experts one tensor each, as Qwen3.5-*-FP8 store them (the bf16 ones are fused stacks).
                      Case{"qwen3_5_moe_wide", Architecture::qwen3_5_moe, true, 2},
                      Case{"qwen3_5_moe_four_ranks", Architecture::qwen3_5_moe, true, 4}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Fp8Checkpoint, StoresE4m3WeightsWithBlockScalesAndKeepsTheRouterUnquantized) {
  TestModelSpec spec = spec_of(Case{"layout", Architecture::qwen3_moe, false, 1});
  const std::string dir = temp_dir("layout");
  ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
  auto packed = open_checkpoint(dir);
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  const WeightSource& w = **packed;
  EXPECT_EQ(w.config().quant.method, QuantMethod::fp8);
  auto q = w.meta("model.layers.0.self_attn.q_proj.weight");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->dtype, DType::f8_e4m3);
  auto scale = w.meta("model.layers.0.mlp.experts.3.down_proj.weight_scale_inv");
  ASSERT_TRUE(scale.ok()) << scale.error().message;
  EXPECT_EQ(scale->dtype, DType::f32);
  EXPECT_EQ(scale->shape, (std::vector<int64_t>{1, 1}));  // 64 x 32: one partial block
  auto router = w.meta("model.layers.0.mlp.gate.weight");
  ASSERT_TRUE(router.ok());
  EXPECT_EQ(router->dtype, DType::bf16);
  EXPECT_FALSE(w.has("model.layers.0.mlp.gate.weight_scale_inv"));
  EXPECT_EQ(w.meta("model.embed_tokens.weight")->dtype, DType::bf16);
  std::error_code ec;
  fs::remove_all(dir, ec);
  // Qwen2-MoE: the shared expert is quantized, its gate is not.
  spec = spec_of(Case{"layout", Architecture::qwen2_moe, false, 1});
  ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
  auto qwen2 = open_checkpoint(dir);
  ASSERT_TRUE(qwen2.ok()) << qwen2.error().message;
  EXPECT_EQ((*qwen2)->meta("model.layers.1.mlp.shared_expert.up_proj.weight")->dtype, DType::f8_e4m3);
  EXPECT_EQ((*qwen2)->meta("model.layers.1.mlp.shared_expert_gate.weight")->dtype, DType::bf16);
  fs::remove_all(dir, ec);
  // Qwen3.5: in_proj_a/b stay bf16, listed in modules_to_not_convert as Qwen3.5-*-FP8 list them.
  spec = spec_of(Case{"layout", Architecture::qwen3_5, true, 2});
  ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
  auto qwen35 = open_checkpoint(dir);
  ASSERT_TRUE(qwen35.ok()) << qwen35.error().message;
  const WeightSource& q35 = **qwen35;
  const std::string gdn = "model.language_model.layers.0.linear_attn.";
  EXPECT_EQ(q35.config().quant.modules_to_not_convert,
            (std::vector<std::string>{"lm_head", "model.language_model.embed_tokens", gdn + "in_proj_a",
                                      gdn + "in_proj_b"}));
  EXPECT_EQ(q35.meta(gdn + "in_proj_qkv.weight")->dtype, DType::f8_e4m3);
  EXPECT_TRUE(q35.has(gdn + "in_proj_z.weight_scale_inv"));
  for (const char* small : {"in_proj_a", "in_proj_b"}) {
    EXPECT_EQ(q35.meta(gdn + small + ".weight")->dtype, DType::bf16) << small;
    EXPECT_FALSE(q35.has(gdn + small + ".weight_scale_inv")) << small;
  }
  fs::remove_all(dir, ec);
  // Qwen3.5-MoE: each expert's projections apart, FP8; the router and shared-expert gate bf16.
  spec = spec_of(Case{"layout", Architecture::qwen3_5_moe, true, 2});
  ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
  auto moe35 = open_checkpoint(dir);
  ASSERT_TRUE(moe35.ok()) << moe35.error().message;
  const std::string mlp = "model.language_model.layers.0.mlp.";
  EXPECT_FALSE((*moe35)->has(mlp + "experts.gate_up_proj"));
  EXPECT_EQ((*moe35)->meta(mlp + "experts.3.up_proj.weight")->dtype, DType::f8_e4m3);
  EXPECT_EQ((*moe35)->meta(mlp + "experts.3.down_proj.weight_scale_inv")->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*moe35)->meta(mlp + "gate.weight")->dtype, DType::bf16);
  EXPECT_EQ((*moe35)->meta(mlp + "shared_expert_gate.weight")->dtype, DType::bf16);
  EXPECT_EQ((*moe35)->meta(mlp + "shared_expert.gate_proj.weight")->dtype, DType::f8_e4m3);
  fs::remove_all(dir, ec);
}

TEST(Fp8Config, ModulesToNotConvertMatchFullNamesParentsAndTrailingParts) {
  QuantConfig q;
  q.method = QuantMethod::fp8;
  q.modules_to_not_convert = {"model.language_model.layers.0.linear_attn.in_proj_a", "in_proj_b", "model.visual"};
  EXPECT_FALSE(q.converts("model.language_model.layers.0.linear_attn.in_proj_a"));
  EXPECT_TRUE(q.converts("model.language_model.layers.1.linear_attn.in_proj_a"));
  EXPECT_FALSE(q.converts("model.language_model.layers.5.linear_attn.in_proj_b"));
  EXPECT_TRUE(q.converts("model.language_model.layers.5.linear_attn.in_proj_ba"));  // whole dotted parts only
  EXPECT_FALSE(q.converts("model.visual.blocks.0.attn.qkv"));
  EXPECT_TRUE(q.converts("model.language_model.layers.0.linear_attn.in_proj_qkv"));
}

TEST(Fp8Checkpoint, FormatNameAndARankCountThatCutsABlockIsRefused) {
  for (Architecture arch : {Architecture::qwen3, Architecture::qwen3_moe}) {
    const TestModelSpec spec = spec_of(Case{"refuse", arch, false, 1});
    const std::string dir = temp_dir(std::string("refuse-") + architecture_flag(arch));
    ASSERT_TRUE(write_test_model(dir, spec, WriteOptions{"", true}).ok());
    auto packed = open_checkpoint(dir);
    ASSERT_TRUE(packed.ok()) << packed.error().message;
    auto one = load(**packed, 1, 0, nullptr);
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ((*one)->format_name(), "fp8");
    EXPECT_EQ((*one)->kernel_name().substr(0, 4), "fp8/");
    // 4 heads of 16 over 2 ranks end rank 0's queries at row 32, inside the first 128x128 block.
    auto two = load(**packed, 2, 0, nullptr);
    ASSERT_FALSE(two.ok());
    EXPECT_EQ(two.error().message,
              "tensor parallel size 2 cannot split this FP8 checkpoint without cutting a 128x128 weight block: "
              "rank 0's query heads start or end at row 32 (rank counts that work: 1)");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

}  // namespace
}  // namespace xft::engine
