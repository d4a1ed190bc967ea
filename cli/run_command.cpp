// `xftctl run qwen`: load a Qwen checkpoint (or a --fake-model of any size)
// on this machine and answer a prompt, chat, dump logits for given token ids,
// or benchmark first-token and next-token latency.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/rank_launch.h"
#include "engine/comm/mpi_c.h"
#include "engine/comm/mpi_communicator.h"
#include "engine/comm/selection.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "engine/checkpoint/presets.h"
#include "engine/checkpoint/weights.h"
#include "engine/model/generate.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"
#include "engine/serve/api_key.h"
#include "engine/serve/http_server.h"
#include "engine/serve/scheduler.h"
#include "engine/serve/server.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::cli {
namespace {

namespace fs = std::filesystem;
using namespace xft::engine;

struct RunOptions {
  std::string model_dir;
  std::string fake_model;
  std::string tokenizer_dir;
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  int threads = 0;
  std::string cpus;
  int max_context = 0;

  std::optional<std::string> prompt;
  bool raw = false;
  std::string system;
  bool chat = false;
  int max_new_tokens = 256;
  // Qwen2.5's generation_config.json defaults.
  float temperature = 0.7f;
  int top_k = 20;
  float top_p = 0.8f;
  float repetition_penalty = 1.05f;
  uint64_t seed = 0;
  bool greedy = false;

  std::string prompt_ids;
  std::string dump_logits;

  bool bench = false;
  // --serve [HOST:]PORT: the OpenAI-compatible server (engine/serve/); --port [--host] say the same.
  std::string serve;
  int port = -1;
  std::string host = "127.0.0.1";
  std::string served_model_name;
  int max_batch = 16;
  int max_queue = 64;
  int kv_cache_mib = 0;
  std::string api_key;
  std::string api_key_file;
  bool require_api_key = false;  // a rank: the control node sent XFTCTL_API_KEY, refuse to serve without it
  std::string allowed_hosts;     // --allowed-hosts a,b
  std::string cors_origins;      // --cors-origin a,b
  bool batch_invariant = false;  // bench the server's decode path
  bool no_batch_invariant = false;  // serve, prompt, chat: oneDNN prefill (answers may depend on the batch)
  int prefill_chunk = 64;

  int input_tokens = 32;
  int output_tokens = 32;
  int batch_size = 1;
  int iters = 3;
  int warmup = 1;
  bool json = false;

  // Several ranks: --local N or the inventory's plan; each rank runs --rank-worker.
  PlanFlags plan;
  ReachFlags reach;
  bool use_inventory = false;  // --hosts or -i given
  std::string comm = "auto";
  bool comm_bf16 = false;
  bool dry_run = false;
  bool rank_worker = false;
  // Hidden, for the failure tests: this rank kills itself after that many tokens.
  int fail_rank = -1;
  int fail_at_token = 0;
  bool profile = false;
};

// "rank 1 (h02)" inside a rank worker, so every message names where it came from.
std::string g_rank_label;

void fail(Context& ctx, const std::string& message) {
  if (g_rank_label.empty())
    spdlog::error("run qwen: {}", message);
  else
    spdlog::error("{}: run qwen: {}", g_rank_label, message);
  ctx.exit_code = exit_error;
}

bool is_leader(const Communicator* comm) { return comm == nullptr || comm->rank() == 0; }

// Rank 0 decides (prompt ids, chat turns); the others receive the same
// vector so every rank runs the same forward passes and samples in lock step.
void share_ids(Communicator* comm, std::vector<int32_t>& ids) {
  if (comm == nullptr || comm->size() == 1) return;
  int64_t count = static_cast<int64_t>(ids.size());
  comm->broadcast(&count, sizeof count, 0);
  ids.resize(static_cast<size_t>(count));
  if (count > 0) comm->broadcast(ids.data(), ids.size() * sizeof(int32_t), 0);
}

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
}

WeightFormat weight_format(const std::string& text) {
  if (text == "fp32") return WeightFormat::f32;
  if (text == "fp16") return WeightFormat::f16;
  if (text == "int8") return WeightFormat::int8;
  if (text == "int4") return WeightFormat::int4;
  return WeightFormat::bf16;
}

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

std::string binary_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
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
    candidates.push_back(std::string(XFT_SOURCE_DIR) + "/third_party/tokenizer-qwen3");
  }
  std::string looked;
  for (const auto& dir : candidates) {
    if (has_tokenizer(dir)) return Tokenizer::load(dir);
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  return make_error("no tokenizer.json or qwen.tiktoken in " + looked +
                    " (pass --tokenizer DIR or run scripts/fetch-tokenizer.sh)");
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::string name;
  double load_ms = 0.0;
};

Expected<Loaded> load_model(const RunOptions& o, Communicator* comm, bool batch_invariant = false) {
  auto start = std::chrono::steady_clock::now();
  Loaded loaded;
  std::unique_ptr<WeightSource> weights;
  if (!o.model_dir.empty()) {
    auto opened = open_checkpoint(o.model_dir);
    if (!opened) return opened.error();
    weights = std::move(*opened);
    loaded.name = o.model_dir;
  } else {
    auto config = fake_model_config(o.fake_model);
    if (!config) return config.error();
    weights = make_fake_weights(*config, o.seed);
    loaded.name = o.fake_model + " (fake weights, seed " + std::to_string(o.seed) + ")";
  }
  auto cpus = parse_cpu_list(o.cpus);
  if (!cpus) return cpus.error();
  ModelOptions options;
  options.dtype = weight_format(o.dtype);
  options.kv = o.kv_dtype == "fp16" ? KvFormat::f16 : o.kv_dtype == "fp32" ? KvFormat::f32 : KvFormat::bf16;
  options.threads = o.threads;
  options.cpus = *cpus;
  options.max_context = o.max_context;
  options.batch_invariant = batch_invariant || o.batch_invariant;
  if (comm) {
    options.comm = comm;
    options.tp_rank = comm->rank();
    options.tp_size = comm->size();
  }
  auto model = Model::load(*weights, options);
  if (!model) return model.error();
  loaded.model = std::move(*model);
  loaded.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return loaded;
}

