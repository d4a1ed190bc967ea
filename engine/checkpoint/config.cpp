// config.json of the three Qwen generations, mapped onto one ModelConfig.
// Every problem is reported as "<path>: <field>: <what is wrong>".
#include "engine/checkpoint/config.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"

namespace xft::engine {
namespace {

using json = nlohmann::json;

constexpr const char* kSupported =
    "QWenLMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
    "Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration";

// Short rendering of a wrong value for an error message.
std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

class Fields {
 public:
  Fields(const json& root, const std::string& path) : root_(root), path_(path) {}

  Error error(const std::string& field, const std::string& problem) const {
    return make_error(path_ + ": " + field + ": " + problem);
  }
  bool present(const char* field) const {
    return root_.contains(field) && !root_.at(field).is_null();
  }

  Expected<int> positive_int(const char* field) const {
    if (!present(field)) return error(field, "missing (a positive integer is required)");
    return positive_int_value(field, root_.at(field));
  }
  Expected<int> positive_int(const char* field, int fallback) const {
    if (!present(field)) return fallback;
    return positive_int_value(field, root_.at(field));
  }
  Expected<double> positive_number(const char* field, double fallback) const {
    if (!present(field)) return fallback;
    const json& value = root_.at(field);
    if (!value.is_number() || value.get<double>() <= 0) {
      return error(field, "expected a positive number, got " + shown(value));
    }
    return value.get<double>();
  }
  Expected<bool> boolean(const char* field, bool fallback) const {
    if (!present(field)) return fallback;
    const json& value = root_.at(field);
    if (!value.is_boolean()) return error(field, "expected true or false, got " + shown(value));
    return value.get<bool>();
  }
  Expected<std::string> string(const char* field, std::string fallback) const {
    if (!present(field)) return fallback;
    const json& value = root_.at(field);
    if (!value.is_string()) return error(field, "expected a string, got " + shown(value));
    return value.get<std::string>();
  }
  // A token id or a list of them (eos_token_id is a list in newer configs).
  Expected<std::vector<int>> token_ids(const char* field) const {
    std::vector<int> ids;
    if (!present(field)) return ids;
    const json& value = root_.at(field);
    auto one = [&](const json& item) -> bool {
      if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX) {
        return false;
      }
      ids.push_back(int(item.get<int64_t>()));
      return true;
    };
    bool ok = value.is_array() ? std::all_of(value.begin(), value.end(), one) : one(value);
    if (!ok) return error(field, "expected a token id or a list of token ids, got " + shown(value));
    return ids;
  }

 private:
  Expected<int> positive_int_value(const char* field, const json& value) const {
    if (!value.is_number_integer() || value.get<int64_t>() <= 0 ||
        value.get<int64_t>() > INT32_MAX) {
      return error(field, "expected a positive integer, got " + shown(value));
    }
    return int(value.get<int64_t>());
  }

