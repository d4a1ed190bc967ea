// `run qwen --bench`: first-token and next-token latency, as text or JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run/generation.h"
#include "cli/run/loader.h"
#include "cli/run/modes.h"
#include "engine/checkpoint/layout.h"
#include "engine/comm/mpi_communicator.h"
#include "engine/model/sampler.h"

namespace xft::cli::run_qwen {

using namespace xft::engine;

namespace {

int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
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

}  // namespace

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
  // Decode streams what a token reads: of a mixture of experts only the
  // chosen experts (on average top_k per layer and token of the batch, at most all).
  const uint64_t token_bytes = model.decode_weight_bytes();
  const uint64_t step_bytes = model.has_experts()
                                  ? std::min<uint64_t>(weight_bytes, token_bytes * static_cast<uint64_t>(o.batch_size))
                                  : weight_bytes;
  const double weight_gbps = next_ms > 0 ? step_bytes / (next_ms * 1e6) : 0.0;
  const ParameterCount parameters = count_parameters(model.config());
  // A sequence's memory on this rank: the linear-attention state (Qwen3.5),
  // fixed in size, plus the KV cache of the attention layers per position.
  const auto one_position = model.new_sequence(1);
  const uint64_t state_bytes = one_position->linear_state_bytes();
  const uint64_t kv_per_position = one_position->kv_bytes();
  const auto sequence_bytes = [&](int positions) { return state_bytes + kv_per_position * positions; };
  const int context = o.input_tokens + o.output_tokens;
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
        {"decode_weight_bytes_per_token", token_bytes},
        {"parameters", parameters.total},
        {"active_parameters", parameters.active},
        {"decode_weight_gb_per_s", weight_gbps},
        {"sequence_state_bytes", state_bytes},
        {"kv_bytes_per_position", kv_per_position},
        {"sequence_bytes", sequence_bytes(context)},
        {"sequence_bytes_at_32k", sequence_bytes(32768)},
        {"comm", comm_name},
        {"rss_mib_per_rank", rss_mib},
    };
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("model        %s\n", loaded->name.c_str());
  // A quantized checkpoint's projections keep its format (gptq-int4, awq-int4, fp8); --dtype is the rest.
  const std::string checkpoint_format =
      model.config().quant.method == engine::QuantMethod::none ? "" : ", checkpoint " + model.format_name();
  std::printf("setup        dtype %s%s, kv %s, %d threads, kernel %s, loaded in %.0f ms\n",
              o.dtype.c_str(), checkpoint_format.c_str(), o.kv_dtype.c_str(), model.pool().size(),
              model.kernel_name().c_str(), loaded->load_ms);
  std::printf("ranks        %d, allreduce %s\n", model.partition().tp_size, comm_name.c_str());
  std::printf("weights      %.1f MiB on rank 0, %.1f MiB read per token\n", weight_bytes / 1048576.0,
              token_bytes / 1048576.0);
  std::printf("parameters   %.3f B total, %.3f B active per token\n", parameters.total / 1e9, parameters.active / 1e9);
  std::printf("memory       %s MiB resident per rank\n", rss_text.c_str());
  std::printf("sequence     %.2f MiB state + %.1f KiB KV per position on rank 0: %.1f MiB at %d positions, %.1f MiB "
              "at 32768\n",
              state_bytes / 1048576.0, kv_per_position / 1024.0, sequence_bytes(context) / 1048576.0, context,
              sequence_bytes(32768) / 1048576.0);
  std::printf("workload     %d input + %d output tokens, batch %d, %d iterations (+%d warmup)\n",
              o.input_tokens, o.output_tokens, o.batch_size, o.iters, o.warmup);
  std::printf("first token  %.2f ms  (prefill %.1f tokens/s)\n", first_ms, prefill_tps);
  std::printf("next token   %.2f ms mean, %.2f ms p90  (%.2f tokens/s, weights streamed at %.2f GB/s)\n",
              next_ms, next_p90, decode_tps, weight_gbps);
}

}  // namespace xft::cli::run_qwen