SamplingParams sampling_params(const RunOptions& o) {
  SamplingParams p;
  p.greedy = o.greedy;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.repetition_penalty = o.repetition_penalty;
  p.seed = o.seed;
  return p;
}

std::vector<int32_t> tokenizer_stop_ids(const Tokenizer& tok) {
  return {tok.im_end(), tok.endoftext()};
}

void print_stats(const GenerateResult& r) {
  const double decode_ms = std::accumulate(r.step_ms.begin(), r.step_ms.end(), 0.0);
  const double per_s = r.step_ms.empty() ? 0.0 : 1000.0 * r.step_ms.size() / decode_ms;
  std::fprintf(stderr, "[%zu tokens (%s), first token %.1f ms, %.2f tokens/s after it]\n",
               r.tokens.size(), r.finish_reason.c_str(), r.first_token_ms, per_s);
}

// Every rank generates; rank 0 (the one with a tokenizer) prints as it goes.
Expected<GenerateResult> stream_answer(Model& model, Sequence& seq, const Tokenizer* tok,
                                       std::span<const int32_t> input, const RunOptions& o,
                                       std::vector<int32_t> stop_ids, std::string* answer) {
  GenerateOptions gen;
  gen.sampling = sampling_params(o);
  gen.max_new_tokens = o.max_new_tokens;
  gen.stop_ids = std::move(stop_ids);
  int emitted = 0;
  auto maybe_die = [&] {
    if (o.fail_rank == model.comm().rank() && ++emitted == o.fail_at_token) raise(SIGKILL);
  };
  if (!tok) return generate(model, seq, input, gen, [&](int32_t) { maybe_die(); });
  StreamDecoder decoder(*tok);
  // Under mpirun every write of a rank is tagged separately, so a rank streams
  // whole lines; a lone process streams token by token.
  const bool whole_lines = !g_rank_label.empty();
  std::string pending;
  auto write_out = [&](const std::string& text, bool all) {
    pending += text;
    size_t end = pending.size();
    if (whole_lines && !all) {
      size_t newline = pending.rfind('\n');
      if (newline == std::string::npos) return;
      end = newline + 1;
    }
    if (end == 0) return;
    std::fwrite(pending.data(), 1, end, stdout);
    std::fflush(stdout);
    pending.erase(0, end);
  };
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    write_out(text, false);
    if (answer) *answer += text;
  };
  auto result = generate(model, seq, input, gen, [&](int32_t id) {
    maybe_die();
    emit(decoder.push(id));
  });
  emit(decoder.flush());
  write_out("\n", true);
  return result;
}

// Rank 0 loads the tokenizer; the others only need the ids it sends.
Expected<std::optional<Tokenizer>> leader_tokenizer(const RunOptions& o, Communicator* comm) {
  if (!is_leader(comm)) return std::optional<Tokenizer>();
  auto tok = load_tokenizer(o);
  if (!tok) return tok.error();
  return std::optional<Tokenizer>(std::move(*tok));
}

std::vector<int32_t> shared_stop_ids(const Model& model, const std::optional<Tokenizer>& tok, Communicator* comm) {
  std::vector<int32_t> extra;
  if (tok) extra = tokenizer_stop_ids(*tok);
  share_ids(comm, extra);
  return stop_ids_for(model.config(), extra);
}

// --profile: every rank's per-layer time, split into compute and allreduce,
// gathered to rank 0 and printed on stderr (XFT_COMM_TIME's question: how much
// of a token is communication?). Collective.
void report_profile(Model& model, Communicator* comm) {
  const auto& layers = model.profile();
  std::vector<double> mine;
  for (const auto& l : layers) mine.insert(mine.end(), {l.total_ms - l.allreduce_ms, l.allreduce_ms});
  const int ranks = model.comm().size();
  std::vector<double> all(mine.size() * static_cast<size_t>(ranks));
  model.comm().allgather(mine.data(), mine.size() * sizeof(double), all.data());
  if (!is_leader(comm)) return;
  // One write: under mpirun each write is tagged on its own.
  char* text = nullptr;
  size_t text_size = 0;
  FILE* out = open_memstream(&text, &text_size);
  if (!out) return;
  auto at = [&](int rank, size_t layer, int what) { return all[static_cast<size_t>(rank) * mine.size() + layer * 2 + what]; };
  std::fprintf(out, "profile: milliseconds over the run, per rank: compute / allreduce\n%-6s", "layer");
  for (int r = 0; r < ranks; ++r) std::fprintf(out, "  %21s", ("rank " + std::to_string(r)).c_str());
  std::fprintf(out, "\n");
  std::vector<double> compute(ranks, 0.0), comm_ms(ranks, 0.0);
  for (size_t l = 0; l < layers.size(); ++l) {
    std::fprintf(out, "%-6s", l + 1 == layers.size() ? "head" : std::to_string(l).c_str());
    for (int r = 0; r < ranks; ++r) {
      std::fprintf(out, "  %10.2f / %8.2f", at(r, l, 0), at(r, l, 1));
      compute[r] += at(r, l, 0);
      comm_ms[r] += at(r, l, 1);
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "%-6s", "total");
  for (int r = 0; r < ranks; ++r) std::fprintf(out, "  %10.2f / %8.2f", compute[r], comm_ms[r]);
  std::fprintf(out, "\n%-6s", "comm");
  for (int r = 0; r < ranks; ++r) {
    const double total = compute[r] + comm_ms[r];
    std::fprintf(out, "  %20.1f%%", total > 0 ? 100.0 * comm_ms[r] / total : 0.0);
  }
  std::fprintf(out, "\n");
  std::fclose(out);
  std::fwrite(text, 1, text_size, stderr);
  std::free(text);
}

void run_prompt(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);  // the server's answers
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  std::vector<int32_t> ids;
  if (*tok && o.raw) {
    ids = (*tok)->encode(*o.prompt);
  } else if (*tok) {
    std::vector<std::pair<std::string, std::string>> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", *o.prompt});
    ids = (*tok)->encode((*tok)->chat_prompt(messages, true));
  }
  share_ids(comm, ids);
  auto stop_ids = shared_stop_ids(model, *tok, comm);
  auto seq = model.new_sequence();
  if (o.profile) model.enable_profile(true);
  auto result = stream_answer(model, *seq, tok->has_value() ? &**tok : nullptr, ids, o, stop_ids, nullptr);
  if (!result) return fail(ctx, result.error().message);
  if (is_leader(comm)) print_stats(*result);
  if (o.profile) report_profile(model, comm);
}

