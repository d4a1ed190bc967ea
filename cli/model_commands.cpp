// `xftctl model make-test|check`: write the deterministic test model as a
// Hugging Face checkpoint directory, and validate any checkpoint directory
// the way the engine will load it.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/paths.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/test_model.h"
#include "engine/checkpoint/weights.h"
#include "common/log.h"

namespace xft::cli {
namespace {

namespace fs = std::filesystem;
using namespace xft::engine;

struct MakeTestOptions {
  std::string out_dir;
  std::string arch;
  uint64_t seed = 0;
  TestModelSpec spec;
  int tie = 1;
  std::string tokenizer_dir;
  bool no_tokenizer = false;
  bool force = false;
};

void fail(Context& ctx, const std::string& message) {
  log::error(message);
  ctx.exit_code = exit_error;
}

bool has_tokenizer_files(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "tokenizer.json", ec) &&
         fs::is_regular_file(dir / "tokenizer_config.json", ec);
}

// --tokenizer-dir, else $XFTCTL_TOKENIZER_DIR, else beside the binary, else in the source tree.
Expected<std::string> locate_tokenizer_dir(const std::string& flag) {
  std::vector<std::string> candidates;
  if (!flag.empty()) {
    candidates.push_back(flag);
  } else {
    if (const char* env = std::getenv("XFTCTL_TOKENIZER_DIR"); env && *env) candidates.push_back(env);
    if (std::string bin = binary_dir(); !bin.empty()) {
      candidates.push_back(bin + "/../third_party/tokenizer-qwen3");
    }
    candidates.push_back(source_tree_dir() + "/third_party/tokenizer-qwen3");
  }
  std::string looked;
  for (const auto& dir : candidates) {
    if (has_tokenizer_files(dir)) return fs::path(dir).lexically_normal().string();
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  return make_error("no tokenizer.json + tokenizer_config.json in " + looked +
                    " (run scripts/fetch-tokenizer.sh, set XFTCTL_TOKENIZER_DIR, or pass --no-tokenizer)");
}

void make_test(Context& ctx, MakeTestOptions& options) {
  auto arch = parse_architecture(options.arch);
  if (!arch) return fail(ctx, arch.error().message);
  TestModelSpec spec = options.spec;
  spec.arch = *arch;
  spec.seed = options.seed;
  spec.tie = options.tie != 0;
  if (auto valid = validate_spec(spec); !valid) return fail(ctx, valid.error().message);

  WriteOptions write;
  write.replace_existing = options.force;
  // Qwen3.5's vocabulary (248320 ids) is not the Qwen2/3 test tokenizer's: its test checkpoints carry none.
  const bool own_vocabulary = spec.arch == Architecture::qwen3_5 || spec.arch == Architecture::qwen3_5_moe;
  if (!options.no_tokenizer && !own_vocabulary) {
    auto tokenizer_dir = locate_tokenizer_dir(options.tokenizer_dir);
    if (!tokenizer_dir) return fail(ctx, tokenizer_dir.error().message);
    write.tokenizer_dir = *tokenizer_dir;
  }
  auto files = write_test_model(options.out_dir, spec, write);
  if (!files) return fail(ctx, files.error().message);
  for (const auto& file : *files) {
    std::printf("wrote %s (%llu bytes)\n", file.path.c_str(), (unsigned long long)file.bytes);
  }
  ctx.exit_code = exit_ok;
}

std::string human_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30)) {
    std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1ull << 30));
  } else {
    std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1ull << 20));
  }
  return text;
}

struct CheckFlags {
  std::string dir;
  bool json = false;
};

