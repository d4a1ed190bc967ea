#include "engine/checkpoint/test_model.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "common/atomic_file.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/tokenizer/tiktoken.h"

namespace xft::engine {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

constexpr int kEndOfText = 151643;  // <|endoftext|>
constexpr int kImEnd = 151645;      // <|im_end|>
constexpr int kQwen35ImEnd = 248046;     // Qwen3.5's <|im_end|>
constexpr int kQwen35EndOfText = 248044; // Qwen3.5's <|endoftext|>

Expected<int> int_arg(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    long value = std::stol(text, &used);
    if (used == text.size() && value >= 0 && value <= INT32_MAX) return int(value);
  } catch (const std::exception&) {
  }
  return make_error(flag + ": expected a non-negative integer, got \"" + text + "\"");
}

Expected<void> set_generator_option(TestModelSpec& spec, const std::string& flag,
                                    const std::string& value) {
  auto set_int = [&](int& field) -> Expected<void> {
    auto parsed = int_arg(flag, value);
    if (!parsed) return parsed.error();
    field = *parsed;
    return {};
  };
  if (flag == "--arch") {
    auto arch = parse_architecture(value);
    if (!arch) return arch.error();
    spec.arch = *arch;
    return {};
  }
  if (flag == "--seed") {
    try {
      size_t used = 0;
      spec.seed = std::stoull(value, &used);
      if (used == value.size() && value[0] != '-') return {};
    } catch (const std::exception&) {
    }
    return make_error("--seed: expected a non-negative integer, got \"" + value + "\"");
  }
  if (flag == "--rope-theta") {
    try {
      size_t used = 0;
      spec.rope_theta = std::stod(value, &used);
      if (used == value.size()) return {};
    } catch (const std::exception&) {
    }
    return make_error("--rope-theta: expected a number, got \"" + value + "\"");
  }
  if (flag == "--tie") {
    if (value != "0" && value != "1") return make_error("--tie: expected 0 or 1, got \"" + value + "\"");
    spec.tie = value == "1";
    return {};
  }
  if (flag == "--norm-topk") {
    if (value != "0" && value != "1") return make_error("--norm-topk: expected 0 or 1, got \"" + value + "\"");
    spec.norm_topk = value == "1";
    return {};
  }
  if (flag == "--partial-rotary") {
    try {
      size_t used = 0;
      spec.partial_rotary = std::stod(value, &used);
      if (used == value.size()) return {};
    } catch (const std::exception&) {
    }
    return make_error("--partial-rotary: expected a number, got \"" + value + "\"");
  }
  if (flag == "--linear-k-heads") return set_int(spec.linear_key_heads);
  if (flag == "--linear-v-heads") return set_int(spec.linear_value_heads);
  if (flag == "--linear-head-dim") return set_int(spec.linear_head_dim);
  if (flag == "--conv-kernel") return set_int(spec.conv_kernel);
  if (flag == "--full-attn-interval") return set_int(spec.full_attn_interval);
  if (flag == "--experts") return set_int(spec.experts);
  if (flag == "--topk") return set_int(spec.topk);
  if (flag == "--moe-inter") return set_int(spec.moe_intermediate);
  if (flag == "--shared-inter") return set_int(spec.shared_intermediate);
  if (flag == "--hidden") return set_int(spec.hidden);
  if (flag == "--layers") return set_int(spec.layers);
  if (flag == "--heads") return set_int(spec.heads);
  if (flag == "--kv-heads") return set_int(spec.kv_heads);
  if (flag == "--head-dim") return set_int(spec.head_dim);
  if (flag == "--inter") return set_int(spec.intermediate);
  if (flag == "--vocab") return set_int(spec.vocab);
  if (flag == "--max-pos") return set_int(spec.max_positions);
  return make_error("unknown test-model option " + flag);
}

Error spec_error(const std::string& flag, const std::string& problem) {
  return make_error("--" + flag + ": " + problem);
}

int effective_head_dim(const TestModelSpec& spec) {
  return spec.arch == Architecture::qwen1 ? spec.hidden / spec.heads : spec.head_dim;
}