// One chat turn as rank 0 sends it: keep `common` cached positions, then feed `ids`.
// common < 0 ends the chat.
struct ChatTurn {
  int32_t common = -1;
  std::vector<int32_t> ids;
};

void share_turn(Communicator* comm, ChatTurn& turn) {
  if (comm == nullptr || comm->size() == 1) return;
  comm->broadcast(&turn.common, sizeof turn.common, 0);
  if (turn.common >= 0) share_ids(comm, turn.ids);
}

void run_chat_follower(Context& ctx, const RunOptions& o, Model& model, Communicator* comm) {
  auto stop_ids = shared_stop_ids(model, std::nullopt, comm);
  auto seq = model.new_sequence();
  while (true) {
    ChatTurn turn;
    share_turn(comm, turn);
    if (turn.common < 0) return;
    seq->truncate(turn.common);
    auto result = stream_answer(model, *seq, nullptr, turn.ids, o, stop_ids, nullptr);
    if (!result) return fail(ctx, result.error().message);
  }
}

void run_chat(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);  // the server's answers
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  if (!is_leader(comm)) return run_chat_follower(ctx, o, model, comm);
  const Tokenizer& tk = **tok;
  auto stop_ids = shared_stop_ids(model, *tok, comm);
  const bool interactive = isatty(STDIN_FILENO);
  std::vector<std::pair<std::string, std::string>> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  const size_t kept = messages.size();
  auto seq = model.new_sequence();
  if (interactive) {
    std::fprintf(stderr, "%s loaded; /reset starts over, /exit (or Ctrl-D) quits\n",
                 loaded->name.c_str());
  }
  std::string line;
  while (true) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit") break;
    if (line == "/reset") {
      messages.resize(kept);
      seq->truncate(0);
      std::fputs("(conversation reset)\n", stdout);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    ChatTurn turn;
    turn.ids = tk.encode(tk.chat_prompt(messages, true));
    // The cache already holds the earlier turns: feed only what differs.
    const auto& cached = seq->tokens();
    size_t common = 0;
    while (common < cached.size() && common + 1 < turn.ids.size() && cached[common] == turn.ids[common]) {
      ++common;
    }
    turn.common = static_cast<int32_t>(common);
    turn.ids.erase(turn.ids.begin(), turn.ids.begin() + static_cast<std::ptrdiff_t>(common));
    share_turn(comm, turn);
    seq->truncate(turn.common);
    std::string answer;
    auto result = stream_answer(model, *seq, &tk, turn.ids, o, stop_ids, &answer);
    if (!result) return fail(ctx, result.error().message);
    messages.push_back({"assistant", answer});
    if (result->finish_reason == "context") {
      spdlog::info("the context is full; /reset to start over");
    }
    if (ctx.verbosity > 0) print_stats(*result);
  }
  ChatTurn end;
  share_turn(comm, end);
}

void run_dump_logits(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto ids = parse_ids(o.prompt_ids);
  if (!ids) return fail(ctx, ids.error().message);
  auto loaded = load_model(o, comm);
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  auto seq = model.new_sequence();
  Chunk chunk{seq.get(), *ids};
  auto logits = model.forward({&chunk, 1}, true);
  if (!logits) return fail(ctx, logits.error().message);
  const int rows = static_cast<int>(ids->size());
  const std::vector<float> full = model.gather_vocab(*logits, rows);
  if (!is_leader(comm)) return;
  const int32_t header[2] = {rows, model.config().vocab};
  std::string data(reinterpret_cast<const char*>(header), sizeof header);
  data.append(reinterpret_cast<const char*>(full.data()), full.size() * sizeof(float));
  if (auto written = write_file_atomic(o.dump_logits, data); !written) {
    return fail(ctx, written.error().message);
  }
  std::printf("wrote %s: %d positions x %d logits (float32)\n", o.dump_logits.c_str(), rows,
              model.config().vocab);
}

// Token ids for benchmark prompts: spread over the ordinary vocabulary so
// no special token starts or ends anything.
std::vector<int32_t> bench_prompt(int length, int index, int vocab) {
  const int ordinary = std::min(vocab, 151643);
  std::vector<int32_t> ids(length);
  for (int i = 0; i < length; ++i) {
    ids[i] = static_cast<int32_t>((1000 + static_cast<int64_t>(i) * 7919 + index * 104729) % ordinary);
  }
  return ids;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = p * (values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - lo);
}

struct BenchIteration {
  double first_token_ms = 0.0;
  std::vector<double> step_ms;
};

