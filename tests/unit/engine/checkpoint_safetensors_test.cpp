// The safetensors reader: every broken checkpoint gives one exact line,
// shards and dtypes read back correctly, fake weights slice lazily.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "checkpoint_test_support.h"
#include "engine/checkpoint/fake_weights.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/presets.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/slicing.h"
#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"

namespace xft::engine {
namespace {

using namespace xft::engine::testing;

TestModelSpec tiny_spec() {
  TestModelSpec spec;
  spec.arch = Architecture::qwen2;
  spec.seed = 3;
  spec.hidden = 8;
  spec.layers = 1;
  spec.heads = 2;
  spec.kv_heads = 1;
  spec.head_dim = 4;
  spec.intermediate = 16;
  spec.vocab = 32;
  return spec;
}

class BadCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_ / "m";
    auto written = write_test_model(model_, tiny_spec());
    ASSERT_TRUE(written.ok()) << written.error().message;
    file_ = model_ + "/model.safetensors";
  }
  std::string open_error() {
    auto source = open_checkpoint(model_);
    EXPECT_FALSE(source.ok());
    return source ? std::string("(opened)") : source.error().message;
  }
  // Replaces the weights with a file of a literal header and `data_size` zero bytes.
  void write_header(const std::string& header, size_t data_size) {
    write_raw_file(file_, header, std::string(data_size, '\0'));
  }

  TempDir dir_;
  std::string model_;
  std::string file_;
};

TEST_F(BadCheckpoint, GoodOneOpens) {
  auto source = open_checkpoint(model_);
  ASSERT_TRUE(source.ok()) << source.error().message;
  EXPECT_TRUE((*source)->has("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE((*source)->has("lm_head.weight"));
  EXPECT_EQ((*source)->meta("model.embed_tokens.weight")->shape, (std::vector<int64_t>{32, 8}));
  EXPECT_EQ((*source)->bytes_read(), 0u);  // validation touches headers only
}

TEST_F(BadCheckpoint, MissingWeightsFile) {
  fs::remove(file_);
  EXPECT_EQ(open_error(), file_ + ": missing (and no model.safetensors.index.json for a sharded checkpoint)");
}

TEST_F(BadCheckpoint, MissingConfig) {
  fs::remove(model_ + "/config.json");
  EXPECT_EQ(open_error(), model_ + "/config.json: missing (is " + model_ + " a Hugging Face model directory?)");
}

TEST_F(BadCheckpoint, UnknownArchitecture) {
  write_text(model_ + "/config.json", R"({"architectures":["MistralForCausalLM"]})");
  EXPECT_EQ(open_error(), model_ + "/config.json: architectures: architecture MistralForCausalLM is not "
                                   "supported (supported: QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                                   "Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, Qwen3_5ForConditionalGeneration, "
                                   "Qwen3_5MoeForConditionalGeneration)");
}

TEST_F(BadCheckpoint, TooShortForTheLength) {
  write_text(file_, "abc");
  EXPECT_EQ(open_error(), file_ + ": truncated: 3 bytes, too short for the 8-byte header length");
  write_text(file_, "");
  EXPECT_EQ(open_error(), file_ + ": truncated: 0 bytes, too short for the 8-byte header length");
}

TEST_F(BadCheckpoint, HeaderLengthBeyondFile) {
  write_text(file_, le64(1000) + "{}");
  EXPECT_EQ(open_error(), file_ + ": header length 1000 exceeds the file size 10 "
                                  "(truncated file or not a safetensors file)");
  write_text(file_, le64(~0ull) + "{}");
  EXPECT_EQ(open_error(), file_ + ": header length 18446744073709551615 exceeds the file size 10 "
                                  "(truncated file or not a safetensors file)");
}

TEST_F(BadCheckpoint, TruncatedData) {
  std::string bytes = read_text(file_);
  // The last tensor written is model.norm.weight, 8 BF16 values at the end.
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | uint8_t(bytes[i]);
  uint64_t data_size = bytes.size() - 8 - header_size;
  write_text(file_, bytes.substr(0, bytes.size() - 2));
  EXPECT_EQ(open_error(), file_ + ": tensor model.norm.weight: data_offsets [" + std::to_string(data_size - 16) +
                              "," + std::to_string(data_size) + "] reach beyond the data section (" +
                              std::to_string(data_size - 2) + " bytes): truncated file or lying header");
}

TEST_F(BadCheckpoint, HeaderLyingAboutSize) {
  write_header(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20);
  EXPECT_EQ(open_error(), file_ + ": tensor x: shape [2,3] of F32 needs 24 bytes but data_offsets [0,20] hold 20");
}

TEST_F(BadCheckpoint, UnknownDtype) {
  write_header(R"({"x":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4);
  EXPECT_EQ(open_error(), file_ + ": tensor x: dtype I8 is not supported (supported: F32, F16, BF16, I32, F8_E4M3)");
}

TEST_F(BadCheckpoint, OverlapGapAndTrailingBytes) {
  write_header(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}})", 12);
  EXPECT_EQ(open_error(), file_ + ": tensor b: data_offsets overlap tensor a");
  write_header(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
               R"("b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}})", 12);
  EXPECT_EQ(open_error(), file_ + ": tensor b: 4 unaccounted bytes before its data_offsets");
  write_header(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 6);
  EXPECT_EQ(open_error(), file_ + ": the data section has 6 bytes but the tensors account for 4");
}