uint64_t file_size_or_zero(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

Expected<void> write_tokenizer_files(const fs::path& dir, const TestModelSpec& spec,
                                     const std::string& tokenizer_dir) {
  fs::path source(tokenizer_dir);
  auto tokenizer_json = read_file((source / "tokenizer.json").string());
  if (!tokenizer_json) return tokenizer_json.error();
  if (spec.arch == Architecture::qwen1) {
    auto tiktoken = tiktoken_from_tokenizer_json(*tokenizer_json);
    if (!tiktoken) {
      return make_error((source / "tokenizer.json").string() + ": " + tiktoken.error().message);
    }
    return write_file_atomic((dir / "qwen.tiktoken").string(), *tiktoken);
  }
  auto tokenizer_config = read_file((source / "tokenizer_config.json").string());
  if (!tokenizer_config) return tokenizer_config.error();
  auto written = write_file_atomic((dir / "tokenizer.json").string(), *tokenizer_json);
  if (!written) return written;
  return write_file_atomic((dir / "tokenizer_config.json").string(), *tokenizer_config);
}

Expected<void> write_model_files(const fs::path& dir, const TestModelSpec& spec,
                                 const WriteOptions& options) {
  auto config = test_model_config(spec);
  if (!config) return config.error();
  auto written = write_file_atomic((dir / "config.json").string(), test_model_config_json(spec));
  if (written) {
    written = write_file_atomic((dir / "generation_config.json").string(),
                                test_model_generation_config_json(spec));
  }
  if (!written) return written;
  ModelConfig plain_config = *config;
  plain_config.quant = QuantConfig{};
  auto weights = make_fake_weights(plain_config, spec.seed);
  if (!spec.quant.empty()) {
    auto tensors = quantized_test_tensors(*config, *weights, spec);
    if (!tensors) return tensors.error();
    written = write_safetensors((dir / "model.safetensors").string(), *tensors);
  } else {
    std::vector<std::string> names;
    for (const auto& tensor : expected_tensors(*config)) names.push_back(tensor.name);
    written = write_safetensors_bf16((dir / "model.safetensors").string(), *weights, names);
  }
  if (!written) return written;
  if (!options.tokenizer_dir.empty()) return write_tokenizer_files(dir, spec, options.tokenizer_dir);
  return {};
}

// Moves the finished temp folder to out_dir; a non-empty out_dir survives unless replacing.
Expected<void> move_into_place(const fs::path& temp, const fs::path& out, bool replace) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) {
      return make_error(out.string() + " exists and is not a directory; choose another output path");
    }
    if (!fs::is_empty(out, ec) && !replace) {
      return make_error(out.string() +
                        " exists and is not empty; remove it or pass --force to replace it");
    }
    fs::path old = out.string() + ".xftctl-old." + std::to_string(::getpid());
    fs::rename(out, old, ec);
    if (ec) return make_error("cannot move " + out.string() + " aside: " + ec.message());
    fs::rename(temp, out, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old, out, ignored);
      return make_error("cannot rename " + temp.string() + " to " + out.string() + ": " + ec.message());
    }
    fs::remove_all(old, ec);
    return {};
  }
  fs::rename(temp, out, ec);
  if (ec) return make_error("cannot rename " + temp.string() + " to " + out.string() + ": " + ec.message());
  return {};
}

Expected<void> validate_qwen35_spec(const TestModelSpec& spec) {
  const std::pair<const char*, int> positive[] = {{"linear-k-heads", spec.linear_key_heads},
                                                  {"linear-v-heads", spec.linear_value_heads},
                                                  {"linear-head-dim", spec.linear_head_dim},
                                                  {"conv-kernel", spec.conv_kernel},
                                                  {"full-attn-interval", spec.full_attn_interval}};
  for (auto [flag, value] : positive) {
    if (value <= 0) return spec_error(flag, "must be positive, got " + std::to_string(value));
  }
  if (spec.linear_value_heads % spec.linear_key_heads != 0) {
    return spec_error("linear-v-heads", "must be a multiple of --linear-k-heads " + std::to_string(spec.linear_key_heads));
  }
  const double rotary = spec.head_dim * spec.partial_rotary;
  if (!(spec.partial_rotary > 0 && spec.partial_rotary <= 1) || rotary != static_cast<int>(rotary) ||
      static_cast<int>(rotary) % 2 != 0) {
    return spec_error("partial-rotary", "--head-dim x it must be a positive even integer, got " + std::to_string(rotary));
  }
  return {};
}