Expected<BenchIteration> bench_once(Model& model, const RunOptions& o) {
  using clock = std::chrono::steady_clock;
  const int batch = o.batch_size;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Chunk> chunks;
  for (int b = 0; b < batch; ++b) {
    seqs.push_back(model.new_sequence(o.input_tokens + o.output_tokens));
    prompts.push_back(bench_prompt(o.input_tokens, b, model.config().vocab));
  }
  for (int b = 0; b < batch; ++b) chunks.push_back({seqs[b].get(), prompts[b]});
  SamplingParams greedy;
  greedy.greedy = true;
  std::vector<TokenSampler> samplers(batch, TokenSampler(greedy));
  std::vector<TokenSampler*> sampler_ptrs;
  for (auto& s : samplers) sampler_ptrs.push_back(&s);
  const Range vocab = model.partition().vocab;

  auto sample = [&](std::span<float> logits) {
    std::vector<float*> rows;
    std::vector<std::span<const int32_t>> histories;
    for (int b = 0; b < batch; ++b) {
      rows.push_back(logits.data() + static_cast<size_t>(b) * vocab.size());
      histories.push_back(seqs[b]->tokens());
    }
    return sample_batch(model.comm(), sampler_ptrs, rows, vocab.size(), vocab.begin, histories);
  };

  BenchIteration it;
  auto start = clock::now();
  auto logits = model.forward(chunks);
  if (!logits) return logits.error();
  std::vector<int32_t> next = sample(*logits);
  it.first_token_ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
  // The benchmark runs the full --output-tokens whatever is sampled: end
  // tokens are fed back like any other.
  for (int step = 1; step < o.output_tokens; ++step) {
    start = clock::now();
    for (int b = 0; b < batch; ++b) chunks[b] = {seqs[b].get(), {&next[b], 1}};
    logits = model.forward(chunks);
    if (!logits) return logits.error();
    next = sample(*logits);
    it.step_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
  }
  return it;
}

// Every rank's resident memory (KiB), gathered to all (collective).
std::vector<int64_t> resident_per_rank(Model& model) {
  int64_t mine = resident_kib();
  std::vector<int64_t> all(static_cast<size_t>(model.comm().size()));
  model.comm().allgather(&mine, sizeof mine, all.data());
  return all;
}

void run_bench(Context& ctx, const RunOptions& o, Communicator* comm) {
  if (o.input_tokens < 1 || o.output_tokens < 1 || o.batch_size < 1 || o.iters < 1 || o.warmup < 0) {
    return fail(ctx, "--input-tokens, --output-tokens, --batch-size and --iters must be at least 1");
  }
  auto loaded = load_model(o, comm);
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  if (o.input_tokens + o.output_tokens > model.max_context()) {
    return fail(ctx, "--input-tokens + --output-tokens = " +
                         std::to_string(o.input_tokens + o.output_tokens) +
                         " exceeds the context of " + std::to_string(model.max_context()) +
                         " positions (raise --max-context)");
  }
  std::vector<double> first, steps;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    if (o.profile && i == o.warmup) model.enable_profile(true);
    auto it = bench_once(model, o);
    if (!it) return fail(ctx, it.error().message);
    if (i < o.warmup) continue;
    first.push_back(it->first_token_ms);
    steps.insert(steps.end(), it->step_ms.begin(), it->step_ms.end());
  }
  const double first_ms = std::accumulate(first.begin(), first.end(), 0.0) / first.size();
  const double next_ms =
      steps.empty() ? 0.0 : std::accumulate(steps.begin(), steps.end(), 0.0) / steps.size();
  const double next_p90 = percentile(steps, 0.9);
  const double decode_tps = next_ms > 0 ? 1000.0 * o.batch_size / next_ms : 0.0;
  const double prefill_tps = 1000.0 * o.batch_size * o.input_tokens / first_ms;
  const uint64_t weight_bytes = model.weight_bytes();
  const double weight_gbps = next_ms > 0 ? weight_bytes / (next_ms * 1e6) : 0.0;
  if (o.profile) report_profile(model, comm);
  const std::vector<int64_t> rss_kib = resident_per_rank(model);
  if (!is_leader(comm)) return;
  nlohmann::json rss_mib = nlohmann::json::array();
  std::string rss_text;
  for (int64_t kib : rss_kib) {
    rss_mib.push_back(kib / 1024.0);
    char one[32];
    std::snprintf(one, sizeof one, "%s%.0f", rss_text.empty() ? "" : ", ", kib / 1024.0);
    rss_text += one;
  }
  const std::string comm_name =
      comm ? static_cast<engine::comm::MpiCommunicator*>(comm)->description() : std::string("none (one rank)");

  if (o.json) {
    nlohmann::json j = {
        {"model", loaded->name},
        {"dtype", o.dtype},
        {"kv_dtype", o.kv_dtype},
        {"threads", model.pool().size()},
        {"tp_size", model.partition().tp_size},
        {"kernel", model.kernel_name()},
        {"input_tokens", o.input_tokens},
        {"output_tokens", o.output_tokens},
        {"batch_size", o.batch_size},
        {"iters", o.iters},
        {"warmup", o.warmup},
        {"load_ms", loaded->load_ms},
        {"first_token_ms", first_ms},
        {"next_token_ms", next_ms},
        {"next_token_p90_ms", next_p90},
        {"decode_tokens_per_s", decode_tps},
        {"prefill_tokens_per_s", prefill_tps},
        {"weight_bytes", weight_bytes},
        {"format", model.format_name()},
        {"decode_weight_bytes_per_token", model.decode_weight_bytes()},
        {"decode_weight_gb_per_s", weight_gbps},
        {"comm", comm_name},
        {"rss_mib_per_rank", rss_mib},
    };
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("model        %s\n", loaded->name.c_str());
  std::printf("setup        dtype %s, kv %s, %d threads, kernel %s, loaded in %.0f ms\n",
              o.dtype.c_str(), o.kv_dtype.c_str(), model.pool().size(),
              model.kernel_name().c_str(), loaded->load_ms);
  std::printf("ranks        %d, allreduce %s\n", model.partition().tp_size, comm_name.c_str());
  std::printf("weights      %.1f MiB on rank 0\n", weight_bytes / 1048576.0);
  std::printf("memory       %s MiB resident per rank\n", rss_text.c_str());
  std::printf("workload     %d input + %d output tokens, batch %d, %d iterations (+%d warmup)\n",
              o.input_tokens, o.output_tokens, o.batch_size, o.iters, o.warmup);
  std::printf("first token  %.2f ms  (prefill %.1f tokens/s)\n", first_ms, prefill_tps);
  std::printf("next token   %.2f ms mean, %.2f ms p90  (%.2f tokens/s, weights streamed at %.2f GB/s)\n",
              next_ms, next_p90, decode_tps, weight_gbps);
}