nlohmann::ordered_json check_json(const std::string& dir, const ModelConfig& c, size_t tensors, uint64_t bytes) {
  nlohmann::ordered_json j;
  j["dir"] = dir;
  j["architecture"] = c.architecture_name;
  j["layers"] = c.layers;
  j["hidden"] = c.hidden;
  j["heads"] = c.heads;
  j["kv_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["intermediate"] = c.intermediate;
  j["vocab"] = c.vocab;
  j["tie_embeddings"] = c.tie_embeddings;
  j["quant"] = c.quant.method == QuantMethod::none ? nlohmann::ordered_json(nullptr)
                                                   : nlohmann::ordered_json(quant_format_name(c.quant));
  if (c.moe.experts > 0) {  // dense checkpoints print as they always did
    j["experts"] = {{"count", c.moe.experts},
                    {"per_token", c.moe.experts_per_token},
                    {"width", c.moe.expert_intermediate},
                    {"shared_width", c.moe.shared_expert_intermediate},
                    {"norm_topk_prob", c.moe.norm_topk_prob}};
  }
  j["tensors"] = tensors;
  j["bytes"] = bytes;
  j["ok"] = true;
  return j;
}

// With --json the failure is a document too ({"ok": false, "error": ...}); the log line stays on stderr.
void fail_check(Context& ctx, const CheckFlags& flags, const std::string& message) {
  fail(ctx, message);
  if (flags.json)
    std::printf("%s\n", nlohmann::ordered_json({{"dir", flags.dir}, {"ok", false}, {"error", message}}).dump(2).c_str());
}

void check(Context& ctx, const CheckFlags& flags) {
  const std::string& dir = flags.dir;
  auto source = open_checkpoint(dir);
  if (!source) return fail_check(ctx, flags, source.error().message);
  const ModelConfig& c = (*source)->config();
  uint64_t bytes = 0;
  size_t count = 0;
  for (const auto& tensor : expected_tensors(c)) {
    auto meta = (*source)->meta(tensor.name);
    if (!meta) return fail_check(ctx, flags, meta.error().message);
    uint64_t elements = 1;
    for (int64_t dim : meta->shape) elements *= uint64_t(dim);
    bytes += elements * dtype_size(meta->dtype);
    ++count;
  }
  ctx.exit_code = exit_ok;
  if (flags.json) {
    std::printf("%s\n", check_json(dir, c, count, bytes).dump(2).c_str());
    return;
  }
  std::string experts;
  if (c.moe.experts > 0) {
    experts = ", " + std::to_string(c.moe.experts) + " experts (top " + std::to_string(c.moe.experts_per_token) +
              ", width " + std::to_string(c.moe.expert_intermediate) +
              (c.moe.shared_expert_intermediate > 0
                   ? ", shared expert " + std::to_string(c.moe.shared_expert_intermediate)
                   : std::string()) +
              ")";
  }
  std::printf("%s: %s, %d layers, hidden %d, heads %d (kv %d, head_dim %d), intermediate %d%s, "
              "vocab %d, %s embeddings%s%s, %zu tensors, %s: OK\n",
              dir.c_str(), c.architecture_name.c_str(), c.layers, c.hidden, c.heads, c.kv_heads,
              c.head_dim, c.intermediate, experts.c_str(), c.vocab, c.tie_embeddings ? "tied" : "untied",
              c.quant.method == QuantMethod::none ? "" : ", ", quant_format_name(c.quant).c_str(), count,
              human_bytes(bytes).c_str());
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_model_commands(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("model", "create test checkpoints and check checkpoint directories");
  group->require_subcommand(1);

  auto options = std::make_shared<MakeTestOptions>();
  auto* make = group->add_subcommand(
      "make-test", "write the deterministic test model (config, weights, tokenizer) into a directory");
  make->add_option("out", options->out_dir, "output directory (created atomically)")->required();
  make->add_option("--arch", options->arch, "qwen (Qwen1), qwen2, qwen3, qwen2_moe, qwen3_moe, qwen3_5 or qwen3_5_moe")->required();
  make->add_option("--seed", options->seed, "seed of the weight values")->capture_default_str();
  TestModelSpec& s = options->spec;
  make->add_option("--hidden", s.hidden, "hidden size")->capture_default_str();
  make->add_option("--layers", s.layers, "decoder layers")->capture_default_str();
  make->add_option("--heads", s.heads, "attention heads")->capture_default_str();
  make->add_option("--kv-heads", s.kv_heads, "key/value heads (qwen2/qwen3)")->capture_default_str();
  make->add_option("--head-dim", s.head_dim, "head size (qwen2/qwen3; qwen uses hidden/heads)")
      ->capture_default_str();
  make->add_option("--inter", s.intermediate, "intermediate_size (qwen: both MLP branches together)")
      ->capture_default_str();
  make->add_option("--vocab", s.vocab, "vocabulary size")->capture_default_str();
  make->add_option("--tie", options->tie, "tie lm_head to the embeddings (qwen2/qwen3)")
      ->check(CLI::IsMember({0, 1}))
      ->capture_default_str();
  make->add_option("--rope-theta", s.rope_theta, "rotary base")->capture_default_str();
  make->add_option("--max-pos", s.max_positions, "max position embeddings")->capture_default_str();
  make->add_option("--experts", s.experts, "qwen2_moe/qwen3_moe: num_experts")->capture_default_str();
  make->add_option("--topk", s.topk, "qwen2_moe/qwen3_moe: num_experts_per_tok")->capture_default_str();
  make->add_option("--moe-inter", s.moe_intermediate, "qwen2_moe/qwen3_moe: moe_intermediate_size (each expert)")
      ->capture_default_str();
  make->add_option("--shared-inter", s.shared_intermediate, "qwen2_moe: shared_expert_intermediate_size")
      ->capture_default_str();
  make->add_option("--norm-topk", s.norm_topk, "qwen2_moe/qwen3_moe: norm_topk_prob (0 or 1)")
      ->capture_default_str();
  make->add_option("--linear-k-heads", s.linear_key_heads, "qwen3_5*: linear_num_key_heads")->capture_default_str();
  make->add_option("--linear-v-heads", s.linear_value_heads, "qwen3_5*: linear_num_value_heads")->capture_default_str();
  make->add_option("--linear-head-dim", s.linear_head_dim, "qwen3_5*: linear key and value head dim")->capture_default_str();
  make->add_option("--conv-kernel", s.conv_kernel, "qwen3_5*: linear_conv_kernel_dim")->capture_default_str();
  make->add_option("--full-attn-interval", s.full_attn_interval, "qwen3_5*: every N-th layer is full attention")
      ->capture_default_str();
  make->add_option("--partial-rotary", s.partial_rotary, "qwen3_5*: partial_rotary_factor")->capture_default_str();
  make->add_option("--quant", s.quant,
                   "write a quantized checkpoint of the same weights: gptq or awq (4-bit), fp8 (e4m3, 128x128 blocks)")
      ->check(CLI::IsMember({"gptq", "awq", "fp8"}));
  make->add_option("--group-size", s.group_size, "4-bit: input rows per scale and zero (-1: one group)")
      ->capture_default_str();
  make->add_flag("--desc-act", s.desc_act, "GPTQ: scatter the groups over the input rows (g_idx, act order)");
  make->add_option("--tokenizer-dir", options->tokenizer_dir,
                   "folder with tokenizer.json + tokenizer_config.json (else $XFTCTL_TOKENIZER_DIR, "
                   "else third_party/tokenizer-qwen3)");
  make->add_flag("--no-tokenizer", options->no_tokenizer, "write only config and weights");
  make->add_flag("--force", options->force, "replace a non-empty output directory");
  make->callback([&ctx, options] { make_test(ctx, *options); });

  auto check_flags = std::make_shared<CheckFlags>();
  auto* check_command = group->add_subcommand(
      "check", "validate a checkpoint directory (config.json, safetensors headers, tensor shapes)");
  check_command->add_option("dir", check_flags->dir, "model directory")->required();
  check_command->add_flag("--json", check_flags->json, "one JSON document: the shape, tensor count and bytes");
  check_command->callback([&ctx, check_flags] { check(ctx, *check_flags); });
}

}  // namespace xft::cli
