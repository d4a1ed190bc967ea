// The deterministic test model is bit-exact to the published digests, and the
// checkpoint reader gives back exactly what the generator computes.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>

#include "checkpoint_test_support.h"
#include "common/sha256.h"
#include "engine/checkpoint/fake_weights.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/slicing.h"
#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"

namespace xft::engine {
namespace {

using namespace xft::engine::testing;

// Each golden model is generated once for all tests of the suite (a 20 MB write).
class CheckpointGolden : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { root_ = new fs::path(make_root()); }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  static fs::path make_root() {
    auto root = fs::temp_directory_path() / ("xft-ckpt-golden-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    return root;
  }

  void SetUp() override {
    golden_ = golden(GetParam());
    auto spec = parse_generator_args(golden_["generator"].get<std::string>());
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    spec_ = *spec;
    model_dir_ = (*root_ / GetParam()).string();
    if (fs::exists(model_dir_)) return;
    auto written = write_test_model(model_dir_, spec_);
    ASSERT_TRUE(written.ok()) << written.error().message;
  }

  static fs::path* root_;
  nlohmann::json golden_;
  TestModelSpec spec_;
  std::string model_dir_;
};

fs::path* CheckpointGolden::root_ = nullptr;

TEST_P(CheckpointGolden, SafetensorsIsBitExact) {
  auto digest = sha256_file(model_dir_ + "/model.safetensors");
  ASSERT_TRUE(digest.ok()) << digest.error().message;
  EXPECT_EQ(*digest, golden_["model_safetensors_sha256"].get<std::string>());
}

TEST_P(CheckpointGolden, ConfigJsonEqualsGolden) {
  EXPECT_EQ(nlohmann::json::parse(read_text(model_dir_ + "/config.json")), golden_["config"]);
}

TEST_P(CheckpointGolden, TensorOrderEqualsGolden) {
  auto config = load_config(model_dir_);
  ASSERT_TRUE(config.ok()) << config.error().message;
  std::vector<std::string> names;
  for (const auto& tensor : expected_tensors(*config)) names.push_back(tensor.name);
  EXPECT_EQ(names, golden_["tensor_order"].get<std::vector<std::string>>());
  // The file's header lists them in the same order.
  std::string file = read_text(model_dir_ + "/model.safetensors");
  size_t last = 0;
  for (const auto& name : names) {
    size_t at = file.find("\"" + name + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_GT(at, last) << name << " out of order";
    last = at;
  }
}

TEST_P(CheckpointGolden, FileWeightsEqualFakeWeights) {
  auto file = open_checkpoint(model_dir_);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto fake = make_fake_weights((*file)->config(), spec_.seed);
  for (const auto& name : golden_["tensor_order"]) {
    auto from_file = (*file)->read_bf16(name);
    auto generated = fake->read_bf16(name);
    ASSERT_TRUE(from_file.ok() && generated.ok()) << name;
    EXPECT_EQ(*from_file, *generated) << name;
    auto file_f32 = (*file)->read_f32(name, {0, 1});
    auto fake_f32 = fake->read_f32(name, {0, 1});
    ASSERT_TRUE(file_f32.ok() && fake_f32.ok()) << name;
    EXPECT_EQ(*file_f32, *fake_f32) << name;
  }
  EXPECT_EQ((*file)->bytes_read(), fake->bytes_read());
}

TEST_P(CheckpointGolden, SlicesEqualTheFullRead) {
  auto source = open_checkpoint(model_dir_);
  ASSERT_TRUE(source.ok()) << source.error().message;
  const WeightSource& w = **source;
  for (const auto& tensor : expected_tensors(w.config())) {
    if (tensor.shape.size() != 2 || tensor.shape[0] > 4096) continue;
    int64_t rows = tensor.shape[0], cols = tensor.shape[1];
    Slice row_slice{rows / 4, rows / 4 + rows / 2}, col_slice{cols / 8, cols - cols / 4};
    auto full = w.read_f32(tensor.name);
    uint64_t before = w.bytes_read();
    auto part = w.read_f32(tensor.name, row_slice, col_slice);
    ASSERT_TRUE(full.ok() && part.ok()) << tensor.name;
    int64_t out_cols = col_slice.end - col_slice.begin;
    // Only the requested elements are read.
    EXPECT_EQ(w.bytes_read() - before, uint64_t((row_slice.end - row_slice.begin) * out_cols * 2));
    ASSERT_EQ(part->size(), size_t((row_slice.end - row_slice.begin) * out_cols));
    for (int64_t r = row_slice.begin; r < row_slice.end; ++r) {
      for (int64_t c = col_slice.begin; c < col_slice.end; ++c) {
        ASSERT_EQ((*part)[(r - row_slice.begin) * out_cols + (c - col_slice.begin)],
                  (*full)[r * cols + c])
            << tensor.name << " [" << r << "," << c << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, CheckpointGolden, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(CheckpointTestModel, ValuesFollowTheRule) {
  // Hand-computed from the rule in shared/README.md for seed 7, q_proj of layer 0:
  // h = fnv1a64("7:model.layers.0.self_attn.q_proj.weight"), x = splitmix64(h + 0).
  uint64_t h = test_tensor_hash(7, "model.layers.0.self_attn.q_proj.weight");
  uint64_t expected_h = 0xCBF29CE484222325ull;
  for (unsigned char c : std::string("7:model.layers.0.self_attn.q_proj.weight")) {
    expected_h = (expected_h ^ c) * 0x100000001B3ull;
  }
  EXPECT_EQ(h, expected_h);
  // Norm weights sit in [1 - 0.1*sqrt(3), 1 + 0.1*sqrt(3)); biases around 0.
  for (uint64_t i = 0; i < 1000; ++i) {
    float norm = test_value_f32(h, i, TensorRole::norm, 1);
    EXPECT_GE(norm, 1.0f - 0.1733f);
    EXPECT_LT(norm, 1.0f + 0.1733f);
    float linear = test_value_f32(h, i, TensorRole::linear, 64);
    EXPECT_LE(std::abs(linear), 1.7321f / 8.0f);
  }
  EXPECT_EQ(test_value_bf16(h, 3, TensorRole::embedding, 1),
            f32_to_bf16_bits(test_value_f32(h, 3, TensorRole::embedding, 1)));
}

TEST(CheckpointTestModel, WritesConfigWeightsAndGenerationConfig) {
  TempDir dir;
  TestModelSpec spec;
  spec.arch = Architecture::qwen2;
  spec.vocab = 32;
  spec.hidden = 8;
  spec.heads = 2;
  spec.kv_heads = 1;
  spec.head_dim = 4;
  spec.intermediate = 16;
  spec.layers = 1;
  auto files = write_test_model(dir / "m", spec);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].path, dir / "m/config.json");
  EXPECT_EQ((*files)[1].path, dir / "m/generation_config.json");
  EXPECT_EQ((*files)[2].path, dir / "m/model.safetensors");
  EXPECT_EQ((*files)[2].bytes, fs::file_size(dir / "m/model.safetensors"));
  auto config = load_config(dir / "m");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->eos_ids, (std::vector<int>{151645, 151643}));
  EXPECT_EQ(config->bos_id, 151643);
  // No temp folder is left behind.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) entries += entry.path().filename() != "m";
  EXPECT_EQ(entries, 0);
}

TEST(CheckpointTestModel, RefusesANonEmptyDirectoryUnlessReplacing) {
  TempDir dir;
  TestModelSpec spec;
  spec.vocab = 16;
  spec.layers = 1;
  fs::create_directories(dir / "m");
  write_text(dir / "m/keep.txt", "x");
  auto refused = write_test_model(dir / "m", spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            dir / "m" + " exists and is not empty; remove it or pass --force to replace it");
  EXPECT_TRUE(fs::exists(dir / "m/keep.txt"));
  EXPECT_FALSE(fs::exists(dir / "m/config.json"));
  WriteOptions replace;
  replace.replace_existing = true;
  ASSERT_TRUE(write_test_model(dir / "m", spec, replace).ok());
  EXPECT_FALSE(fs::exists(dir / "m/keep.txt"));
  EXPECT_TRUE(fs::exists(dir / "m/model.safetensors"));
}

TEST(CheckpointTestModel, RejectsImpossibleShapes) {
  TestModelSpec spec;
  spec.arch = Architecture::qwen1;
  spec.intermediate = 175;
  EXPECT_EQ(validate_spec(spec).error().message, "--inter: must be even for qwen (w1 and w2 get half each)");
  spec = {};
  spec.kv_heads = 3;
  EXPECT_EQ(validate_spec(spec).error().message, "--kv-heads: must divide --heads 4");
  spec = {};
  spec.head_dim = 15;
  EXPECT_EQ(validate_spec(spec).error().message, "--head-dim: must be even for rotary embeddings, got 15");
  EXPECT_EQ(parse_generator_args("--arch llama").error().message,
            "--arch: unknown architecture \"llama\" (expected qwen, qwen2, qwen3, qwen2_moe, qwen3_moe, qwen3_5 or qwen3_5_moe)");
}

TEST(CheckpointTestModel, RejectsImpossibleMixtureOfExperts) {
  TestModelSpec spec;
  spec.arch = Architecture::qwen3_moe;
  spec.topk = 9;
  EXPECT_EQ(validate_spec(spec).error().message, "--topk: must be between 1 and --experts 8, got 9");
  spec = {};
  spec.arch = Architecture::qwen3_moe;
  spec.moe_intermediate = 0;
  EXPECT_EQ(validate_spec(spec).error().message, "--moe-inter: must be positive, got 0");
  spec = {};
  spec.arch = Architecture::qwen2_moe;
  spec.head_dim = 32;  // hidden 64 / heads 4 = 16
  EXPECT_EQ(validate_spec(spec).error().message, "--head-dim: qwen2_moe derives it as --hidden / --heads = 16; pass that value");
  spec.head_dim = 16;
  spec.quant = "gptq";  // 4-bit MoE test checkpoints: every expert quantized
  EXPECT_TRUE(validate_spec(spec).ok());
  EXPECT_EQ(parse_generator_args("--arch qwen3_moe --norm-topk 2").error().message,
            "--norm-topk: expected 0 or 1, got \"2\"");
  auto parsed = parse_generator_args("--arch qwen2_moe --experts 4 --topk 1 --moe-inter 16 --shared-inter 48 --norm-topk 1");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->arch, Architecture::qwen2_moe);
  EXPECT_EQ(parsed->experts, 4);
  EXPECT_EQ(parsed->topk, 1);
  EXPECT_EQ(parsed->moe_intermediate, 16);
  EXPECT_EQ(parsed->shared_intermediate, 48);
  EXPECT_TRUE(parsed->norm_topk);
}

}  // namespace
}  // namespace xft::engine
