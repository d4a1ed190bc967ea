// The deterministic test model as a checkpoint directory: config.json,
// generation_config.json, model.safetensors and (when a tokenizer source is
// given) the tokenizer files, so every engine path can run without downloads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/safetensors.h"

namespace xft::engine {

// Mirrors `xftctl model make-test` options and their defaults.
struct TestModelSpec {
  Architecture arch = Architecture::qwen2;
  uint64_t seed = 0;
  int hidden = 64;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;      // ignored for qwen (Qwen1 is multi-head)
  int head_dim = 16;     // ignored for qwen (hidden / heads)
  int intermediate = 176;  // config's intermediate_size (Qwen1: both branches together)
  int vocab = 151936;
  bool tie = true;       // ignored for qwen (always an untied lm_head)
  double rope_theta = 1e6;
  int max_positions = 4096;
  // A quantized checkpoint of the same weights: "" (none), "gptq" or "awq"
  // (4-bit; group_size -1 is one group per matrix; desc_act (GPTQ) scatters
  // groups) or "fp8" (e4m3 in blocks of kTestFp8Block x kTestFp8Block).
  std::string quant;
  int group_size = 128;
  bool desc_act = false;
  // qwen2_moe / qwen3_moe: num_experts, num_experts_per_tok,
  // moe_intermediate_size, norm_topk_prob, shared_expert_intermediate_size (qwen2_moe).
  int experts = 8;
  int topk = 2;
  int moe_intermediate = 32;
  bool norm_topk = true;
  int shared_intermediate = 128;
  // qwen3_5 / qwen3_5_moe: the Gated DeltaNet shape (key and value heads of
  // linear_head_dim each), every full_attn_interval-th layer full attention,
  // rotary on partial_rotary of each head.
  int linear_key_heads = 2;
  int linear_value_heads = 4;
  int linear_head_dim = 16;
  int conv_kernel = 4;
  int full_attn_interval = 4;
  double partial_rotary = 0.25;
};

// The block of FP8 test checkpoints: Qwen's weight_block_size.
constexpr int kTestFp8Block = 128;

// qwen|qwen2|qwen3|qwen2_moe|qwen3_moe|qwen3_5|qwen3_5_moe
Expected<Architecture> parse_architecture(const std::string& name);
const char* architecture_flag(Architecture arch);

// Parses a golden file's "generator" line ("--arch qwen --seed 5 --inter 256
// --tie 0 --defaults: ..."); what follows "--defaults:" is documentation.
Expected<TestModelSpec> parse_generator_args(const std::string& line);

Expected<void> validate_spec(const TestModelSpec& spec);
std::string test_model_config_json(const TestModelSpec& spec);
std::string test_model_generation_config_json(const TestModelSpec& spec);
Expected<ModelConfig> test_model_config(const TestModelSpec& spec);

// The test model's weights quantized to 4 bits and packed in the spec's
// layout (GPTQ or AWQ, engine/model/quantized_weights.h), every other
// tensor bf16; `config` is test_model_config(spec), `plain` the unquantized
// weights. Round to nearest per group (zero kept exact; classic GPTQ zeros
// from 1, as its zero - 1 storage cannot hold 0). FP8: per block, scale =
// max|w| / 448 stored as weight_scale_inv, weight = e4m3(w / scale) rounded
// to nearest even; the MoE router and shared-expert gate stay bf16.
Expected<std::vector<StoredTensor>> quantized_test_tensors(const ModelConfig& config, const WeightSource& plain,
                                                        const TestModelSpec& spec);

struct WrittenFile {
  std::string path;
  uint64_t bytes = 0;
};

struct WriteOptions {
  // Folder holding tokenizer.json and tokenizer_config.json; empty: write no tokenizer files.
  std::string tokenizer_dir;
  bool replace_existing = false;  // else a non-empty out_dir is an error
};

// Builds the model in a temp folder beside out_dir and renames it into place,
// so out_dir is either absent/untouched or complete.
Expected<std::vector<WrittenFile>> write_test_model(const std::string& out_dir,
                                                    const TestModelSpec& spec,
                                                    const WriteOptions& options = {});

}  // namespace xft::engine
