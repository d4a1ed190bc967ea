// The gated delta rule's two forms (one-step recurrence for decode, chunked
// for prefill) against a double-precision token-by-token reference written
// from the rule's definition, on random heads across chunk sizes and odd
// lengths, starting from a non-zero state.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/kernels/delta_rule.h"

namespace xft::engine {
namespace {

struct RandomHead {
  int n, dk, dv;
  std::vector<float> q, k, v, g, beta, state;
};

void normalize(float* x, int n, float scale) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += double(x[i]) * x[i];
  for (int i = 0; i < n; ++i) x[i] = float(x[i] * scale / std::sqrt(sum + 1e-6));
}

RandomHead random_head(int n, int dk, int dv, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), unit(0.0f, 1.0f);
  RandomHead h{n, dk, dv, {}, {}, {}, {}, {}, {}};
  auto fill = [&](std::vector<float>& x, size_t size) {
    x.resize(size);
    for (float& e : x) e = uniform(rng);
  };
  fill(h.q, size_t(n) * dk);
  fill(h.k, size_t(n) * dk);
  fill(h.v, size_t(n) * dv);
  fill(h.state, size_t(dk) * dv);
  for (int t = 0; t < n; ++t) {
    normalize(h.q.data() + size_t(t) * dk, dk, 1.0f / std::sqrt(float(dk)));
    normalize(h.k.data() + size_t(t) * dk, dk, 1.0f);
    h.g.push_back(-3.0f * unit(rng));  // decays from 1 down to e^-3, as softplus-scaled A gives
    h.beta.push_back(unit(rng));
  }
  return h;
}

// S ← S·exp(g); S ← S + k (β (v − Sᵀk))ᵀ; o = Sᵀq, in double.
std::vector<double> reference(const RandomHead& h, std::vector<double>& state) {
  std::vector<double> out(size_t(h.n) * h.dv);
  for (int t = 0; t < h.n; ++t) {
    const float* q = h.q.data() + size_t(t) * h.dk;
    const float* k = h.k.data() + size_t(t) * h.dk;
    const float* v = h.v.data() + size_t(t) * h.dv;
    for (double& s : state) s *= std::exp(double(h.g[t]));
    for (int c = 0; c < h.dv; ++c) {
      double kv = 0;
      for (int i = 0; i < h.dk; ++i) kv += state[size_t(i) * h.dv + c] * k[i];
      const double delta = h.beta[t] * (v[c] - kv);
      for (int i = 0; i < h.dk; ++i) state[size_t(i) * h.dv + c] += k[i] * delta;
    }
    for (int c = 0; c < h.dv; ++c) {
      double o = 0;
      for (int i = 0; i < h.dk; ++i) o += state[size_t(i) * h.dv + c] * q[i];
      out[size_t(t) * h.dv + c] = o;
    }
  }
  return out;
}

double worst(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(got[i] - want[i]));
  return diff;
}

struct RuleRun {
  std::vector<float> out, state;
};

RuleRun run_rule(const RandomHead& h, int chunk) {
  RuleRun r{std::vector<float>(size_t(h.n) * h.dv), h.state};
  DeltaRuleHead head{h.q.data(), h.k.data(), h.v.data(), h.g.data(), h.beta.data(), r.out.data(), h.n, h.dk, h.dv};
  if (chunk == 0) {
    delta_rule_recurrent(head, r.state.data());
  } else {
    std::vector<float> scratch;
    delta_rule_chunked(head, r.state.data(), chunk, scratch);
  }
  return r;
}

TEST(DeltaRule, BothFormsMatchTheDoubleReferenceAcrossChunkSizesAndLengths) {
  unsigned seed = 1;
  for (int n : {1, 2, 7, 33, 64, 65, 130}) {
    for (auto [dk, dv] : {std::pair{16, 16}, {8, 24}, {128, 128}}) {
      const RandomHead h = random_head(n, dk, dv, seed++);
      std::vector<double> state(h.state.begin(), h.state.end());
      const std::vector<double> want = reference(h, state);
      for (int chunk : {0, 1, 3, 16, 64}) {  // 0: the one-step recurrence
        const RuleRun r = run_rule(h, chunk);
        EXPECT_LT(worst(r.out, want), 2e-5) << "n " << n << " dk " << dk << " dv " << dv << " chunk " << chunk;
        EXPECT_LT(worst(r.state, state), 2e-5) << "state, n " << n << " dk " << dk << " chunk " << chunk;
      }
    }
  }
}

// A prompt prefilled in chunks, then decoded token by token, carries the same
// state as the whole sequence run at once.
TEST(DeltaRule, ChunkedPrefillThenRecurrentDecodeContinueTheSameState) {
  const RandomHead h = random_head(50, 16, 32, 99);
  std::vector<double> state(h.state.begin(), h.state.end());
  const std::vector<double> want = reference(h, state);
  std::vector<float> out(size_t(h.n) * h.dv), s = h.state, scratch;
  const int prefill = 41;
  DeltaRuleHead first{h.q.data(), h.k.data(), h.v.data(), h.g.data(), h.beta.data(), out.data(), prefill, h.dk, h.dv};
  delta_rule_chunked(first, s.data(), 16, scratch);
  for (int t = prefill; t < h.n; ++t) {
    DeltaRuleHead step{h.q.data() + size_t(t) * h.dk, h.k.data() + size_t(t) * h.dk, h.v.data() + size_t(t) * h.dv,
                       h.g.data() + t, h.beta.data() + t, out.data() + size_t(t) * h.dv, 1, h.dk, h.dv};
    delta_rule_recurrent(step, s.data());
  }
  EXPECT_LT(worst(out, want), 2e-5);
  EXPECT_LT(worst(s, state), 2e-5);
}

}  // namespace
}  // namespace xft::engine