  const json& root_;
  std::string path_;
};

#define XFT_TRY_ASSIGN(target, expr)        \
  do {                                      \
    auto xft_result_ = (expr);              \
    if (!xft_result_) return xft_result_.error(); \
    target = std::move(*xft_result_);       \
  } while (0)

Expected<Architecture> architecture_of(const json& root, const Fields& fields, std::string& name) {
  if (!root.contains("architectures")) {
    return fields.error("architectures", std::string("missing (expected one of ") + kSupported + ")");
  }
  const json& list = root.at("architectures");
  if (!list.is_array() || list.empty() || !list[0].is_string()) {
    return fields.error("architectures", "expected a list with the model class name, got " + shown(list));
  }
  name = list[0].get<std::string>();
  if (name == "QWenLMHeadModel") return Architecture::qwen1;
  if (name == "Qwen2ForCausalLM") return Architecture::qwen2;
  if (name == "Qwen3ForCausalLM") return Architecture::qwen3;
  if (name == "Qwen2MoeForCausalLM") return Architecture::qwen2_moe;
  if (name == "Qwen3MoeForCausalLM") return Architecture::qwen3_moe;
  if (name == "Qwen3_5ForConditionalGeneration" || name == "Qwen3_5ForCausalLM") return Architecture::qwen3_5;
  if (name == "Qwen3_5MoeForConditionalGeneration" || name == "Qwen3_5MoeForCausalLM") return Architecture::qwen3_5_moe;
  return fields.error("architectures",
                      "architecture " + name + " is not supported (supported: " + kSupported + ")");
}

// Qwen1 names its fields differently and always has c_attn bias, MHA and an untied lm_head.
Expected<void> read_qwen1(const Fields& f, ModelConfig& c) {
  XFT_TRY_ASSIGN(c.hidden, f.positive_int("hidden_size"));
  XFT_TRY_ASSIGN(c.layers, f.positive_int("num_hidden_layers"));
  XFT_TRY_ASSIGN(c.heads, f.positive_int("num_attention_heads"));
  XFT_TRY_ASSIGN(c.vocab, f.positive_int("vocab_size"));
  int intermediate_size = 0;
  XFT_TRY_ASSIGN(intermediate_size, f.positive_int("intermediate_size"));
  if (intermediate_size % 2 != 0) {
    return f.error("intermediate_size", "must be even (Qwen1 splits it between mlp.w1 and mlp.w2), got " +
                                            std::to_string(intermediate_size));
  }
  c.intermediate = intermediate_size / 2;
  if (!f.present("kv_channels") && c.hidden % c.heads != 0) {
    return f.error("num_attention_heads", "hidden_size " + std::to_string(c.hidden) +
                                              " is not divisible by it; set kv_channels");
  }
  XFT_TRY_ASSIGN(c.head_dim, f.positive_int("kv_channels", c.hidden / c.heads));
  c.kv_heads = c.heads;
  c.qkv_bias = true;
  c.tie_embeddings = false;
  XFT_TRY_ASSIGN(c.rms_eps, f.positive_number("layer_norm_epsilon", 1e-6));
  XFT_TRY_ASSIGN(c.rope_theta, f.positive_number("rotary_emb_base", 10000.0));
  double rotary_pct = 1.0;
  XFT_TRY_ASSIGN(rotary_pct, f.positive_number("rotary_pct", 1.0));
  if (rotary_pct != 1.0) return f.error("rotary_pct", "only 1.0 (rotary on the whole head) is supported");
  int seq_length = 0;
  XFT_TRY_ASSIGN(seq_length, f.positive_int("seq_length", 8192));
  XFT_TRY_ASSIGN(c.max_positions, f.positive_int("max_position_embeddings", seq_length));
  XFT_TRY_ASSIGN(c.torch_dtype, f.string("torch_dtype", ""));
  if (c.torch_dtype.empty()) {
    bool bf16 = false, fp16 = false;
    XFT_TRY_ASSIGN(bf16, f.boolean("bf16", false));
    XFT_TRY_ASSIGN(fp16, f.boolean("fp16", false));
    c.torch_dtype = bf16 ? "bfloat16" : fp16 ? "float16" : "";
  }
  return {};
}

Expected<void> read_qwen2_or_3(const Fields& f, ModelConfig& c) {
  XFT_TRY_ASSIGN(c.hidden, f.positive_int("hidden_size"));
  XFT_TRY_ASSIGN(c.layers, f.positive_int("num_hidden_layers"));
  XFT_TRY_ASSIGN(c.heads, f.positive_int("num_attention_heads"));
  XFT_TRY_ASSIGN(c.vocab, f.positive_int("vocab_size"));
  XFT_TRY_ASSIGN(c.intermediate, f.positive_int("intermediate_size"));
  XFT_TRY_ASSIGN(c.kv_heads, f.positive_int("num_key_value_heads", c.heads));
  if (c.heads % c.kv_heads != 0) {
    return f.error("num_key_value_heads", std::to_string(c.kv_heads) +
                                              " does not divide num_attention_heads " +
                                              std::to_string(c.heads));
  }
  // Qwen3-MoE's attention is Qwen3's (q/k norms, explicit head_dim); Qwen2-MoE's is Qwen2's.
  bool qwen3 = c.arch == Architecture::qwen3 || c.arch == Architecture::qwen3_moe;
  if (qwen3) {
    XFT_TRY_ASSIGN(c.head_dim, f.positive_int("head_dim", 128));  // Qwen3Config's default
  } else {
    if (!f.present("head_dim") && c.hidden % c.heads != 0) {
      return f.error("num_attention_heads", "hidden_size " + std::to_string(c.hidden) +
                                                " is not divisible by it; set head_dim");
    }
    XFT_TRY_ASSIGN(c.head_dim, f.positive_int("head_dim", c.hidden / c.heads));
  }
  if (c.head_dim % 2 != 0) return f.error("head_dim", "must be even for rotary embeddings");
  XFT_TRY_ASSIGN(c.rope_theta, f.positive_number("rope_theta", 10000.0));
  XFT_TRY_ASSIGN(c.rms_eps, f.positive_number("rms_norm_eps", 1e-6));
  XFT_TRY_ASSIGN(c.max_positions, f.positive_int("max_position_embeddings", 32768));
  XFT_TRY_ASSIGN(c.tie_embeddings, f.boolean("tie_word_embeddings", false));
  XFT_TRY_ASSIGN(c.torch_dtype, f.string("torch_dtype", ""));
  // Qwen2 always has q/k/v bias whatever attention_bias says; Qwen3 follows the flag.
  if (qwen3) {
    XFT_TRY_ASSIGN(c.qkv_bias, f.boolean("attention_bias", false));
  } else {
    c.qkv_bias = true;
  }
  c.qk_norm = qwen3;
  std::string act;
  XFT_TRY_ASSIGN(act, f.string("hidden_act", "silu"));
  if (act != "silu") return f.error("hidden_act", "only silu is supported, got \"" + act + "\"");
  if (f.present("rope_scaling")) {
    return f.error("rope_scaling", "rope scaling is not supported; remove it or set it to null");
  }
  return {};
}

// The sparse feed-forward fields of Qwen2-MoE / Qwen3-MoE. The sizes are
// required (every published config.json has them); the routing switches take
// transformers' defaults.
Expected<void> read_moe(const json& root, const Fields& f, ModelConfig& c) {
  MoeConfig& moe = c.moe;
  XFT_TRY_ASSIGN(moe.experts, f.positive_int("num_experts"));
  XFT_TRY_ASSIGN(moe.experts_per_token, f.positive_int("num_experts_per_tok"));
  if (moe.experts_per_token > moe.experts) {
    return f.error("num_experts_per_tok", std::to_string(moe.experts_per_token) + " exceeds num_experts " +
                                              std::to_string(moe.experts));
  }
  XFT_TRY_ASSIGN(moe.expert_intermediate, f.positive_int("moe_intermediate_size"));
  if (c.arch == Architecture::qwen2_moe || c.arch == Architecture::qwen3_5_moe) {
    XFT_TRY_ASSIGN(moe.shared_expert_intermediate, f.positive_int("shared_expert_intermediate_size"));
  } else if (f.present("shared_expert_intermediate_size")) {
    return f.error("shared_expert_intermediate_size",
                   "Qwen3-MoE has no shared expert; remove the field or use Qwen2MoeForCausalLM");
  }
  XFT_TRY_ASSIGN(moe.norm_topk_prob, f.boolean("norm_topk_prob", false));
  XFT_TRY_ASSIGN(moe.decoder_sparse_step, f.positive_int("decoder_sparse_step", 1));
  if (f.present("mlp_only_layers")) {
    const json& list = root.at("mlp_only_layers");
    if (!list.is_array()) return f.error("mlp_only_layers", "expected a list of layer indices, got " + shown(list));
    for (const json& item : list) {
      if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() >= c.layers) {
        return f.error("mlp_only_layers", "expected layer indices in [0, " + std::to_string(c.layers) +
                                              ") (num_hidden_layers), got " + shown(item));
      }
      moe.mlp_only_layers.push_back(int(item.get<int64_t>()));
    }
  }
  return {};
}

