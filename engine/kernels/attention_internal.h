// Tile kernels of attention.cpp, one implementation per ISA; internal.
#pragma once

#include <cstdint>

#include "engine/kernels/attention.h"

namespace xft::engine {

// scores[g][j] = dot(q[g], key_j) for g < group, j < n; keys: n rows of
// head_dim elements of the cache format (bf16/f16 bits or f32), contiguous.
// q: group rows of head_dim floats.
using ScoreTile = void (*)(const float* q, int group, const void* keys, int n, int head_dim,
                           float* scores);
// acc[g] = acc[g] * rescale[g] + Σ_j p[g][j] · value_j.
using AccumulateTile = void (*)(const float* p, int group, const void* values, int n,
                                int head_dim, const float* rescale, float* acc);

struct AttentionKernels {
  ScoreTile score;
  AccumulateTile accumulate;
};

AttentionKernels attention_kernels_scalar(KvFormat format);
AttentionKernels attention_kernels_avx2(KvFormat format);
AttentionKernels attention_kernels_avx512(KvFormat format);

}  // namespace xft::engine
