// The loops here are element-wise axpys over a head's dimensions: with the
// -O2 default (the very-cheap vectorizer cost model) GCC leaves loops of a
// run-time length scalar, so this file asks for the dynamic cost model, and
// the bodies are compiled twice: for AVX-512 (picked at run time) and for the
// baseline. No reassociation: both give the scalar loops' sums.
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")

#include "engine/kernels/delta_rule.h"

#include <cmath>
#include <cstddef>

#include "engine/kernels/cpu_features.h"

#define XFT_DELTA_INLINE inline __attribute__((always_inline))

namespace xft::engine {

namespace {

// y[dv] = xᵀ·S for x[dk], S[dk][dv].
XFT_DELTA_INLINE void read_state(const float* __restrict x, const float* __restrict state, int dk, int dv,
                                 float* __restrict y) {
  for (int j = 0; j < dv; ++j) y[j] = 0.0f;
  for (int i = 0; i < dk; ++i) {
    const float xi = x[i];
    const float* row = state + static_cast<size_t>(i) * dv;
    for (int j = 0; j < dv; ++j) y[j] += xi * row[j];
  }
}

// One chunk of n ≤ C tokens starting at token t0.
struct ChunkScratch {
  float* gamma;  // [n] decay summed from the chunk's start
  float* kt;     // [dk][n] the chunk's keys, transposed
  float* kk;     // [n][n] k_i·k_j
  float* qk;     // [n][n] q_i·k_j
  float* u;      // [n][dv] new values, then v_new
  float* w;      // [n][dk] decayed β k through the system
  float* read;   // [dv]
};

// out[i][j] = x_i·k_j for j ≤ last(i), as rows of axpys over the transposed
// keys (vectorizable without reordering a reduction).
XFT_DELTA_INLINE void gram(const float* __restrict x, const float* __restrict kt, int n, int dk, bool diagonal,
                           float* __restrict out) {
  for (int i = 0; i < n; ++i) {
    float* row = out + static_cast<size_t>(i) * n;
    const int count = diagonal ? i + 1 : i;
    for (int j = 0; j < count; ++j) row[j] = 0.0f;
    const float* xi = x + static_cast<size_t>(i) * dk;
    for (int c = 0; c < dk; ++c) {
      const float xc = xi[c];
      const float* kc = kt + static_cast<size_t>(c) * n;
      for (int j = 0; j < count; ++j) row[j] += xc * kc[j];
    }
  }
}

XFT_DELTA_INLINE void solve_chunk(const DeltaRuleHead& h, int t0, int n, float* state, const ChunkScratch& s) {
  const int dk = h.dk, dv = h.dv;
  float running = 0.0f;
  for (int i = 0; i < n; ++i) {
    running += h.g[t0 + i];
    s.gamma[i] = running;
  }
  const float* k = h.k + static_cast<size_t>(t0) * dk;
  const float* q = h.q + static_cast<size_t>(t0) * dk;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < dk; ++c) s.kt[static_cast<size_t>(c) * n + i] = k[static_cast<size_t>(i) * dk + c];
  }
  gram(k, s.kt, n, dk, false, s.kk);
  gram(q, s.kt, n, dk, true, s.qk);
  // U = (I + A)⁻¹ β V and W = (I + A)⁻¹ β exp(γ) K by forward substitution.
  for (int i = 0; i < n; ++i) {
    const float* ki = k + static_cast<size_t>(i) * dk;
    const float bi = h.beta[t0 + i];
    float* ui = s.u + static_cast<size_t>(i) * dv;
    float* wi = s.w + static_cast<size_t>(i) * dk;
    const float* vi = h.v + static_cast<size_t>(t0 + i) * dv;
    const float decay_i = std::exp(s.gamma[i]);
    for (int c = 0; c < dv; ++c) ui[c] = bi * vi[c];
    for (int c = 0; c < dk; ++c) wi[c] = bi * decay_i * ki[c];
    const float* kk = s.kk + static_cast<size_t>(i) * n;
    for (int j = 0; j < i; ++j) {
      const float aij = bi * kk[j] * std::exp(s.gamma[i] - s.gamma[j]);
      const float* uj = s.u + static_cast<size_t>(j) * dv;
      const float* wj = s.w + static_cast<size_t>(j) * dk;
      for (int c = 0; c < dv; ++c) ui[c] -= aij * uj[c];
      for (int c = 0; c < dk; ++c) wi[c] -= aij * wj[c];
    }
  }
  // v_new = U − W·S (the part of each write the state before the chunk does not already hold).
  for (int i = 0; i < n; ++i) {
    float* ui = s.u + static_cast<size_t>(i) * dv;
    read_state(s.w + static_cast<size_t>(i) * dk, state, dk, dv, s.read);
    for (int c = 0; c < dv; ++c) ui[c] -= s.read[c];
  }
  // o_i = exp(γ_i) qᵢᵀS + Σ_{j≤i} (q_i·k_j) exp(γ_i − γ_j) v_new_j.
  for (int i = 0; i < n; ++i) {
    const float* qi = q + static_cast<size_t>(i) * dk;
    float* oi = h.out + static_cast<size_t>(t0 + i) * dv;
    read_state(qi, state, dk, dv, oi);
    const float decay_i = std::exp(s.gamma[i]);
    for (int c = 0; c < dv; ++c) oi[c] *= decay_i;
    const float* qk = s.qk + static_cast<size_t>(i) * n;
    for (int j = 0; j <= i; ++j) {
      const float f = qk[j] * std::exp(s.gamma[i] - s.gamma[j]);
      const float* uj = s.u + static_cast<size_t>(j) * dv;
      for (int c = 0; c < dv; ++c) oi[c] += f * uj[c];
    }
  }
  // S = exp(γ_last) S + Σ_j exp(γ_last − γ_j) k_j v_newⱼᵀ.
  const float last = s.gamma[n - 1];
  const float decay_all = std::exp(last);
  for (size_t e = 0; e < static_cast<size_t>(dk) * dv; ++e) state[e] *= decay_all;
  for (int j = 0; j < n; ++j) {
    const float* kj = k + static_cast<size_t>(j) * dk;
    const float* uj = s.u + static_cast<size_t>(j) * dv;
    const float f = std::exp(last - s.gamma[j]);
    for (int i = 0; i < dk; ++i) {
      const float kf = kj[i] * f;
      float* row = state + static_cast<size_t>(i) * dv;
      for (int c = 0; c < dv; ++c) row[c] += kf * uj[c];
    }
  }
}