TEST_F(BadCheckpoint, MalformedHeaders) {
  write_header("[1]", 0);
  EXPECT_EQ(open_error(), file_ + ": header does not start with '{' (not a safetensors file?)");
  write_header("{\"x\":", 0);
  EXPECT_EQ(open_error().rfind(file_ + ": header is not valid JSON ([json.exception.parse_error.101]", 0), 0u);
  write_header(R"({"x":{"dtype":"F16","shape":[-1],"data_offsets":[0,0]}})", 0);
  EXPECT_EQ(open_error(), file_ + ": tensor x: shape [-1] has an entry that is not a non-negative integer");
  write_header(R"({"x":{"dtype":"F16","shape":[1],"data_offsets":[2]}})", 2);
  EXPECT_EQ(open_error(), file_ + ": tensor x: data_offsets must be a list of two non-negative integers");
  write_header(R"({"x":{"dtype":"F16","shape":[1],"data_offsets":[2,0]}})", 2);
  EXPECT_EQ(open_error(), file_ + ": tensor x: data_offsets [2,0] end before they begin");
  write_header(R"({"__metadata__":{"format":1}})", 0);
  EXPECT_EQ(open_error(), file_ + ": __metadata__: format must be a string, got 1");
  write_header(R"({"x":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
  EXPECT_EQ(open_error(), file_ + ": tensor x: shape [4294967296,4294967296] is impossibly large");
}

TEST_F(BadCheckpoint, ShapeMismatchWithConfig) {
  std::string config = read_text(model_ + "/config.json");
  auto json = nlohmann::json::parse(config);
  json["vocab_size"] = 64;
  write_text(model_ + "/config.json", json.dump());
  EXPECT_EQ(open_error(), file_ + ": tensor model.embed_tokens.weight: shape [32,8], config.json says [64,8]");
}

TEST_F(BadCheckpoint, MissingTensor) {
  auto json = nlohmann::json::parse(read_text(model_ + "/config.json"));
  json["tie_word_embeddings"] = false;
  write_text(model_ + "/config.json", json.dump());
  EXPECT_EQ(open_error(), file_ + ": tensor lm_head.weight: missing, but config.json (Qwen2ForCausalLM, 1 layers) needs it");
}

TEST_F(BadCheckpoint, SliceOutOfRange) {
  auto source = open_checkpoint(model_);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->read_f32("model.embed_tokens.weight", {30, 33}).error().message,
            "tensor model.embed_tokens.weight: row slice [30,33) is outside [0,32)");
  EXPECT_EQ((*source)->read_f32("model.embed_tokens.weight", {}, {4, 2}).error().message,
            "tensor model.embed_tokens.weight: column slice [4,2) is outside [0,8)");
  EXPECT_EQ((*source)->read_f32("nope").error().message, "tensor nope: not in the checkpoint");
}

// The tiny model re-stored in other dtypes / shards must read back identically.
std::vector<RawTensor> tiny_tensors(const WeightSource& fake, const std::string& dtype) {
  std::vector<RawTensor> out;
  for (const auto& tensor : expected_tensors(fake.config())) {
    RawTensor raw{tensor.name, dtype, tensor.shape, {}};
    if (dtype == "BF16") {
      raw.bytes = bytes_of(*fake.read_bf16(tensor.name));
    } else {
      raw.bytes = bytes_of(*fake.read_f32(tensor.name));
    }
    out.push_back(std::move(raw));
  }
  return out;
}

TEST_F(BadCheckpoint, F32CheckpointReadsTheSameValues) {
  auto fake = make_fake_weights(*test_model_config(tiny_spec()), tiny_spec().seed);
  write_raw_safetensors(file_, tiny_tensors(*fake, "F32"));
  auto source = open_checkpoint(model_);
  ASSERT_TRUE(source.ok()) << source.error().message;
  for (const auto& tensor : expected_tensors(fake->config())) {
    EXPECT_EQ(*(*source)->read_bf16(tensor.name), *fake->read_bf16(tensor.name)) << tensor.name;
    EXPECT_EQ(*(*source)->read_f32(tensor.name, {1, 2}), *fake->read_f32(tensor.name, {1, 2})) << tensor.name;
    EXPECT_EQ((*source)->meta(tensor.name)->dtype, DType::f32);
  }
}