// --serve ----------------------------------------------------------------

std::atomic<bool> g_serve_stop{false};

void on_stop_signal(int) { g_serve_stop = true; }

// SIGINT/SIGTERM/SIGUSR1 end the server cleanly; under mpirun every rank gets them,
// and the other ranks wait for rank 0's shutdown step instead of dying mid-collective.
void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);  // what xftctl sends through mpirun (RankRun::signal_is_normal_stop)
}

// --served-model-name, else the checkpoint directory's name ("Qwen2.5-7B-Instruct", also for "DIR/"), or the preset.
std::string served_model_name(const RunOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  if (o.model_dir.empty()) return o.fake_model;
  fs::path dir = fs::path(o.model_dir).lexically_normal();
  return (dir.has_filename() ? dir : dir.parent_path()).filename().string();
}

// "[HOST:]PORT" -> (host, port): HOST a name, an IPv4 address or a bracketed
// IPv6 one ("[::1]:8000", returned without brackets); it defaults to 127.0.0.1.
Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text) {
  const std::string usage = "--serve " + text + ": expected [HOST:]PORT, e.g. 8000, localhost:8000, 0.0.0.0:8000 or [::1]:8000";
  const size_t colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "127.0.0.1" : text.substr(0, colon);
  std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of(":[]") != std::string::npos) {
    return make_error(usage + " (an IPv6 address goes in brackets)");
  }
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535 || host.empty()) return make_error(usage);
  return std::make_pair(host, static_cast<int>(port));
}

// How a URL writes a host: IPv6 addresses in brackets.
std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// --serve's address, checked and resolved before any model is loaded or rank started.
Expected<void> check_listen_address(const std::string& serve) {
  auto address = parse_listen_address(serve);
  if (!address) return address.error();
  auto resolved = serve::resolve_listen_host(address->first);
  if (!resolved) return make_error("--serve " + serve + ": " + resolved.error().message);
  return {};
}

// One line per answered request at info ("xftctl: serve: POST /v1/completions
// 200 prompt=5 completion=16 80ms"; -q hides it): never a body, query or key.
void log_access(const serve::AccessRecord& record) {
  log::info("serve: " + serve::access_line(record),
            {{"method", record.method}, {"path", record.path}, {"status", record.status},
             {"prompt_tokens", record.prompt_tokens}, {"completion_tokens", record.completion_tokens},
             {"ms", static_cast<long long>(record.ms)}});
}

constexpr const char* kApiKeyVariable = "XFTCTL_API_KEY";

// The key the server requires (empty: none). The control node resolves it
// (--api-key, --api-key-file, or XFTCTL_API_KEY) and hands it to the ranks in
// their environment only; a rank takes it from there and nowhere else.
Expected<std::string> api_key(const RunOptions& o) {
  const char* env = std::getenv(kApiKeyVariable);
  const std::string from_env = env ? env : "";
  if (o.rank_worker) {
    if (o.require_api_key && from_env.empty()) {
      return make_error(std::string("an API key is required but ") + kApiKeyVariable +
                        " is not in this rank's environment (mpirun did not forward it); not serving without it");
    }
    return from_env;
  }
  if (!o.api_key.empty()) return o.api_key;
  if (!o.api_key_file.empty()) return serve::read_api_key_file(o.api_key_file);
  return from_env;
}

bool loopback_address(const std::string& numeric) { return numeric.rfind("127.", 0) == 0 || numeric == "::1"; }

serve::AccessPolicy access_policy(const RunOptions& o, bool keyed) {
  serve::AccessPolicy policy;
  policy.any_host = keyed;
  policy.allowed_hosts = serve::split_list(o.allowed_hosts);
  policy.cors_origins = serve::split_list(o.cors_origins);
  return policy;
}

