// `run qwen --prompt-ids --dump-logits`: the logits of given token ids, for comparisons.
#include <cstdint>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/run/loader.h"
#include "cli/run/modes.h"
#include "common/atomic_file.h"

namespace xft::cli::run_qwen {

using namespace xft::engine;

namespace {

// "1,2,3" or "[1,2,3]" -> ids
Expected<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::string s = text;
  std::erase_if(s, [](char c) { return c == '[' || c == ']' || c == ' '; });
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    try {
      size_t used = 0;
      const long value = std::stol(item, &used);
      if (used != item.size() || value < 0 || value > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(value));
    } catch (const std::exception&) {
      return make_error("--prompt-ids: '" + item + "' is not a token id; write e.g. 9707,1879");
    }
    pos = comma + 1;
  }
  if (ids.empty()) return make_error("--prompt-ids: no token ids given; write e.g. 9707,1879");
  return ids;
}

// Every position's logits from one prefill of the ids.
Expected<std::vector<float>> logits_at_once(Model& model, Sequence& seq, const std::vector<int32_t>& ids) {
  Chunk chunk{&seq, ids};
  auto logits = model.forward({&chunk, 1}, true);
  if (!logits) return logits.error();
  return model.gather_vocab(*logits, static_cast<int>(ids.size()));
}

// The same positions fed one forward step each: the decode path (for
// Qwen3.5 the one-step delta-rule recurrence instead of the chunked form).
Expected<std::vector<float>> logits_token_by_token(Model& model, Sequence& seq, const std::vector<int32_t>& ids) {
  std::vector<float> all;
  for (size_t i = 0; i < ids.size(); ++i) {
    Chunk chunk{&seq, std::span<const int32_t>(&ids[i], 1)};
    auto logits = model.forward({&chunk, 1}, true);
    if (!logits) return logits.error();
    const std::vector<float> row = model.gather_vocab(*logits, 1);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

}  // namespace

void run_dump_logits(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto ids = parse_ids(o.prompt_ids);
  if (!ids) return fail(ctx, ids.error().message);
  auto loaded = load_model(o, comm);
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  auto seq = model.new_sequence();
  const int rows = static_cast<int>(ids->size());
  auto full = o.token_by_token ? logits_token_by_token(model, *seq, *ids) : logits_at_once(model, *seq, *ids);
  if (!full) return fail(ctx, full.error().message);
  if (!is_leader(comm)) return;
  const int32_t header[2] = {rows, model.config().vocab};
  std::string data(reinterpret_cast<const char*>(header), sizeof header);
  data.append(reinterpret_cast<const char*>(full->data()), full->size() * sizeof(float));
  if (auto written = write_file_atomic(o.dump_logits, data); !written) {
    return fail(ctx, written.error().message);
  }
  std::printf("wrote %s: %d positions x %d logits (float32)\n", o.dump_logits.c_str(), rows,
              model.config().vocab);
}

}  // namespace xft::cli::run_qwen