TEST_F(BadCheckpoint, F16Values) {
  auto fake = make_fake_weights(*test_model_config(tiny_spec()), tiny_spec().seed);
  auto tensors = tiny_tensors(*fake, "BF16");
  // model.norm.weight as F16: 1, -2.5, smallest normal, smallest subnormal, -0, 65504, inf, 0.5.
  std::vector<uint16_t> halves = {0x3C00, 0xC100, 0x0400, 0x0001, 0x8000, 0x7BFF, 0x7C00, 0x3800};
  tensors.back() = {"model.norm.weight", "F16", {8}, bytes_of(halves)};
  write_raw_safetensors(file_, tensors);
  auto source = open_checkpoint(model_);
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto values = (*source)->read_f32("model.norm.weight");
  ASSERT_TRUE(values.ok());
  std::vector<float> expected = {1.0f, -2.5f, 6.103515625e-05f, 5.9604644775390625e-08f, -0.0f, 65504.0f,
                                 std::numeric_limits<float>::infinity(), 0.5f};
  EXPECT_EQ(*values, expected);
  EXPECT_TRUE(std::signbit((*values)[4]));
  EXPECT_EQ((*source)->read_bf16("model.norm.weight", {0, 2}).value(), (std::vector<uint16_t>{0x3F80, 0xC020}));
}

TEST_F(BadCheckpoint, ShardedCheckpoint) {
  auto fake = make_fake_weights(*test_model_config(tiny_spec()), tiny_spec().seed);
  auto tensors = tiny_tensors(*fake, "BF16");
  std::vector<RawTensor> first(tensors.begin(), tensors.begin() + 5), second(tensors.begin() + 5, tensors.end());
  fs::remove(file_);
  write_raw_safetensors(model_ + "/model-00001-of-00002.safetensors", first);
  write_raw_safetensors(model_ + "/model-00002-of-00002.safetensors", second);
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (const auto& t : first) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const auto& t : second) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  write_text(model_ + "/model.safetensors.index.json", index.dump());
  auto source = open_checkpoint(model_);
  ASSERT_TRUE(source.ok()) << source.error().message;
  for (const auto& tensor : expected_tensors(fake->config())) {
    EXPECT_EQ(*(*source)->read_bf16(tensor.name), *fake->read_bf16(tensor.name)) << tensor.name;
  }

  index["weight_map"][second[0].name] = "model-00001-of-00002.safetensors";
  write_text(model_ + "/model.safetensors.index.json", index.dump());
  EXPECT_EQ(open_error(), model_ + "/model.safetensors.index.json: weight_map puts tensor " + second[0].name +
                              " in model-00001-of-00002.safetensors, which has no such tensor");

  index["weight_map"][second[0].name] = "../elsewhere.safetensors";
  write_text(model_ + "/model.safetensors.index.json", index.dump());
  EXPECT_EQ(open_error(), model_ + "/model.safetensors.index.json: weight_map: " + second[0].name +
                              ": shard \"../elsewhere.safetensors\" must be a file name inside the model directory");

  index["weight_map"][second[0].name] = "model-00003-of-00002.safetensors";
  write_text(model_ + "/model.safetensors.index.json", index.dump());
  EXPECT_EQ(open_error(), model_ + "/model-00003-of-00002.safetensors: missing (no such file)");
}

TEST(CheckpointFakeWeights, LargePresetGeneratesOnlyTheSlice) {
  auto config = fake_model_config("qwen2.5-72b");
  ASSERT_TRUE(config.ok());
  auto fake = make_fake_weights(*config, 1);
  EXPECT_EQ(fake->meta("model.layers.79.mlp.down_proj.weight")->shape, (std::vector<int64_t>{8192, 29568}));
  EXPECT_TRUE(fake->has("lm_head.weight"));
  auto rows = fake->read_bf16("lm_head.weight", {152062, 152064}, {8000, 8192});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u * 192u);
  EXPECT_EQ(fake->bytes_read(), 2u * 192u * 2u);
  uint64_t hash = test_tensor_hash(1, "lm_head.weight");
  EXPECT_EQ((*rows)[0], test_value_bf16(hash, 152062ull * 8192 + 8000, TensorRole::embedding, 8192));
  EXPECT_EQ((*rows)[383], test_value_bf16(hash, 152063ull * 8192 + 8191, TensorRole::embedding, 8192));
}

TEST(CheckpointConversions, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(0x3F80) + 0x1p-8f), 0x3F80);   // tie -> even (down)
  EXPECT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(0x3F81) + 0x1p-8f), 0x3F82);   // tie -> even (up)
  EXPECT_EQ(f32_to_bf16_bits(bf16_bits_to_f32(0x3F80) + 0x1.8p-8f), 0x3F81); // above half -> up
  EXPECT_EQ(bf16_bits_to_f32(0xC020), -2.5f);
}

}  // namespace
}  // namespace xft::engine