// Qwen3.5-0.8B / Qwen3.5-35B-A3B's config.json with the test shape: the text
// model's settings under text_config, a small vision_config stub (the test
// checkpoints hold no vision tensors), no multi-token-prediction layers.
ordered_json qwen35_config(const TestModelSpec& s) {
  const bool moe = s.arch == Architecture::qwen3_5_moe;
  ordered_json t;
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["attn_output_gate"] = true;
  t["dtype"] = "bfloat16";
  t["eos_token_id"] = kQwen35EndOfText;
  t["full_attention_interval"] = s.full_attn_interval;
  t["head_dim"] = s.head_dim;
  t["hidden_act"] = "silu";
  t["hidden_size"] = s.hidden;
  t["initializer_range"] = 0.02;
  if (!moe) t["intermediate_size"] = s.intermediate;
  ordered_json types = ordered_json::array();
  for (int l = 0; l < s.layers; ++l) types.push_back((l + 1) % s.full_attn_interval == 0 ? "full_attention" : "linear_attention");
  t["layer_types"] = types;
  t["linear_conv_kernel_dim"] = s.conv_kernel;
  t["linear_key_head_dim"] = s.linear_head_dim;
  t["linear_num_key_heads"] = s.linear_key_heads;
  t["linear_num_value_heads"] = s.linear_value_heads;
  t["linear_value_head_dim"] = s.linear_head_dim;
  t["max_position_embeddings"] = s.max_positions;
  t["mlp_only_layers"] = ordered_json::array();
  t["model_type"] = moe ? "qwen3_5_moe_text" : "qwen3_5_text";
  if (moe) t["moe_intermediate_size"] = s.moe_intermediate;
  t["mtp_num_hidden_layers"] = 0;
  t["mtp_use_dedicated_embeddings"] = false;
  t["num_attention_heads"] = s.heads;
  if (moe) {
    t["num_experts"] = s.experts;
    t["num_experts_per_tok"] = s.topk;
  }
  t["num_hidden_layers"] = s.layers;
  t["num_key_value_heads"] = s.kv_heads;
  if (moe) t["output_router_logits"] = false;
  t["rms_norm_eps"] = 1e-6;
  if (moe) {
    t["router_aux_loss_coef"] = 0.001;
    t["shared_expert_intermediate_size"] = s.shared_intermediate;
  }
  t["tie_word_embeddings"] = s.tie;
  t["use_cache"] = true;
  t["vocab_size"] = s.vocab;
  t["mamba_ssm_dtype"] = "float32";
  // The multimodal rotary's sections split the rotary pairs in thirds (as 11/11/10 of 32 in the real models).
  const int pairs = static_cast<int>(s.head_dim * s.partial_rotary) / 2;
  const int third = (pairs + 2) / 3;
  ordered_json rope;
  rope["mrope_interleaved"] = true;
  rope["mrope_section"] = {third, third, pairs - 2 * third};
  rope["rope_type"] = "default";
  if (s.rope_theta == static_cast<int64_t>(s.rope_theta)) {
    rope["rope_theta"] = static_cast<int64_t>(s.rope_theta);
  } else {
    rope["rope_theta"] = s.rope_theta;
  }
  rope["partial_rotary_factor"] = s.partial_rotary;
  t["rope_parameters"] = rope;

  ordered_json c;
  c["architectures"] = {moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"};
  c["image_token_id"] = 248056;
  c["model_type"] = moe ? "qwen3_5_moe" : "qwen3_5";
  c["text_config"] = t;
  c["tie_word_embeddings"] = s.tie;
  c["video_token_id"] = 248057;
  ordered_json v;
  v["deepstack_visual_indexes"] = ordered_json::array();
  v["depth"] = 1;
  v["hidden_act"] = "gelu_pytorch_tanh";
  v["hidden_size"] = 32;
  v["in_channels"] = 3;
  v["initializer_range"] = 0.02;
  v["intermediate_size"] = 64;
  v["model_type"] = "qwen3_5";
  v["num_heads"] = 2;
  v["num_position_embeddings"] = 64;
  v["out_hidden_size"] = s.hidden;
  v["patch_size"] = 16;
  v["spatial_merge_size"] = 2;
  v["temporal_patch_size"] = 2;
  c["vision_config"] = v;
  c["vision_end_token_id"] = 248054;
  c["vision_start_token_id"] = 248053;
  return c;
}

}  // namespace

