#include "engine/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace xft::engine {

namespace {

// Higher logit first; equal logits: lower id first, so ties break the same on
// every rank and in every run.
bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void apply_repetition_penalty(float* logits, int n, int vocab_begin, float penalty,
                              std::span<const int32_t> history) {
  if (penalty == 1.0f) return;
  std::unordered_set<int32_t> seen(history.begin(), history.end());
  for (int32_t id : seen) {
    const int local = id - vocab_begin;
    if (local < 0 || local >= n) continue;
    float& v = logits[local];
    v = v > 0.0f ? v / penalty : v * penalty;
  }
}

// The best `count` of logits[0..n) by `better`, best first. One pass with a
// heap of the best seen so far (its front the worst of them), never copying
// the vocabulary. Ids rise as the pass goes, so a logit no higher than the
// worst kept one can never be better: one comparison refuses most tokens.
std::vector<Candidate> best_candidates(const float* logits, int n, int vocab_begin, int count) {
  count = std::min(count, n);
  std::vector<Candidate> best;
  if (count <= 0) return best;
  best.reserve(count);
  for (int i = 0; i < count; ++i) best.push_back({logits[i], vocab_begin + i});
  std::make_heap(best.begin(), best.end(), better);
  float worst = best.front().logit;
  for (int i = count; i < n; ++i) {
    if (!(logits[i] > worst)) continue;
    std::pop_heap(best.begin(), best.end(), better);
    best.back() = {logits[i], vocab_begin + i};
    std::push_heap(best.begin(), best.end(), better);
    worst = best.front().logit;
  }
  std::sort_heap(best.begin(), best.end(), better);
  return best;
}

// The raw statistics of this rank's slice, before anything modifies it.
void add_raw_statistics(const float* logits, int n, int vocab_begin, int top, Proposal& proposal) {
  float max = logits[0];
  for (int i = 1; i < n; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  proposal.raw_max = max;
  proposal.raw_sum_exp = static_cast<float>(sum);
  proposal.raw_top = best_candidates(logits, n, vocab_begin, std::min(top, n));
  for (Candidate& c : proposal.raw_top) c.raw = c.logit;
  proposal.raw_count = static_cast<int32_t>(proposal.raw_top.size());
}

}  // namespace

TokenSampler::TokenSampler(const SamplingParams& params, int greedy_candidates)
    : params_(params),
      greedy_candidates_(std::clamp(greedy_candidates, 1, kMaxCandidates)),
      rng_state_(params.seed ^ 0x5851F42D4C957F2Dull) {}

int TokenSampler::candidate_cap() const {
  if (params_.is_greedy()) return greedy_candidates_;
  if (params_.top_k > 0) return std::min(params_.top_k, kMaxCandidates);
  return kMaxCandidates;
}

double TokenSampler::next_uniform() {
  return static_cast<double>(splitmix64(rng_state_) >> 11) * 0x1.0p-53;
}

Proposal TokenSampler::propose(float* logits, int n, int vocab_begin,
                               std::span<const int32_t> history) const {
  const bool wants_logprobs = params_.logprobs >= 0 && n > 0;
  std::vector<float> raw;
  if (wants_logprobs) raw.assign(logits, logits + n);
  apply_repetition_penalty(logits, n, vocab_begin, params_.repetition_penalty, history);
  Proposal proposal;
  if (n <= 0) {
    proposal.max = -std::numeric_limits<float>::infinity();
    return proposal;
  }
  if (!params_.is_greedy() && params_.temperature != 1.0f) {
    const float inv_t = 1.0f / params_.temperature;
    for (int i = 0; i < n; ++i) logits[i] *= inv_t;
  }
  const int cap = std::min(candidate_cap(), n);
  if (cap == 1) {
    int best = 0;
    for (int i = 1; i < n; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    proposal.candidates = {{logits[best], vocab_begin + best}};
  } else {
    proposal.candidates = best_candidates(logits, n, vocab_begin, cap);
  }
  proposal.count = cap;
  proposal.max = proposal.candidates.front().logit;
  if (!params_.is_greedy()) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - proposal.max));
    proposal.sum_exp = static_cast<float>(sum);
  }
  if (wants_logprobs) {
    for (Candidate& c : proposal.candidates) c.raw = raw[c.id - vocab_begin];
    add_raw_statistics(raw.data(), n, vocab_begin, std::min(params_.logprobs, kMaxTopLogprobs), proposal);
  }
  return proposal;
}

DrawLogprobs TokenSampler::logprobs(std::span<const Proposal> proposals, int32_t chosen) const {
  // log p(x) = raw(x) - max - log(sum over ranks of sum_exp * exp(rank max - max)).
  float global_max = -std::numeric_limits<float>::infinity();
  for (const Proposal& p : proposals)
    if (p.count > 0) global_max = std::max(global_max, p.raw_max);
  double total = 0.0;
  for (const Proposal& p : proposals)
    if (p.count > 0) total += p.raw_sum_exp * std::exp(static_cast<double>(p.raw_max - global_max));
  const double log_total = std::log(total);
  auto logprob = [&](float raw) { return static_cast<float>(static_cast<double>(raw - global_max) - log_total); };

  DrawLogprobs out;
  std::vector<Candidate> top;
  for (const Proposal& p : proposals) {
    for (int i = 0; i < p.count; ++i)
      if (p.candidates[i].id == chosen) out.chosen = {chosen, logprob(p.candidates[i].raw)};
    top.insert(top.end(), p.raw_top.begin(), p.raw_top.begin() + p.raw_count);
  }
  std::sort(top.begin(), top.end(), better);
  top.resize(std::min<size_t>(top.size(), std::max(params_.logprobs, 0)));
  for (const Candidate& c : top) out.top.push_back({c.id, logprob(c.raw)});
  return out;
}

