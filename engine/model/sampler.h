// Choosing the next token from logits that may be split over tensor-parallel
// ranks by vocabulary range. Each rank proposes a few candidates from its own
// slice (plus its softmax statistics); only those are exchanged, and every
// rank then makes the same choice from the same gathered data and the same
// seeded random stream, so no rank ever sees the full logits.
//
// Order of processing follows Hugging Face generate(): repetition penalty,
// temperature, top-k, top-p, then sampling. top-p looks at no more than
// kMaxCandidates tokens per rank (the mass beyond them is still counted).
//
// Log-probabilities (OpenAI's `logprobs`) are those of the model itself, as
// vLLM reports them by default: log_softmax of the raw logits, before the
// repetition penalty and temperature, so they do not depend on how one
// chooses to sample. Each rank adds its raw softmax statistics and its
// best raw candidates to the same exchange.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/comm/communicator.h"

namespace xft::engine {

struct SamplingParams {
  bool greedy = false;
  float temperature = 1.0f;   // <= 0 means greedy
  int top_k = 0;              // 0: no limit
  float top_p = 1.0f;         // 1: no limit
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
  int logprobs = -1;  // -1: none; k >= 0: the chosen token's and the k most likely tokens' (k <= kMaxTopLogprobs)
  bool is_greedy() const { return greedy || temperature <= 0.0f; }
};

struct Candidate {
  float logit = 0.0f;  // after penalty and temperature
  int32_t id = -1;
  float raw = 0.0f;  // the model's logit (only filled when logprobs are asked for)
};

constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
};

// The chosen token's log-probability and the `logprobs` most likely tokens'
// (most likely first, ties by lower id).
struct DrawLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};

// What one rank sends for one sequence: its slice's max and sum of
// exp(logit - max), and its best `count` candidates, best first.
struct Proposal {
  float max = 0.0f;
  float sum_exp = 0.0f;
  int32_t count = 0;
  std::vector<Candidate> candidates;
  // Raw logits (logprobs asked for): max, sum of exp(raw - raw_max), and the
  // best `raw_count` tokens by raw logit, best first.
  float raw_max = 0.0f;
  float raw_sum_exp = 0.0f;
  int32_t raw_count = 0;
  std::vector<Candidate> raw_top;
};

constexpr int kMaxCandidates = 1024;

class TokenSampler {
 public:
  // greedy_candidates: how many of the best tokens a greedy proposal holds,
  // best first (a constrained draw tests them in order when the best one is refused).
  explicit TokenSampler(const SamplingParams& params, int greedy_candidates = 1);

  const SamplingParams& params() const { return params_; }
  // How many candidates a rank proposes (the same on every rank).
  int candidate_cap() const;

  // logits: this rank's slice, ids vocab_begin .. vocab_begin+n-1; modified in
  // place by the penalty and temperature. history: tokens seen so far.
  Proposal propose(float* logits, int n, int vocab_begin, std::span<const int32_t> history) const;

  // Combines every rank's proposal (in rank order) and picks the token;
  // advances the random stream unless greedy.
  int32_t choose(std::span<const Proposal> proposals);
  // The log-probabilities of `chosen` (what choose() returned for the same
  // proposals) and of the top tokens; only when params().logprobs >= 0.
  DrawLogprobs logprobs(std::span<const Proposal> proposals, int32_t chosen) const;

 private:
  double next_uniform();  // [0, 1)

  SamplingParams params_;
  int greedy_candidates_;
  uint64_t rng_state_;
};

// One collective for a whole batch: rows[b] is sequence b's logits slice
// (length n, ids from vocab_begin). Returns the chosen token per sequence;
// logprobs (when given) gets one entry per sequence, empty where the
// sequence's params ask for none; first_proposals (when given) gets each
// sequence's proposal from rank 0 (a one-rank caller's whole candidate list).
std::vector<int32_t> sample_batch(Communicator& comm, std::span<TokenSampler* const> samplers,
                                  std::span<float* const> rows, int n, int vocab_begin,
                                  std::span<const std::span<const int32_t>> histories,
                                  std::vector<DrawLogprobs>* logprobs = nullptr,
                                  std::vector<Proposal>* first_proposals = nullptr);

}  // namespace xft::engine