// quantization_config of an FP8 checkpoint as Qwen publishes them:
// {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
// "weight_block_size": [128, 128]}. Activations stay float here (weight-only
// decode), so "dynamic" is what the checkpoint means; block columns must be a
// multiple of the kernels' 64-input unit.
Expected<QuantConfig> read_fp8(const json& qc, Fields& f) {
  QuantConfig q;
  q.method = QuantMethod::fp8;
  q.bits = 8;
  std::string fmt;
  XFT_TRY_ASSIGN(fmt, f.string("fmt", "e4m3"));
  if (fmt != "e4m3") return f.error("fmt", "\"" + fmt + "\" is not supported (only e4m3 FP8 weights are)");
  std::string activations;
  XFT_TRY_ASSIGN(activations, f.string("activation_scheme", "dynamic"));
  if (activations != "dynamic") {
    return f.error("activation_scheme", "\"" + activations + "\" is not supported (only dynamic: no stored input scales)");
  }
  if (!f.present("weight_block_size")) {
    return f.error("weight_block_size", "missing (per-tensor FP8 scales are not supported; Qwen's FP8 checkpoints "
                                        "give [128, 128])");
  }
  const json& block = qc.at("weight_block_size");
  const bool two_ints = block.is_array() && block.size() == 2 && block[0].is_number_integer() &&
                        block[1].is_number_integer() && block[0].get<int64_t>() > 0 && block[1].get<int64_t>() > 0 &&
                        block[0].get<int64_t>() <= INT32_MAX && block[1].get<int64_t>() <= INT32_MAX;
  if (!two_ints) return f.error("weight_block_size", "expected [rows, columns] of positive integers, got " + shown(block));
  q.block_rows = int(block[0].get<int64_t>());
  q.block_cols = int(block[1].get<int64_t>());
  if (q.block_cols % 64 != 0) {
    return f.error("weight_block_size", shown(block) + " is not supported (block columns must be a multiple of 64)");
  }
  // Qwen3.5's FP8 checkpoints keep the one-row-per-head in_proj_a/in_proj_b
  // in bf16 and list them here.
  if (f.present("modules_to_not_convert") && !qc.at("modules_to_not_convert").is_null()) {
    const json& modules = qc.at("modules_to_not_convert");
    constexpr size_t kMostModules = 1 << 20;
    if (!modules.is_array() || modules.size() > kMostModules) {
      return f.error("modules_to_not_convert", "expected an array of module names, got " + shown(modules));
    }
    for (const json& m : modules) {
      if (!m.is_string() || m.get<std::string>().empty() || m.get<std::string>().size() > 1024) {
        return f.error("modules_to_not_convert", "expected module names (non-empty strings), got " + shown(m));
      }
      q.modules_to_not_convert.push_back(m.get<std::string>());
    }
  }
  return q;
}