// Two passes over the state per token instead of one per operation: the
// state is the step's largest memory traffic after the weights. Each row is
// decayed and then read into Sᵀk, written and then read into Sᵀq, so every
// value is the one the four-pass form computes (same order of sums).
XFT_DELTA_INLINE void recurrent_body(const DeltaRuleHead& h, float* __restrict state) {
  const int dk = h.dk, dv = h.dv;
  thread_local std::vector<float> delta_buffer;  // kept: a decode step allocates nothing per head
  delta_buffer.resize(dv);
  float* __restrict delta = delta_buffer.data();
  for (int t = 0; t < h.n; ++t) {
    const float* q = h.q + static_cast<size_t>(t) * dk;
    const float* k = h.k + static_cast<size_t>(t) * dk;
    const float* v = h.v + static_cast<size_t>(t) * dv;
    float* __restrict out = h.out + static_cast<size_t>(t) * dv;
    const float decay = std::exp(h.g[t]);
    for (int c = 0; c < dv; ++c) delta[c] = 0.0f;
    for (int i = 0; i < dk; ++i) {  // S ← S·exp(g); Sᵀk
      float* __restrict row = state + static_cast<size_t>(i) * dv;
      const float ki = k[i];
      for (int c = 0; c < dv; ++c) {
        row[c] *= decay;
        delta[c] += ki * row[c];
      }
    }
    for (int c = 0; c < dv; ++c) delta[c] = (v[c] - delta[c]) * h.beta[t];
    for (int c = 0; c < dv; ++c) out[c] = 0.0f;
    for (int i = 0; i < dk; ++i) {  // S ← S + k·δᵀ; o = Sᵀq
      float* __restrict row = state + static_cast<size_t>(i) * dv;
      const float ki = k[i], qi = q[i];
      for (int c = 0; c < dv; ++c) {
        row[c] += ki * delta[c];
        out[c] += qi * row[c];
      }
    }
  }
}

XFT_DELTA_INLINE void chunked_body(const DeltaRuleHead& h, float* state, int chunk, std::vector<float>& scratch) {
  if (chunk < 1) chunk = 1;
  const size_t c = static_cast<size_t>(chunk);
  scratch.resize(c + c * h.dk + 2 * c * c + c * h.dv + c * h.dk + h.dv);
  ChunkScratch s;
  s.gamma = scratch.data();
  s.kt = s.gamma + c;
  s.kk = s.kt + c * h.dk;
  s.qk = s.kk + c * c;
  s.u = s.qk + c * c;
  s.w = s.u + c * h.dv;
  s.read = s.w + c * h.dk;
  for (int t0 = 0; t0 < h.n; t0 += chunk) {
    const int n = h.n - t0 < chunk ? h.n - t0 : chunk;
    solve_chunk(h, t0, n, state, s);
  }
}

__attribute__((target("avx512f,avx512vl,fma"))) void recurrent_avx512(const DeltaRuleHead& h, float* state) {
  recurrent_body(h, state);
}
__attribute__((target("avx512f,avx512vl,fma"))) void chunked_avx512(const DeltaRuleHead& h, float* state, int chunk,
                                                                    std::vector<float>& scratch) {
  chunked_body(h, state, chunk, scratch);
}

}  // namespace

void delta_rule_recurrent(const DeltaRuleHead& h, float* state) {
  if (use_avx512()) return recurrent_avx512(h, state);
  recurrent_body(h, state);
}

void delta_rule_chunked(const DeltaRuleHead& h, float* state, int chunk, std::vector<float>& scratch) {
  if (use_avx512()) return chunked_avx512(h, state, chunk, scratch);
  chunked_body(h, state, chunk, scratch);
}

}  // namespace xft::engine