void run_serve(Context& ctx, const RunOptions& o, Communicator* comm) {
  catch_stop_signals();
  auto key = api_key(o);
  if (is_leader(comm) && !key) return fail(ctx, key.error().message);  // before any rank loads a model
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  if (!is_leader(comm)) {
    auto followed = serve::Scheduler::follow(model, o.max_batch);
    if (!followed) fail(ctx, followed.error().message);
    return;
  }
  // Only rank 0 stops generations, so the end tokens are not shared.
  const auto stop_ids = stop_ids_for(model.config(), tokenizer_stop_ids(**tok));
  const auto address = *parse_listen_address(o.serve);  // checked before anything started
  // Rank 0 must still take part in the shutdown step when it cannot serve.
  std::atomic<bool> stop_now{true};
  serve::SchedulerOptions scheduling;
  scheduling.max_batch = o.max_batch;
  scheduling.max_queue = o.max_queue;
  scheduling.kv_budget_bytes = static_cast<size_t>(o.kv_cache_mib) << 20;
  scheduling.prefill_chunk = o.prefill_chunk;
  serve::Scheduler scheduler(model, scheduling);
  serve::ServerOptions server_options;
  server_options.model_name = served_model_name(o);
  server_options.api_key = *key;
  server_options.default_max_tokens = o.max_new_tokens;
  server_options.created = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  server_options.access_log = log_access;
  serve::Server server(scheduler, **tok, stop_ids, server_options);
  serve::HttpOptions http_options;
  http_options.access = access_policy(o, !key->empty());
  http_options.screen = [&server](const serve::HttpRequest& head, serve::HttpResponder& responder) {
    server.screen(head, responder);
  };
  http_options.answered = [&server](const serve::HttpRequest& head, int status) { server.log_answered(head, status); };
  auto http = serve::HttpServer::listen(address.first, address.second,
                                        [&server](const serve::HttpRequest& request, serve::HttpResponder& responder) {
                                          server.handle(request, responder);
                                        },
                                        std::move(http_options));
  if (!http) {
    scheduler.run(stop_now);
    return fail(ctx, http.error().message);
  }
  const double kv_mib_per_1k = scheduler.kv_bytes_per_position() * 1000.0 / (1 << 20);
  spdlog::info("serving {} on http://{}:{} (OpenAI API under /v1, chat page at /)", server_options.model_name,
               url_host(address.first), (*http)->port());
  spdlog::info("{} rank{}, {}, batch up to {}, queue {}, context {}, KV {:.1f} MiB per 1000 positions{}{}",
               model.comm().size(), model.comm().size() == 1 ? "" : "s", model.kernel_name(), o.max_batch,
               o.max_queue, model.max_context(), kv_mib_per_1k,
               o.kv_cache_mib > 0 ? ", KV budget " + std::to_string(o.kv_cache_mib) + " MiB" : std::string(),
               key->empty() ? "" : ", API key required");
  const auto numeric = serve::resolve_listen_host(address.first);
  if (key->empty() && !(numeric && loopback_address(*numeric))) {
    spdlog::warn("serving on {} with no API key: anyone who can reach this port can use the model "
                 "(set {} or --api-key-file FILE)",
                 address.first, kApiKeyVariable);
  }
  std::fflush(stderr);
  auto ran = scheduler.run(g_serve_stop);
  (*http)->stop();
  if (!ran) return fail(ctx, ran.error().message);
  spdlog::info("server stopped");
}

void run_mode(Context& ctx, const RunOptions& o, Communicator* comm) {
  if (!o.serve.empty()) return run_serve(ctx, o, comm);
  if (o.bench) return run_bench(ctx, o, comm);
  if (!o.prompt_ids.empty()) return run_dump_logits(ctx, o, comm);
  if (o.chat) return run_chat(ctx, o, comm);
  return run_prompt(ctx, o, comm);
}

std::string absolute(const std::string& path) {
  return path.empty() ? path : fs::absolute(path).lexically_normal().string();
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// oneCCL users set CCL_ALLREDUCE; without --comm it is the ranks' selection.
// Every oneCCL-only name in it is said once, with what runs instead.
void adopt_oneccl_selection(RunOptions& o) {
  const char* env = std::getenv("CCL_ALLREDUCE");
  if (!env || !*env) return;
  o.comm = env;
  spdlog::info("run qwen: --comm from CCL_ALLREDUCE={}", env);
  for (const auto& note : engine::comm::oneccl_alias_notes(o.comm)) spdlog::info("run qwen: {}", note);
}

// Everything a rank needs, re-spelled as the worker's command line.
std::vector<std::string> worker_arguments(const RunOptions& o) {
  std::vector<std::string> a{"run", "qwen", "--rank-worker", "--dtype", o.dtype, "--kv-dtype", o.kv_dtype,
                             "--comm", o.comm};
  auto add = [&a](const std::string& flag, const std::string& value) { a.insert(a.end(), {flag, value}); };
  if (!o.model_dir.empty()) add("--model", absolute(o.model_dir));
  if (!o.fake_model.empty()) add("--fake-model", o.fake_model);
  if (!o.tokenizer_dir.empty()) add("--tokenizer", absolute(o.tokenizer_dir));
  if (o.threads > 0) add("--threads", std::to_string(o.threads));
  if (!o.cpus.empty()) add("--cpus", o.cpus);
  if (o.max_context > 0) add("--max-context", std::to_string(o.max_context));
  if (o.prompt) add("--prompt", *o.prompt);
  if (o.raw) a.push_back("--raw");
  if (!o.system.empty()) add("--system", o.system);
  if (o.chat) a.push_back("--chat");
  if (!o.prompt_ids.empty()) add("--prompt-ids", o.prompt_ids);
  if (!o.dump_logits.empty()) add("--dump-logits", absolute(o.dump_logits));
  add("--max-new-tokens", std::to_string(o.max_new_tokens));
  add("--temperature", number(o.temperature));
  add("--top-k", std::to_string(o.top_k));
  add("--top-p", number(o.top_p));
  add("--repetition-penalty", number(o.repetition_penalty));
  add("--seed", std::to_string(o.seed));
  if (o.greedy) a.push_back("--greedy");
  if (o.bench) {
    a.push_back("--bench");
    add("--input-tokens", std::to_string(o.input_tokens));
    add("--output-tokens", std::to_string(o.output_tokens));
    add("--batch-size", std::to_string(o.batch_size));
    add("--iters", std::to_string(o.iters));
    add("--warmup", std::to_string(o.warmup));
  }
  if (o.json) a.push_back("--json");
  if (o.batch_invariant) a.push_back("--batch-invariant");
  if (o.no_batch_invariant) a.push_back("--no-batch-invariant");
  if (!o.serve.empty()) {
    add("--serve", o.serve);
    if (!o.served_model_name.empty()) add("--served-model-name", o.served_model_name);
    add("--max-batch", std::to_string(o.max_batch));
    add("--max-queue", std::to_string(o.max_queue));
    add("--kv-cache-mib", std::to_string(o.kv_cache_mib));
    add("--prefill-chunk", std::to_string(o.prefill_chunk));
    if (!o.allowed_hosts.empty()) add("--allowed-hosts", o.allowed_hosts);
    if (!o.cors_origins.empty()) add("--cors-origin", o.cors_origins);
  }
  if (o.comm_bf16) a.push_back("--comm-bf16");
  if (o.profile) a.push_back("--profile");
  if (o.fail_rank >= 0) {
    add("--fail-rank", std::to_string(o.fail_rank));
    add("--fail-at-token", std::to_string(o.fail_at_token));
  }
  return a;
}

// A rank under mpirun: the model slice of this rank, collectives over MPI or
// shared memory. An error on any rank aborts the job, so no rank waits forever
// in a collective for a peer that is gone.
int run_worker(Context& ctx, const RunOptions& o) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  g_rank_label = "rank " + std::to_string(rank) + " (" + this_hostname() + ")";
  engine::comm::CommBackendOptions backend;
  backend.backend = o.comm;
  backend.bf16_payload = o.comm_bf16;
  auto comm = engine::comm::MpiCommunicator::create(MPI_COMM_WORLD, backend);
  if (!comm) {
    fail(ctx, "--comm " + o.comm + ": " + comm.error().message);
  } else {
    try {
      run_mode(ctx, o, comm->get());
    } catch (const std::exception& e) {
      fail(ctx, e.what());
    }
  }
  std::fflush(stdout);
  if (ctx.exit_code != exit_ok) {
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, ctx.exit_code);
  }
  comm->reset();
  MPI_Finalize();
  return exit_ok;
}