// quantization_config: 4-bit GPTQ (classic or gptq_v2 zeros, any group
// size, desc_act) and AWQ GEMM with zero points; anything else is refused
// naming the field and its value.
Expected<QuantConfig> read_quantization(const json& root, const std::string& path) {
  QuantConfig q;
  if (!root.contains("quantization_config") || root.at("quantization_config").is_null()) return q;
  const json& qc = root.at("quantization_config");
  const std::string where = path + ": quantization_config";
  if (!qc.is_object()) return make_error(where + ": expected an object, got " + shown(qc));
  Fields f(qc, where);
  std::string method;
  XFT_TRY_ASSIGN(method, f.string("quant_method", ""));
  if (method == "gptq") {
    q.method = QuantMethod::gptq;
  } else if (method == "awq") {
    q.method = QuantMethod::awq;
  } else if (method == "fp8") {
    return read_fp8(qc, f);
  } else {
    return f.error("quant_method", "\"" + method + "\" is not supported (supported: gptq, awq with 4 bits; fp8)");
  }
  int bits = 0;
  XFT_TRY_ASSIGN(bits, f.positive_int(q.method == QuantMethod::awq && !f.present("bits") ? "w_bit" : "bits"));
  if (bits != 4) return f.error("bits", std::to_string(bits) + " is not supported (only 4-bit weights are)");
  q.bits = bits;
  const char* group_field = q.method == QuantMethod::awq && !f.present("group_size") ? "q_group_size" : "group_size";
  if (!f.present(group_field)) return f.error(group_field, "missing");
  const json& group = qc.at(group_field);
  if (!group.is_number_integer() || (group.get<int64_t>() != -1 && group.get<int64_t>() <= 0) ||
      group.get<int64_t>() > INT32_MAX) {
    return f.error(group_field, "expected a positive integer or -1, got " + shown(group));
  }
  q.group_size = int(group.get<int64_t>());
  if (q.group_size > 0 && q.group_size % 8 != 0) {
    return f.error(group_field, std::to_string(q.group_size) + " is not supported (a multiple of 8, or -1)");
  }
  if (q.method == QuantMethod::gptq) {
    XFT_TRY_ASSIGN(q.desc_act, f.boolean("desc_act", false));
    XFT_TRY_ASSIGN(q.sym, f.boolean("sym", true));
    std::string format;
    XFT_TRY_ASSIGN(format, f.string("checkpoint_format", "gptq"));
    if (format != "gptq" && format != "gptq_v2") {
      return f.error("checkpoint_format", "\"" + format + "\" is not supported (supported: gptq, gptq_v2)");
    }
    q.zero_minus_one = format == "gptq";
    bool marlin = false;
    XFT_TRY_ASSIGN(marlin, f.boolean("is_marlin_format", false));
    if (marlin) return f.error("is_marlin_format", "true is not supported (the Marlin repacked layout)");
  } else {
    std::string version;
    XFT_TRY_ASSIGN(version, f.string("version", "gemm"));
    if (version != "gemm") {
      return f.error("version", "\"" + version + "\" is not supported (only the GEMM layout, version gemm)");
    }
    bool zero_point = true;
    XFT_TRY_ASSIGN(zero_point, f.boolean("zero_point", true));
    if (!zero_point) return f.error("zero_point", "false is not supported (AWQ GEMM with zero points only)");
    q.sym = false;
    q.zero_minus_one = false;
  }
  return q;
}

