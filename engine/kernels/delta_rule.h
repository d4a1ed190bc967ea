// The gated delta rule of Gated DeltaNet (Qwen3-Next / Qwen3.5 linear
// attention) for one value head, on contiguous per-token arrays:
//   S ← S·exp(g_t)                      decay (g_t ≤ 0)
//   S ← S + k_t·(β_t (v_t − Sᵀk_t))ᵀ     delta-rule write
//   o_t = Sᵀq_t
// with S the [dk][dv] recurrent state. q and k come L2-normalized and q scaled
// by 1/sqrt(dk) (the caller does both, as transformers does before the rule).
//
// Two forms of the same function: the one-step recurrence (decode), and the
// chunked form (prefill): inside a chunk of C tokens the writes are solved at
// once through the unit lower-triangular system (I + A)·U = β·V, A[i][j] =
// β_i (k_i·k_j) exp(γ_i − γ_j) for j < i (γ the decay summed inside the
// chunk), so a chunk costs a few C×C and C×d products instead of C state
// passes; chunks follow each other recurrently.
#pragma once

#include <vector>

namespace xft::engine {

struct DeltaRuleHead {
  const float* q = nullptr;     // [n][dk]
  const float* k = nullptr;     // [n][dk]
  const float* v = nullptr;     // [n][dv]
  const float* g = nullptr;     // [n] log decay
  const float* beta = nullptr;  // [n]
  float* out = nullptr;         // [n][dv]
  int n = 0;
  int dk = 0;
  int dv = 0;
};

// Token by token; `state` [dk][dv] in and out.
void delta_rule_recurrent(const DeltaRuleHead& head, float* state);

// In chunks of `chunk` tokens (the last one shorter); `scratch` grows as needed.
void delta_rule_chunked(const DeltaRuleHead& head, float* state, int chunk, std::vector<float>& scratch);

}  // namespace xft::engine