Expected<Architecture> parse_architecture(const std::string& name) {
  if (name == "qwen") return Architecture::qwen1;
  if (name == "qwen2") return Architecture::qwen2;
  if (name == "qwen3") return Architecture::qwen3;
  if (name == "qwen2_moe") return Architecture::qwen2_moe;
  if (name == "qwen3_moe") return Architecture::qwen3_moe;
  if (name == "qwen3_5") return Architecture::qwen3_5;
  if (name == "qwen3_5_moe") return Architecture::qwen3_5_moe;
  return make_error("--arch: unknown architecture \"" + name +
                    "\" (expected qwen, qwen2, qwen3, qwen2_moe, qwen3_moe, qwen3_5 or qwen3_5_moe)");
}

const char* architecture_flag(Architecture arch) {
  switch (arch) {
    case Architecture::qwen1: return "qwen";
    case Architecture::qwen2: return "qwen2";
    case Architecture::qwen3: return "qwen3";
    case Architecture::qwen2_moe: return "qwen2_moe";
    case Architecture::qwen3_moe: return "qwen3_moe";
    case Architecture::qwen3_5: return "qwen3_5";
    case Architecture::qwen3_5_moe: return "qwen3_5_moe";
  }
  return "?";
}

Expected<TestModelSpec> parse_generator_args(const std::string& line) {
  std::istringstream words(line.substr(0, line.find("--defaults:")));
  TestModelSpec spec;
  std::string flag, value;
  while (words >> flag) {
    if (!(words >> value)) return make_error(flag + ": missing value");
    auto set = set_generator_option(spec, flag, value);
    if (!set) return set.error();
  }
  return spec;
}