void add_unique(std::vector<int>& into, const std::vector<int>& ids) {
  for (int id : ids) {
    if (std::find(into.begin(), into.end(), id) == into.end()) into.push_back(id);
  }
}

Expected<json> parse_json_object(const std::string& text, const std::string& path) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    return make_error(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!root.is_object()) return make_error(path + ": expected a JSON object at the top level");
  return root;
}

// Qwen3.5's layer_types list, or its full_attention_interval rule (every
// interval-th layer is full attention) when the list is absent.
Expected<void> read_layer_types(const json& text, const Fields& f, ModelConfig& c) {
  std::vector<char>& linear = c.linear.is_linear;
  if (f.present("layer_types")) {
    const json& list = text.at("layer_types");
    if (!list.is_array() || list.size() != static_cast<size_t>(c.layers)) {
      return f.error("layer_types", "expected a list of num_hidden_layers (" + std::to_string(c.layers) +
                                        ") entries, got " + shown(list));
    }
    for (const json& item : list) {
      if (item == "linear_attention") {
        linear.push_back(1);
      } else if (item == "full_attention") {
        linear.push_back(0);
      } else {
        return f.error("layer_types", "expected \"linear_attention\" or \"full_attention\", got " + shown(item));
      }
    }
    return {};
  }
  int interval = 0;
  XFT_TRY_ASSIGN(interval, f.positive_int("full_attention_interval", 4));
  for (int l = 0; l < c.layers; ++l) linear.push_back((l + 1) % interval == 0 ? 0 : 1);
  return {};
}