void run_control(Context& ctx, const RunOptions& o) {
  std::vector<std::string> command{self_path()};
  auto args = worker_arguments(o);
  command.insert(command.end(), args.begin(), args.end());
  RankRun run;
  if (!o.serve.empty()) {
    auto key = api_key(o);  // already checked before the launch
    if (key && !key->empty()) {
      // Only in mpirun's environment, forwarded with -x: never on any command line.
      run.secret_env.emplace_back(kApiKeyVariable, *key);
      command.push_back("--require-api-key");
    }
  }
  run.what = "run qwen";
  run.dry_run = o.dry_run;
  run.pass_stdin = o.chat;
  run.signal_is_normal_stop = !o.serve.empty();
  int failure_code = exit_error;
  auto planned = plan_for(ctx, o.plan, o.reach, failure_code);
  if (!planned && o.plan.local_ranks > 0) {
    // More ranks than cores: correct but slow; worth it for tests and debugging.
    spdlog::info("{}; running {} unbound ranks instead", planned.error().message, o.plan.local_ranks);
    ctx.exit_code = run_ranks_oversubscribed(o.plan.local_ranks, command, run);
    return;
  }
  if (!planned) {
    spdlog::error("run qwen: {}", planned.error().message);
    ctx.exit_code = failure_code;
    return;
  }
  if (!o.dry_run) log::info(launcher::format_rank_map(planned->plan));
  auto mpirun = mpirun_for(*planned, o.reach, command);
  if (!mpirun) return fail(ctx, mpirun.error().message);
  ctx.exit_code = run_ranks(planned->plan, *mpirun, run);
}

}  // namespace