Expected<void> validate_spec(const TestModelSpec& spec) {
  const std::pair<const char*, int> positive[] = {
      {"hidden", spec.hidden},   {"layers", spec.layers}, {"heads", spec.heads},
      {"kv-heads", spec.kv_heads}, {"head-dim", spec.head_dim}, {"inter", spec.intermediate},
      {"vocab", spec.vocab},     {"max-pos", spec.max_positions}};
  for (auto [flag, value] : positive) {
    if (value <= 0) return spec_error(flag, "must be positive, got " + std::to_string(value));
  }
  if (!(spec.rope_theta > 0)) return spec_error("rope-theta", "must be positive");
  if (spec.arch == Architecture::qwen1) {
    if (spec.hidden % spec.heads != 0) {
      return spec_error("heads", "must divide --hidden " + std::to_string(spec.hidden) + " for qwen");
    }
    if (spec.intermediate % 2 != 0) {
      return spec_error("inter", "must be even for qwen (w1 and w2 get half each)");
    }
  } else if (spec.heads % spec.kv_heads != 0) {
    return spec_error("kv-heads", "must divide --heads " + std::to_string(spec.heads));
  }
  if (!spec.quant.empty()) {
    if (spec.quant != "gptq" && spec.quant != "awq" && spec.quant != "fp8") {
      return spec_error("quant", "expected gptq, awq or fp8, got \"" + spec.quant + "\"");
    }
    if (spec.group_size != -1 && (spec.group_size <= 0 || spec.group_size % 8 != 0)) {
      return spec_error("group-size", "expected -1 or a positive multiple of 8, got " + std::to_string(spec.group_size));
    }
    if (spec.desc_act && spec.quant != "gptq") return spec_error("desc-act", "only GPTQ checkpoints have desc_act");
  } else if (spec.desc_act) {
    return spec_error("desc-act", "needs --quant gptq");
  }
  const bool qwen35 = spec.arch == Architecture::qwen3_5 || spec.arch == Architecture::qwen3_5_moe;
  if (qwen35) {
    if (auto valid = validate_qwen35_spec(spec); !valid) return valid;
  }
  const bool moe = spec.arch == Architecture::qwen2_moe || spec.arch == Architecture::qwen3_moe ||
                   spec.arch == Architecture::qwen3_5_moe;
  if (moe) {
    if (spec.experts <= 0) return spec_error("experts", "must be positive, got " + std::to_string(spec.experts));
    if (spec.topk <= 0 || spec.topk > spec.experts) {
      return spec_error("topk", "must be between 1 and --experts " + std::to_string(spec.experts) + ", got " +
                                    std::to_string(spec.topk));
    }
    if (spec.moe_intermediate <= 0) {
      return spec_error("moe-inter", "must be positive, got " + std::to_string(spec.moe_intermediate));
    }
    if ((spec.arch == Architecture::qwen2_moe || spec.arch == Architecture::qwen3_5_moe) && spec.shared_intermediate <= 0) {
      return spec_error("shared-inter", "must be positive, got " + std::to_string(spec.shared_intermediate));
    }
    // Qwen2-MoE's config.json has no head_dim: the model takes hidden_size / num_attention_heads.
    if (spec.arch == Architecture::qwen2_moe && spec.head_dim * spec.heads != spec.hidden) {
      return spec_error("head-dim", "qwen2_moe derives it as --hidden / --heads = " +
                                        std::to_string(spec.hidden / spec.heads) + "; pass that value");
    }
  }
  if (effective_head_dim(spec) % 2 != 0) {
    return spec_error("head-dim", "must be even for rotary embeddings, got " +
                                      std::to_string(effective_head_dim(spec)));
  }
  return {};
}

static ordered_json quantization_config(const TestModelSpec& s) {
  ordered_json q;
  if (s.quant == "gptq") {
    q["quant_method"] = "gptq";
    q["bits"] = 4;
    q["group_size"] = s.group_size;
    q["desc_act"] = s.desc_act;
    q["sym"] = false;
    q["checkpoint_format"] = "gptq";
  } else if (s.quant == "fp8") {
    // Qwen3-*-FP8's quantization_config, key for key.
    q["activation_scheme"] = "dynamic";
    q["fmt"] = "e4m3";
    q["quant_method"] = "fp8";
    q["weight_block_size"] = {kTestFp8Block, kTestFp8Block};
    if (s.arch == Architecture::qwen3_5 || s.arch == Architecture::qwen3_5_moe) {
      // Qwen3.5-*-FP8 list, module by module, what they keep in bf16: among
      // the projections, each Gated DeltaNet's in_proj_a and in_proj_b (one
      // row per value head: a 128-row block would span every rank's heads).
      ordered_json skipped = ordered_json::array({"lm_head", "model.language_model.embed_tokens"});
      for (int l = 0; l < s.layers; ++l) {
        if ((l + 1) % s.full_attn_interval == 0) continue;
        const std::string p = "model.language_model.layers." + std::to_string(l) + ".linear_attn.";
        skipped.push_back(p + "in_proj_a");
        skipped.push_back(p + "in_proj_b");
      }
      q["modules_to_not_convert"] = skipped;
    }
  } else {
    q["quant_method"] = "awq";
    q["bits"] = 4;
    q["group_size"] = s.group_size;
    q["version"] = "gemm";
    q["zero_point"] = true;
  }
  return q;
}

