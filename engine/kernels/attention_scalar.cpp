// Portable attention tile kernels (bf16/f16 cache converted element by element).
#include "engine/kernels/attention_internal.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

template <KvFormat F>
float load(uint16_t bits) {
  if constexpr (F == KvFormat::bf16) return bf16_to_f32(bits);
  else return f16_to_f32(bits);
}

template <KvFormat F>
void score(const float* q, int group, const uint16_t* keys, int n, int head_dim, float* scores) {
  for (int g = 0; g < group; ++g) {
    const float* qg = q + static_cast<size_t>(g) * head_dim;
    for (int j = 0; j < n; ++j) {
      const uint16_t* k = keys + static_cast<size_t>(j) * head_dim;
      float dot = 0.0f;
      for (int d = 0; d < head_dim; ++d) dot += qg[d] * load<F>(k[d]);
      scores[static_cast<size_t>(g) * kAttentionTile + j] = dot;
    }
  }
}

template <KvFormat F>
void accumulate(const float* p, int group, const uint16_t* values, int n, int head_dim,
                const float* rescale, float* acc) {
  for (int g = 0; g < group; ++g) {
    float* ag = acc + static_cast<size_t>(g) * head_dim;
    for (int d = 0; d < head_dim; ++d) ag[d] *= rescale[g];
    for (int j = 0; j < n; ++j) {
      const float pj = p[static_cast<size_t>(g) * kAttentionTile + j];
      const uint16_t* v = values + static_cast<size_t>(j) * head_dim;
      for (int d = 0; d < head_dim; ++d) ag[d] += pj * load<F>(v[d]);
    }
  }
}

}  // namespace

AttentionKernels attention_kernels_scalar(KvFormat format) {
  if (format == KvFormat::bf16) return {score<KvFormat::bf16>, accumulate<KvFormat::bf16>};
  return {score<KvFormat::f16>, accumulate<KvFormat::f16>};
}

}  // namespace xft::engine