int32_t TokenSampler::choose(std::span<const Proposal> proposals) {
  std::vector<Candidate> merged;
  float global_max = -std::numeric_limits<float>::infinity();
  for (const Proposal& p : proposals) {
    merged.insert(merged.end(), p.candidates.begin(), p.candidates.begin() + p.count);
    if (p.count > 0) global_max = std::max(global_max, p.max);
  }
  if (merged.empty()) return -1;
  std::sort(merged.begin(), merged.end(), better);
  if (params_.is_greedy()) return merged.front().id;

  // Softmax mass over the whole vocabulary unless top-k restricts it.
  double total = 0.0;
  if (params_.top_k > 0) {
    merged.resize(std::min<size_t>(merged.size(), params_.top_k));
    for (const Candidate& c : merged) total += std::exp(static_cast<double>(c.logit - global_max));
  } else {
    for (const Proposal& p : proposals) {
      if (p.count > 0) total += p.sum_exp * std::exp(static_cast<double>(p.max - global_max));
    }
  }
  std::vector<double> probs(merged.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    probs[i] = std::exp(static_cast<double>(merged[i].logit - global_max)) / total;
  }
  size_t keep = merged.size();
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < merged.size(); ++i) {
      cumulative += probs[i];
      if (cumulative >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept_mass = 0.0;
  for (size_t i = 0; i < keep; ++i) kept_mass += probs[i];
  const double target = next_uniform() * kept_mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs[i];
    if (target < cumulative) return merged[i].id;
  }
  return merged[keep - 1].id;
}

namespace {

// Fixed-size wire record so one allgather carries the whole batch.
// cap candidates, then raw_cap raw candidates.
struct RecordHeader {
  float max;
  float sum_exp;
  int32_t count;
  float raw_max;
  float raw_sum_exp;
  int32_t raw_count;
};

size_t record_bytes(int cap, int raw_cap) { return sizeof(RecordHeader) + sizeof(Candidate) * (cap + raw_cap); }

void pack(const Proposal& p, int cap, int raw_cap, unsigned char* out) {
  RecordHeader header{p.max, p.sum_exp, p.count, p.raw_max, p.raw_sum_exp, p.raw_count};
  std::memset(out, 0, record_bytes(cap, raw_cap));
  std::memcpy(out, &header, sizeof header);
  unsigned char* candidates = out + sizeof header;
  // memcpy from an empty vector's null data() is undefined even for 0 bytes.
  if (p.count > 0) std::memcpy(candidates, p.candidates.data(), sizeof(Candidate) * p.count);
  if (p.raw_count > 0)
    std::memcpy(candidates + sizeof(Candidate) * cap, p.raw_top.data(), sizeof(Candidate) * p.raw_count);
}

Proposal unpack(const unsigned char* in, int cap) {
  RecordHeader header;
  std::memcpy(&header, in, sizeof header);
  Proposal p;
  p.max = header.max;
  p.sum_exp = header.sum_exp;
  p.count = header.count;
  p.raw_max = header.raw_max;
  p.raw_sum_exp = header.raw_sum_exp;
  p.raw_count = header.raw_count;
  const unsigned char* candidates = in + sizeof header;
  p.candidates.resize(header.count);
  if (header.count > 0) std::memcpy(p.candidates.data(), candidates, sizeof(Candidate) * header.count);
  p.raw_top.resize(header.raw_count);
  if (header.raw_count > 0)
    std::memcpy(p.raw_top.data(), candidates + sizeof(Candidate) * cap, sizeof(Candidate) * header.raw_count);
  return p;
}

}  // namespace

std::vector<int32_t> sample_batch(Communicator& comm, std::span<TokenSampler* const> samplers,
                                  std::span<float* const> rows, int n, int vocab_begin,
                                  std::span<const std::span<const int32_t>> histories,
                                  std::vector<DrawLogprobs>* logprobs, std::vector<Proposal>* first_proposals) {
  const size_t batch = samplers.size();
  int cap = 1;
  int raw_cap = 0;
  for (TokenSampler* s : samplers) {
    cap = std::max(cap, s->candidate_cap());
    raw_cap = std::max(raw_cap, std::min(s->params().logprobs, kMaxTopLogprobs));
  }
  const size_t per_seq = record_bytes(cap, raw_cap);
  const size_t per_rank = per_seq * batch;
  std::vector<unsigned char> local(per_rank);
  for (size_t b = 0; b < batch; ++b) {
    Proposal p = samplers[b]->propose(rows[b], n, vocab_begin, histories[b]);
    pack(p, cap, raw_cap, local.data() + b * per_seq);
  }
  const int ranks = comm.size();
  std::vector<unsigned char> gathered(per_rank * ranks);
  comm.allgather(local.data(), per_rank, gathered.data());

  std::vector<int32_t> chosen(batch);
  std::vector<Proposal> proposals(ranks);
  if (logprobs) logprobs->assign(batch, DrawLogprobs{});
  if (first_proposals) first_proposals->assign(batch, Proposal{});
  for (size_t b = 0; b < batch; ++b) {
    for (int r = 0; r < ranks; ++r) {
      proposals[r] = unpack(gathered.data() + r * per_rank + b * per_seq, cap);
    }
    chosen[b] = samplers[b]->choose(proposals);
    if (logprobs && samplers[b]->params().logprobs >= 0) (*logprobs)[b] = samplers[b]->logprobs(proposals, chosen[b]);
    if (first_proposals) (*first_proposals)[b] = std::move(proposals[0]);
  }
  return chosen;
}

}  // namespace xft::engine