// Every field of Qwen3-30B-A3B's config.json, with the test shape (the
// golden files list this exact object).
static ordered_json qwen3_moe_config(const TestModelSpec& s) {
  ordered_json c;
  c["architectures"] = {"Qwen3MoeForCausalLM"};
  c["attention_bias"] = false;
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = kEndOfText;
  c["decoder_sparse_step"] = 1;
  c["eos_token_id"] = kImEnd;
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.intermediate;
  c["max_position_embeddings"] = s.max_positions;
  c["max_window_layers"] = s.layers;
  c["mlp_only_layers"] = ordered_json::array();
  c["model_type"] = "qwen3_moe";
  c["moe_intermediate_size"] = s.moe_intermediate;
  c["norm_topk_prob"] = s.norm_topk;
  c["num_attention_heads"] = s.heads;
  c["num_experts"] = s.experts;
  c["num_experts_per_tok"] = s.topk;
  c["num_hidden_layers"] = s.layers;
  c["num_key_value_heads"] = s.kv_heads;
  c["output_router_logits"] = false;
  c["rms_norm_eps"] = 1e-6;
  c["rope_scaling"] = nullptr;
  c["rope_theta"] = s.rope_theta;
  c["router_aux_loss_coef"] = 0.001;
  c["sliding_window"] = nullptr;
  c["tie_word_embeddings"] = s.tie;
  c["torch_dtype"] = "bfloat16";
  c["use_cache"] = true;
  c["use_sliding_window"] = false;
  c["vocab_size"] = s.vocab;
  return c;
}

// Every field of Qwen1.5-MoE-A2.7B's config.json, with the test shape.
static ordered_json qwen2_moe_config(const TestModelSpec& s) {
  ordered_json c;
  c["architectures"] = {"Qwen2MoeForCausalLM"};
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = kEndOfText;
  c["eos_token_id"] = kEndOfText;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.intermediate;
  c["max_position_embeddings"] = s.max_positions;
  c["max_window_layers"] = s.layers;
  c["model_type"] = "qwen2_moe";
  c["num_attention_heads"] = s.heads;
  c["num_hidden_layers"] = s.layers;
  c["num_key_value_heads"] = s.kv_heads;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = s.rope_theta;
  c["sliding_window"] = s.max_positions;
  c["tie_word_embeddings"] = s.tie;
  c["torch_dtype"] = "bfloat16";
  c["use_cache"] = true;
  c["use_sliding_window"] = false;
  c["vocab_size"] = s.vocab;
  c["decoder_sparse_step"] = 1;
  c["moe_intermediate_size"] = s.moe_intermediate;
  c["shared_expert_intermediate_size"] = s.shared_intermediate;
  c["num_experts_per_tok"] = s.topk;
  c["num_experts"] = s.experts;
  c["norm_topk_prob"] = s.norm_topk;
  c["output_router_logits"] = false;
  c["router_aux_loss_coef"] = 0.001;
  return c;
}

