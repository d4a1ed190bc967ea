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

}  // namespace

TokenSampler::TokenSampler(const SamplingParams& params)
    : params_(params), rng_state_(params.seed ^ 0x5851F42D4C957F2Dull) {}

int TokenSampler::candidate_cap() const {
  if (params_.is_greedy()) return 1;
  if (params_.top_k > 0) return std::min(params_.top_k, kMaxCandidates);
  return kMaxCandidates;
}

double TokenSampler::next_uniform() {
  return static_cast<double>(splitmix64(rng_state_) >> 11) * 0x1.0p-53;
}

Proposal TokenSampler::propose(float* logits, int n, int vocab_begin,
                               std::span<const int32_t> history) const {
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
    std::vector<Candidate> all(n);
    for (int i = 0; i < n; ++i) all[i] = {logits[i], vocab_begin + i};
    std::partial_sort(all.begin(), all.begin() + cap, all.end(), better);
    all.resize(cap);
    proposal.candidates = std::move(all);
  }
  proposal.count = cap;
  proposal.max = proposal.candidates.front().logit;
  if (!params_.is_greedy()) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - proposal.max));
    proposal.sum_exp = static_cast<float>(sum);
  }
  return proposal;
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
struct RecordHeader {
  float max;
  float sum_exp;
  int32_t count;
  int32_t unused;
};

size_t record_bytes(int cap) { return sizeof(RecordHeader) + sizeof(Candidate) * cap; }

void pack(const Proposal& p, int cap, unsigned char* out) {
  RecordHeader header{p.max, p.sum_exp, p.count, 0};
  std::memcpy(out, &header, sizeof header);
  std::memset(out + sizeof header, 0, sizeof(Candidate) * cap);
  std::memcpy(out + sizeof header, p.candidates.data(), sizeof(Candidate) * p.count);
}

Proposal unpack(const unsigned char* in) {
  RecordHeader header;
  std::memcpy(&header, in, sizeof header);
  Proposal p;
  p.max = header.max;
  p.sum_exp = header.sum_exp;
  p.count = header.count;
  p.candidates.resize(header.count);
  std::memcpy(p.candidates.data(), in + sizeof header, sizeof(Candidate) * header.count);
  return p;
}

}  // namespace

std::vector<int32_t> sample_batch(Communicator& comm, std::span<TokenSampler* const> samplers,
                                  std::span<float* const> rows, int n, int vocab_begin,
                                  std::span<const std::span<const int32_t>> histories) {
  const size_t batch = samplers.size();
  int cap = 1;
  for (TokenSampler* s : samplers) cap = std::max(cap, s->candidate_cap());
  const size_t per_seq = record_bytes(cap);
  const size_t per_rank = per_seq * batch;
  std::vector<unsigned char> local(per_rank);
  for (size_t b = 0; b < batch; ++b) {
    Proposal p = samplers[b]->propose(rows[b], n, vocab_begin, histories[b]);
    pack(p, cap, local.data() + b * per_seq);
  }
  const int ranks = comm.size();
  std::vector<unsigned char> gathered(per_rank * ranks);
  comm.allgather(local.data(), per_rank, gathered.data());

  std::vector<int32_t> chosen(batch);
  std::vector<Proposal> proposals(ranks);
  for (size_t b = 0; b < batch; ++b) {
    for (int r = 0; r < ranks; ++r) {
      proposals[r] = unpack(gathered.data() + r * per_rank + b * per_seq);
    }
    chosen[b] = samplers[b]->choose(proposals);
  }
  return chosen;
}

}  // namespace xft::engine