// rope_parameters (current configs) or the older top-level rope_theta and
// partial_rotary_factor. The multimodal rotary sections only differ for
// image positions; text positions are equal on all three axes, which makes
// it the plain rotate-half rotary on the first rotary_dim elements.
Expected<void> read_qwen35_rope(const json& text, const Fields& f, const std::string& where, ModelConfig& c) {
  double factor = 1.0;
  XFT_TRY_ASSIGN(c.rope_theta, f.positive_number("rope_theta", 10000000.0));
  XFT_TRY_ASSIGN(factor, f.positive_number("partial_rotary_factor", 0.25));
  if (f.present("rope_parameters")) {
    const json& rope = text.at("rope_parameters");
    if (!rope.is_object()) return f.error("rope_parameters", "expected an object, got " + shown(rope));
    Fields r(rope, where + ": rope_parameters");
    XFT_TRY_ASSIGN(c.rope_theta, r.positive_number("rope_theta", c.rope_theta));
    XFT_TRY_ASSIGN(factor, r.positive_number("partial_rotary_factor", factor));
    std::string type;
    XFT_TRY_ASSIGN(type, r.string("rope_type", "default"));
    if (type != "default") return r.error("rope_type", "\"" + type + "\" is not supported (only default)");
  }
  const double dims = c.head_dim * factor;
  c.rotary_dim = static_cast<int>(dims);
  if (factor > 1.0 || c.rotary_dim != dims || c.rotary_dim % 2 != 0 || c.rotary_dim == 0) {
    return f.error("partial_rotary_factor", "head_dim " + std::to_string(c.head_dim) + " x " + std::to_string(factor) +
                                                " must be a positive even number of rotary dimensions");
  }
  return {};
}

Expected<void> read_linear_attention(const Fields& f, ModelConfig& c) {
  LinearAttentionConfig& l = c.linear;
  XFT_TRY_ASSIGN(l.key_heads, f.positive_int("linear_num_key_heads"));
  XFT_TRY_ASSIGN(l.value_heads, f.positive_int("linear_num_value_heads"));
  XFT_TRY_ASSIGN(l.key_head_dim, f.positive_int("linear_key_head_dim"));
  XFT_TRY_ASSIGN(l.value_head_dim, f.positive_int("linear_value_head_dim"));
  XFT_TRY_ASSIGN(l.conv_kernel, f.positive_int("linear_conv_kernel_dim", 4));
  if (l.value_heads % l.key_heads != 0) {
    return f.error("linear_num_value_heads", std::to_string(l.value_heads) + " is not a multiple of linear_num_key_heads " +
                                                 std::to_string(l.key_heads));
  }
  return {};
}

// Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration: the
// text model's settings under text_config (the vision tower's are not read).
Expected<ModelConfig> parse_qwen35_config(const json& root, const std::string& path, ModelConfig& c) {
  if (!root.contains("text_config") || !root.at("text_config").is_object()) {
    return make_error(path + ": text_config: missing or not an object (Qwen3.5 keeps the text model's settings there)");
  }
  const json& text = root.at("text_config");
  const std::string where = path + ": text_config";
  Fields f(text, where);
  const bool moe = c.arch == Architecture::qwen3_5_moe;
  XFT_TRY_ASSIGN(c.hidden, f.positive_int("hidden_size"));
  XFT_TRY_ASSIGN(c.layers, f.positive_int("num_hidden_layers"));
  XFT_TRY_ASSIGN(c.heads, f.positive_int("num_attention_heads"));
  XFT_TRY_ASSIGN(c.vocab, f.positive_int("vocab_size"));
  XFT_TRY_ASSIGN(c.kv_heads, f.positive_int("num_key_value_heads", c.heads));
  if (c.heads % c.kv_heads != 0) {
    return f.error("num_key_value_heads", std::to_string(c.kv_heads) + " does not divide num_attention_heads " +
                                              std::to_string(c.heads));
  }
  XFT_TRY_ASSIGN(c.head_dim, f.positive_int("head_dim", 256));  // Qwen3_5TextConfig's default
  if (c.head_dim % 2 != 0) return f.error("head_dim", "must be even for rotary embeddings");
  if (auto rope = read_qwen35_rope(text, f, where, c); !rope) return rope.error();
  XFT_TRY_ASSIGN(c.rms_eps, f.positive_number("rms_norm_eps", 1e-6));
  XFT_TRY_ASSIGN(c.max_positions, f.positive_int("max_position_embeddings", 262144));
  Fields top(root, path);
  bool tie = false;
  XFT_TRY_ASSIGN(tie, f.boolean("tie_word_embeddings", false));
  XFT_TRY_ASSIGN(c.tie_embeddings, top.boolean("tie_word_embeddings", tie));
  XFT_TRY_ASSIGN(c.torch_dtype, f.string("dtype", ""));
  XFT_TRY_ASSIGN(c.qkv_bias, f.boolean("attention_bias", false));
  c.qk_norm = true;
  c.zero_centred_norms = true;
  XFT_TRY_ASSIGN(c.attn_output_gate, f.boolean("attn_output_gate", true));
  std::string act;
  XFT_TRY_ASSIGN(act, f.string("hidden_act", "silu"));
  if (act != "silu") return f.error("hidden_act", "only silu is supported, got \"" + act + "\"");
  if (auto linear = read_linear_attention(f, c); !linear) return linear.error();
  if (auto types = read_layer_types(text, f, c); !types) return types.error();
  if (moe) {
    if (auto sparse = read_moe(text, f, c); !sparse) return sparse.error();
    c.moe.norm_topk_prob = true;  // Qwen3_5MoeTopKRouter always renormalizes the chosen experts
    XFT_TRY_ASSIGN(c.intermediate, f.positive_int("intermediate_size", c.moe.expert_intermediate));
  } else {
    XFT_TRY_ASSIGN(c.intermediate, f.positive_int("intermediate_size"));
  }
  XFT_TRY_ASSIGN(c.eos_ids, f.token_ids("eos_token_id"));
  std::vector<int> bos;
  XFT_TRY_ASSIGN(bos, f.token_ids("bos_token_id"));
  if (!bos.empty()) c.bos_id = bos.front();
  XFT_TRY_ASSIGN(c.quant, read_quantization(root, path));
  if (c.quant.four_bit()) {
    // Every projection, the Gated DeltaNet's and the experts' included, packs
    // 8 rows per int32 (0: no shared expert).
    const int64_t sizes[] = {c.hidden, c.intermediate, 2 * int64_t(c.heads) * c.head_dim,
                             int64_t(c.kv_heads) * c.head_dim, c.linear.conv_channels(), c.linear.value_dim(),
                             c.linear.value_heads, c.moe.expert_intermediate, c.moe.shared_expert_intermediate};
    for (int64_t size : sizes) {
      if (size % 8 != 0) {
        return make_error(path + ": quantization_config: the 4-bit layouts pack 8 rows per int32, but a projection has " +
                          std::to_string(size) + " rows or columns");
      }
    }
  }
  return c;
}

}  // namespace