std::string test_model_config_json(const TestModelSpec& s) {
  if (s.arch == Architecture::qwen3_5 || s.arch == Architecture::qwen3_5_moe) {
    ordered_json c = qwen35_config(s);
    if (!s.quant.empty()) c["quantization_config"] = quantization_config(s);
    return c.dump(2) + "\n";
  }
  ordered_json c;
  if (!s.quant.empty()) c["quantization_config"] = quantization_config(s);
  if (s.arch == Architecture::qwen1) {
    c["architectures"] = {"QWenLMHeadModel"};
    c["model_type"] = "qwen";
    c["hidden_size"] = s.hidden;
    c["intermediate_size"] = s.intermediate;
    c["num_hidden_layers"] = s.layers;
    c["num_attention_heads"] = s.heads;
    c["kv_channels"] = s.hidden / s.heads;
    c["vocab_size"] = s.vocab;
    c["seq_length"] = s.max_positions;
    c["max_position_embeddings"] = s.max_positions;
    c["layer_norm_epsilon"] = 1e-6;
    c["rotary_emb_base"] = s.rope_theta;
    c["rotary_pct"] = 1.0;
    c["no_bias"] = true;
    c["tie_word_embeddings"] = false;
    c["bf16"] = true;
    c["use_dynamic_ntk"] = false;
    c["use_logn_attn"] = false;
    return c.dump(2) + "\n";
  }
  if (s.arch == Architecture::qwen3_moe || s.arch == Architecture::qwen2_moe) {
    ordered_json moe = s.arch == Architecture::qwen3_moe ? qwen3_moe_config(s) : qwen2_moe_config(s);
    // Qwen3-30B-A3B-Instruct-2507-FP8 adds it after the model's own fields.
    if (!s.quant.empty()) moe["quantization_config"] = quantization_config(s);
    return moe.dump(2) + "\n";
  }
  bool qwen3 = s.arch == Architecture::qwen3;
  c["architectures"] = {qwen3 ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM"};
  c["model_type"] = qwen3 ? "qwen3" : "qwen2";
  c["hidden_size"] = s.hidden;
  c["intermediate_size"] = s.intermediate;
  c["num_hidden_layers"] = s.layers;
  c["num_attention_heads"] = s.heads;
  c["num_key_value_heads"] = s.kv_heads;
  c["head_dim"] = s.head_dim;
  c["vocab_size"] = s.vocab;
  c["max_position_embeddings"] = s.max_positions;
  c["rms_norm_eps"] = 1e-6;
  c["rope_theta"] = s.rope_theta;
  c["hidden_act"] = "silu";
  c["tie_word_embeddings"] = s.tie;
  c["torch_dtype"] = "bfloat16";
  c["bos_token_id"] = kEndOfText;
  c["eos_token_id"] = kImEnd;
  c["attention_bias"] = !qwen3;
  c["use_sliding_window"] = false;
  return c.dump(2) + "\n";
}

std::string test_model_generation_config_json(const TestModelSpec& s) {
  ordered_json g;
  if (s.arch == Architecture::qwen3_5 || s.arch == Architecture::qwen3_5_moe) {
    g["bos_token_id"] = kQwen35EndOfText;
    g["eos_token_id"] = {kQwen35ImEnd, kQwen35EndOfText};
    g["pad_token_id"] = kQwen35EndOfText;
    return g.dump(2) + "\n";
  }
  if (s.arch == Architecture::qwen1) {
    g["chat_format"] = "chatml";
    g["eos_token_id"] = kEndOfText;
    g["pad_token_id"] = kEndOfText;
  } else {
    g["bos_token_id"] = kEndOfText;
    g["eos_token_id"] = {kImEnd, kEndOfText};
    g["pad_token_id"] = kEndOfText;
  }
  return g.dump(2) + "\n";
}

Expected<ModelConfig> test_model_config(const TestModelSpec& spec) {
  auto valid = validate_spec(spec);
  if (!valid) return valid.error();
  return parse_config(test_model_config_json(spec), "config.json");
}

Expected<std::vector<WrittenFile>> write_test_model(const std::string& out_dir,
                                                    const TestModelSpec& spec,
                                                    const WriteOptions& options) {
  auto valid = validate_spec(spec);
  if (!valid) return valid.error();
  fs::path out = fs::path(out_dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "dir/" -> "dir"
  // A private directory with an unguessable name: nobody can plant links in it
  // while the files are written (they are opened without O_NOFOLLOW).
  std::error_code ec;
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  std::string temp_name = out.string() + ".xftctl-tmp.XXXXXX";
  if (!::mkdtemp(temp_name.data())) return make_error("cannot create " + temp_name + ": " + std::strerror(errno));
  fs::path temp = temp_name;
  auto written = write_model_files(temp, spec, options);
  // mkdtemp made it 0700; a model directory is for every user of the machine.
  if (written && ::chmod(temp.c_str(), 0755) != 0)
    written = make_error("cannot chmod " + temp.string() + ": " + std::strerror(errno));
  if (written) written = move_into_place(temp, out, options.replace_existing);
  if (!written) {
    fs::remove_all(temp, ec);
    return written.error();
  }
  std::vector<WrittenFile> files;
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors",
                           "tokenizer.json", "tokenizer_config.json", "qwen.tiktoken"}) {
    fs::path path = out / name;
    if (fs::exists(path, ec)) files.push_back({path.string(), file_size_or_zero(path)});
  }
  return files;
}

}  // namespace xft::engine
