// Tile kernels of attention.cpp, one implementation per ISA; internal.
#pragma once

#include <cstdint>

#include "engine/kernels/attention.h"
#include "engine/kernels/ops.h"

namespace xft::engine {

// scores[g][j] = dot(q[g], key_j) for g < group, j < n; keys: n rows of
// head_dim elements of the cache format (bf16/f16 bits or f32), contiguous.
// q: group rows of head_dim floats.
using ScoreTile = void (*)(const float* q, int group, const void* keys, int n, int head_dim,
                           float* scores);
// acc[g] = acc[g] * rescale[g] + Σ_j p[g][j] · value_j.
using AccumulateTile = void (*)(const float* p, int group, const void* values, int n,
                                int head_dim, const float* rescale, float* acc);

// Element i of a cache row (bf16/f16 bits or f32), as float: the portable
// kernels' load, and the SIMD kernels' for the tail of a row.
template <KvFormat F>
inline float cache_element(const void* row, int i) {
  if constexpr (F == KvFormat::bf16) return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  else if constexpr (F == KvFormat::f16) return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
  else return static_cast<const float*>(row)[i];
}

struct AttentionKernels {
  ScoreTile score;
  AccumulateTile accumulate;
};

AttentionKernels attention_kernels_scalar(KvFormat format);
AttentionKernels attention_kernels_avx2(KvFormat format);
AttentionKernels attention_kernels_avx512(KvFormat format);

}  // namespace xft::engine