Expected<ModelConfig> parse_config(const std::string& json_text, const std::string& path) {
  auto root = parse_json_object(json_text, path);
  if (!root) return root.error();
  Fields fields(*root, path);
  ModelConfig config;
  XFT_TRY_ASSIGN(config.arch, architecture_of(*root, fields, config.architecture_name));
  if (config.arch == Architecture::qwen3_5 || config.arch == Architecture::qwen3_5_moe) {
    return parse_qwen35_config(*root, path, config);
  }
  auto shape = config.arch == Architecture::qwen1 ? read_qwen1(fields, config)
                                                  : read_qwen2_or_3(fields, config);
  if (!shape) return shape.error();
  if (config.arch == Architecture::qwen2_moe || config.arch == Architecture::qwen3_moe) {
    if (auto moe = read_moe(*root, fields, config); !moe) return moe.error();
  }
  XFT_TRY_ASSIGN(config.eos_ids, fields.token_ids("eos_token_id"));
  std::vector<int> bos;
  XFT_TRY_ASSIGN(bos, fields.token_ids("bos_token_id"));
  if (!bos.empty()) config.bos_id = bos.front();
  XFT_TRY_ASSIGN(config.quant, read_quantization(*root, path));
  if (config.quant.four_bit()) {
    // Experts and the shared expert are projections like the dense MLP's (0: none).
    const int64_t sizes[] = {config.hidden, config.intermediate, int64_t(config.heads) * config.head_dim,
                             int64_t(config.kv_heads) * config.head_dim, config.moe.expert_intermediate,
                             config.moe.shared_expert_intermediate};
    for (int64_t size : sizes) {
      if (size % 8 != 0) {
        return make_error(path + ": quantization_config: the 4-bit layouts pack 8 rows per int32, but a projection has " +
                          std::to_string(size) + " rows or columns");
      }
    }
  }
  return config;
}

bool QuantConfig::converts(const std::string& module) const {
  const std::string dotted = "." + module + ".";
  for (const std::string& skipped : modules_to_not_convert) {
    if (dotted.find("." + skipped + ".") != std::string::npos) return false;
  }
  return true;
}

bool is_linear_attention_layer(const ModelConfig& config, int layer) {
  const auto& linear = config.linear.is_linear;
  return layer >= 0 && static_cast<size_t>(layer) < linear.size() && linear[layer];
}

bool is_moe_layer(const ModelConfig& config, int layer) {
  const MoeConfig& moe = config.moe;
  if (moe.experts <= 0) return false;
  if (std::find(moe.mlp_only_layers.begin(), moe.mlp_only_layers.end(), layer) != moe.mlp_only_layers.end()) {
    return false;
  }
  return (layer + 1) % moe.decoder_sparse_step == 0;
}

std::string quant_format_name(const QuantConfig& quant) {
  switch (quant.method) {
    case QuantMethod::gptq: return "gptq-int4";
    case QuantMethod::awq: return "awq-int4";
    case QuantMethod::fp8: return "fp8";
    case QuantMethod::none: break;
  }
  return "";
}

Expected<ModelConfig> load_config(const std::string& model_dir) {
  std::string path = model_dir + "/config.json";
  std::error_code ec;
  const auto dir_status = std::filesystem::status(model_dir, ec);
  const char* expected_dir = " (the model is the folder that holds config.json and the *.safetensors files)";
  if (!std::filesystem::exists(dir_status)) return make_error(model_dir + ": no such directory" + expected_dir);
  if (!std::filesystem::is_directory(dir_status)) return make_error(model_dir + ": not a directory" + expected_dir);
  if (!std::filesystem::exists(path)) {
    return make_error(path + ": missing (is " + model_dir + " a Hugging Face model directory?)");
  }
  auto text = read_file(path);
  if (!text) return text.error();
  auto config = parse_config(*text, path);
  if (!config) return config;

  // generation_config.json decides when generation stops (HF generate() uses its eos list).
  std::string generation_path = model_dir + "/generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    auto generation_text = read_file(generation_path);
    if (!generation_text) return generation_text.error();
    auto generation = parse_json_object(*generation_text, generation_path);
    if (!generation) return generation.error();
    Fields fields(*generation, generation_path);
    std::vector<int> eos, bos;
    XFT_TRY_ASSIGN(eos, fields.token_ids("eos_token_id"));
    XFT_TRY_ASSIGN(bos, fields.token_ids("bos_token_id"));
    add_unique(eos, config->eos_ids);
    config->eos_ids = eos;
    if (!bos.empty() && config->bos_id < 0) config->bos_id = bos.front();
  }
  return config;
}

}  // namespace xft::engine
