#include "cli/run/generation.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace xft::cli::run_qwen {

using namespace xft::engine;

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
  constexpr size_t kPerLayer = 4;  // compute, allreduce, router, experts
  for (const auto& l : layers) {
    mine.insert(mine.end(), {l.total_ms - l.allreduce_ms, l.allreduce_ms, l.router_ms, l.experts_ms});
  }
  const int ranks = model.comm().size();
  std::vector<double> all(mine.size() * static_cast<size_t>(ranks));
  model.comm().allgather(mine.data(), mine.size() * sizeof(double), all.data());
  if (!is_leader(comm)) return;
  // One write: under mpirun each write is tagged on its own.
  char* text = nullptr;
  size_t text_size = 0;
  FILE* out = open_memstream(&text, &text_size);
  if (!out) return;
  auto at = [&](int rank, size_t layer, int what) {
    return all[static_cast<size_t>(rank) * mine.size() + layer * kPerLayer + what];
  };
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
  if (model.has_experts()) {
    // Of each mixture-of-experts layer's compute: routing (router, softmax,
    // top-k) and the experts (the chosen ones and any shared expert).
    std::fprintf(out, "experts: milliseconds over the run, per rank: router / experts\n%-6s", "layer");
    for (int r = 0; r < ranks; ++r) std::fprintf(out, "  %21s", ("rank " + std::to_string(r)).c_str());
    std::fprintf(out, "\n");
    for (size_t l = 0; l + 1 < layers.size(); ++l) {
      if (at(0, l, 2) == 0.0 && at(0, l, 3) == 0.0) continue;  // a dense layer
      std::fprintf(out, "%-6zu", l);
      for (int r = 0; r < ranks; ++r) std::fprintf(out, "  %10.2f / %8.2f", at(r, l, 2), at(r, l, 3));
      std::fprintf(out, "\n");
    }
  }
  std::fclose(out);
  std::fwrite(text, 1, text_size, stderr);
  std::free(text);
}

}  // namespace xft::cli::run_qwen
