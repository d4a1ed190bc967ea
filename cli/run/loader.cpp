#include "cli/run/loader.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "engine/checkpoint/presets.h"
#include "engine/checkpoint/weights.h"
#include "cli/paths.h"
#include "cli/run/load_progress.h"
#include "common/log.h"

namespace xft::cli::run_qwen {

namespace fs = std::filesystem;
using namespace xft::engine;

namespace {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
Expected<std::vector<int>> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  if (text.empty()) return cpus;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    try {
      size_t used = 0;
      const int first = std::stoi(item.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? item.size() : dash)) throw std::invalid_argument(item);
      int last = first;
      if (dash != std::string::npos) {
        last = std::stoi(item.substr(dash + 1), &used);
        if (used != item.size() - dash - 1) throw std::invalid_argument(item);
      }
      if (first < 0 || last < first) throw std::invalid_argument(item);
      for (int c = first; c <= last; ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return make_error("--cpus: '" + item + "' is not a cpu id or range; write e.g. 0-3,8");
    }
    pos = comma + 1;
  }
  return cpus;
}

bool has_tokenizer(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "tokenizer.json", ec) ||
         fs::is_regular_file(dir / "qwen.tiktoken", ec);
}

// --tokenizer, else the model directory, else $XFTCTL_TOKENIZER_DIR, else
// third_party/tokenizer-qwen3 beside the binary or in the source tree.
Expected<Tokenizer> load_tokenizer(const RunOptions& o) {
  std::vector<std::string> candidates;
  if (!o.tokenizer_dir.empty()) {
    candidates.push_back(o.tokenizer_dir);
  } else {
    if (!o.model_dir.empty()) candidates.push_back(o.model_dir);
    if (const char* env = std::getenv("XFTCTL_TOKENIZER_DIR"); env && *env) candidates.push_back(env);
    if (std::string bin = binary_dir(); !bin.empty()) {
      candidates.push_back(bin + "/../third_party/tokenizer-qwen3");
    }
    candidates.push_back(source_tree_dir() + "/third_party/tokenizer-qwen3");
  }
  std::string looked;
  for (const auto& dir : candidates) {
    if (has_tokenizer(dir)) return Tokenizer::load(dir);
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  return make_error("no tokenizer.json or qwen.tiktoken in " + looked +
                    " (pass --tokenizer DIR or run scripts/fetch-tokenizer.sh)");
}

}  // namespace

WeightFormat weight_format(const std::string& text) {
  if (text == "fp32") return WeightFormat::f32;
  if (text == "fp16") return WeightFormat::f16;
  if (text == "int8") return WeightFormat::int8;
  if (text == "int4") return WeightFormat::int4;
  if (text == "fp8") return WeightFormat::fp8;
  return WeightFormat::bf16;
}

KvFormat kv_format(const std::string& text) {
  return text == "fp16" ? KvFormat::f16 : text == "fp32" ? KvFormat::f32 : KvFormat::bf16;
}

Expected<ModelWeights> open_model_weights(const RunOptions& o) {
  ModelWeights loaded;
  std::unique_ptr<WeightSource>& weights = loaded.weights;
  if (!o.model_dir.empty() && o.layers > 0) {
    return make_error("--layers cuts a --fake-model preset; a checkpoint from --model runs with all its layers");
  }
  if (!o.model_dir.empty()) {
    auto opened = open_checkpoint(o.model_dir);
    if (!opened) return opened.error();
    weights = std::move(*opened);
    loaded.name = o.model_dir;
  } else {
    auto config = fake_model_config(o.fake_model);
    if (!config) return config.error();
    if (o.layers > 0) {
      config = with_layers(*config, o.layers);
      if (!config) return config.error();
    }
    weights = make_fake_weights(*config, o.seed);
    loaded.name = o.fake_model + (o.layers > 0 ? ", " + std::to_string(o.layers) + " layers" : "") +
                  " (fake weights, seed " + std::to_string(o.seed) + ")";
  }
  return loaded;
}

Expected<Loaded> load_model(const RunOptions& o, Communicator* comm, bool batch_invariant) {
  auto start = std::chrono::steady_clock::now();
  auto opened = open_model_weights(o);
  if (!opened) return opened.error();
  const std::unique_ptr<WeightSource>& weights = opened->weights;
  if (is_leader(comm)) {
    if (const std::string notice = vision_tower_notice(*weights, o.model_dir); !notice.empty()) {
      spdlog::info("run qwen: {}", notice);
    }
  }
  Loaded loaded;
  loaded.name = opened->name;
  auto cpus = parse_cpu_list(o.cpus);
  if (!cpus) return cpus.error();
  ModelOptions options;
  options.dtype = weight_format(o.dtype);
  options.kv = kv_format(o.kv_dtype);
  options.threads = o.threads;
  options.cpus = *cpus;
  options.max_context = o.max_context;
  options.batch_invariant = batch_invariant || o.batch_invariant;
  if (comm) {
    options.comm = comm;
    options.tp_rank = comm->rank();
    options.tp_size = comm->size();
  }
  // Rank 0 alone: the other ranks' stderr is relayed beside it. -q hides it.
  std::optional<LoadProgress> progress;
  if (is_leader(comm) && spdlog::should_log(spdlog::level::info)) {
    const fs::path dir = fs::path(o.model_dir).lexically_normal();
    const std::string shown =
        o.model_dir.empty() ? o.fake_model : (dir.has_filename() ? dir : dir.parent_path()).filename().string();
    progress.emplace(shown, isatty(STDERR_FILENO) != 0);
    options.progress = [&progress](uint64_t done, uint64_t total) { progress->update(done, total); };
  }
  auto model = Model::load(*weights, options);
  if (!model && progress) progress->abandon();
  if (!model) return model.error();
  loaded.model = std::move(*model);
  loaded.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return loaded;
}

// Rank 0 loads the tokenizer; the others only need the ids it sends.
Expected<std::optional<Tokenizer>> leader_tokenizer(const RunOptions& o, Communicator* comm) {
  if (!is_leader(comm)) return std::optional<Tokenizer>();
  auto tok = load_tokenizer(o);
  if (!tok) return tok.error();
  return std::optional<Tokenizer>(std::move(*tok));
}

}  // namespace xft::cli::run_qwen