void add_run_commands(CLI::App& app, Context& ctx) {
  auto* run = app.add_subcommand("run", "run a model on this machine");
  run->require_subcommand(1);
  auto options = std::make_shared<RunOptions>();
  auto* qwen = run->add_subcommand(
      "qwen", "Qwen1/2/2.5/3: answer a prompt, chat, dump logits or benchmark");
  auto* source = qwen->add_option_group("model source");
  source->add_option("-m,--model", options->model_dir, "Hugging Face checkpoint directory");
  source->add_option("--fake-model", options->fake_model,
                     "preset (qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, qwen2.5-72b, qwen3-0.6b, "
                     "qwen-72b) or a config.json, filled with deterministic weights");
  source->require_option(1);
  qwen->add_option("--tokenizer", options->tokenizer_dir,
                   "directory with tokenizer.json or qwen.tiktoken (default: the model's)");
  qwen->add_option("--dtype", options->dtype, "weight format")
      ->check(CLI::IsMember({"bf16", "fp16", "int8", "int4", "fp32"}))
      ->capture_default_str();
  qwen->add_option("--kv-dtype", options->kv_dtype, "KV cache format")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  qwen->add_option("-t,--threads", options->threads, "worker threads (default: the cpus allowed)")
      ->check(CLI::PositiveNumber);
  qwen->add_option("--cpus", options->cpus, "pin threads to these cpus, e.g. 0-3,8");
  qwen->add_option("-c,--max-context", options->max_context,
                   "KV cache positions per sequence (default min(max_position_embeddings, 8192))")
      ->check(CLI::PositiveNumber);

  auto* mode = qwen->add_option_group("mode");
  mode->add_option("-p,--prompt", options->prompt, "answer this prompt, streaming");
  mode->add_flag("--chat", options->chat, "interactive chat on stdin (/reset, /exit)");
  mode->add_option("--prompt-ids", options->prompt_ids,
                   "token ids 1,2,3 for --dump-logits (no sampling)");
  mode->add_flag("--bench", options->bench, "measure first-token and next-token latency");
  auto* serve_flag = mode->add_option("--serve", options->serve,
                                      "[HOST:]PORT: OpenAI-compatible API and chat page (8000 = 127.0.0.1:8000; "
                                      "localhost:8000, 0.0.0.0:8000, [::1]:8000)");
  auto* port_flag = mode->add_option("--port", options->port, "serve on this port (of --host); instead of --serve")
                        ->check(CLI::Range(0, 65535))->excludes(serve_flag);
  mode->require_option(1);
  qwen->add_option("--host", options->host, "serve with --port: the address or name to listen on")
      ->capture_default_str()->needs(port_flag);
  qwen->add_option("--served-model-name", options->served_model_name,
                   "serve: the model's name in /v1/models and answers; requests naming another get 404 (default: "
                   "the model directory's name)");
  qwen->add_option("--max-batch", options->max_batch, "serve: sequences decoded together")
      ->capture_default_str()->check(CLI::Range(1, 1024));
  qwen->add_option("--max-queue", options->max_queue, "serve: waiting requests before 429")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  qwen->add_option("--prefill-chunk", options->prefill_chunk,
                   "serve: prompt tokens fed per step beside the decodes (long prompts over several steps; 0: whole prompts)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  qwen->add_flag("--no-batch-invariant", options->no_batch_invariant,
                 "serve, prompt, chat: oneDNN prefill (faster; the last bits, and so a token now and then, may depend on "
                 "what shares a step)");
  qwen->add_option("--kv-cache-mib", options->kv_cache_mib,
                   "serve: KV cache of all running requests per rank (0: no limit beyond --max-batch)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  qwen->add_option("--api-key", options->api_key,
                   "serve: require 'Authorization: Bearer KEY' (visible in ps: prefer XFTCTL_API_KEY or --api-key-file)");
  qwen->add_option("--api-key-file", options->api_key_file,
                   "serve: the key is this file's first line (the file must be chmod 600; read on this machine)");
  qwen->add_option("--allowed-hosts", options->allowed_hosts,
                   "serve without a key: Host names served besides localhost, 127.0.0.1 and [::1] (a,b)");
  qwen->add_option("--cors-origin", options->cors_origins,
                   "serve: pages of these origins may call the API (CORS), e.g. https://app.example.com (a,b)");

  qwen->add_flag("--raw", options->raw, "use the prompt as is, without the ChatML template");
  qwen->add_option("--system", options->system, "system message (default: Qwen's)");
  qwen->add_option("--dump-logits", options->dump_logits,
                   "with --prompt-ids: write int32 n_tokens, int32 n_vocab, float32 logits");
  qwen->add_option("-n,--max-new-tokens", options->max_new_tokens)->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--temperature", options->temperature)->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--top-k", options->top_k, "0: no limit")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--top-p", options->top_p)->capture_default_str()->check(CLI::Range(0.0, 1.0));
  qwen->add_option("--repetition-penalty", options->repetition_penalty)->capture_default_str()
      ->check(CLI::PositiveNumber);
  qwen->add_option("--seed", options->seed, "sampling seed (and fake-model weights seed)")
      ->capture_default_str();
  qwen->add_flag("--greedy", options->greedy, "always the most likely token");

  qwen->add_option("--input-tokens", options->input_tokens, "bench: prompt length")
      ->capture_default_str();
  qwen->add_option("--output-tokens", options->output_tokens, "bench: tokens generated")
      ->capture_default_str();
  qwen->add_option("--batch-size", options->batch_size, "bench: sequences decoded together")
      ->capture_default_str();
  qwen->add_option("--iters", options->iters, "bench: measured iterations")->capture_default_str();
  qwen->add_option("--warmup", options->warmup, "bench: unmeasured iterations first")
      ->capture_default_str();
  qwen->add_flag("--json", options->json, "bench: print JSON");
  qwen->add_flag("--batch-invariant", options->batch_invariant,
                 "decode batches as the server does: every row as if alone (GEMV, no oneDNN)");

  auto* ranks = qwen->add_option_group("ranks (tensor parallelism)");
  ranks->add_option("--local", options->plan.local_ranks, "N ranks on this machine (default with no inventory: one, in this process)")
      ->check(CLI::Range(1, 4096));
  ranks->add_option("--comm", options->comm, "allreduce between ranks: mpi, shm (one host), hier (shm inside hosts, MPI across), auto, or a selection")
      ->capture_default_str();
  ranks->add_flag("--comm-bf16", options->comm_bf16, "send activations as bf16 in the allreduce");
  ranks->add_flag("--profile", options->profile, "per-layer compute and allreduce time of every rank, and the communication share");
  ranks->add_flag("--dry-run", options->dry_run, "print the mpirun command instead of running it");
  add_plan_flags(*qwen, options->plan);
  add_env_flag(*qwen, options->plan);
  add_reach_flags(*qwen, options->reach);
  qwen->add_flag("--rank-worker", options->rank_worker)->group("");
  qwen->add_flag("--require-api-key", options->require_api_key)->group("");
  qwen->add_option("--fail-rank", options->fail_rank)->group("");
  qwen->add_option("--fail-at-token", options->fail_at_token)->group("");

  qwen->callback([&ctx, options, qwen] {
    if (!options->rank_worker && qwen->count("--comm") == 0) adopt_oneccl_selection(*options);
    const RunOptions& o = *options;
    if (!o.dump_logits.empty() && o.prompt_ids.empty()) {
      return fail(ctx, "--dump-logits needs --prompt-ids");
    }
    if (!o.prompt_ids.empty() && o.dump_logits.empty()) {
      return fail(ctx, "--prompt-ids needs --dump-logits FILE");
    }
    if (o.comm != "auto" && o.comm != "mpi" && o.comm != "shm" && o.comm != "hier" &&
        o.comm.find(':') == std::string::npos) {
      return fail(ctx, "--comm " + o.comm + ": expected mpi, shm, hier, auto or a selection like 'shm:0-65536;mpi:65537-max'");
    }
    if (o.port >= 0) {  // --host/--port say what --serve says; the ranks are given --serve
      if (o.host.find_first_of("[]") != std::string::npos) return fail(ctx, "--host " + o.host + ": give an IPv6 address without brackets");
      options->serve = url_host(o.host) + ":" + std::to_string(o.port);
    }
    if (!o.serve.empty()) {  // before any model is loaded or rank started
      if (auto checked = check_listen_address(o.serve); !checked) return fail(ctx, checked.error().message);
      if (!o.rank_worker) {
        if (auto key = api_key(o); !key) return fail(ctx, key.error().message);
      }
    }
    if (o.rank_worker) {
      ctx.exit_code = run_worker(ctx, o);
      return;
    }
    if (o.plan.local_ranks > 0 || !ctx.inventory_flag.empty() || !o.reach.hosts.empty()) return run_control(ctx, o);
    return run_mode(ctx, o, nullptr);
  });
}

}  // namespace xft::cli
