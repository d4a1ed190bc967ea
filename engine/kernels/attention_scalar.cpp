// Portable attention tile kernels (bf16/f16 cache converted element by element, f32 read as is).
#include "engine/kernels/attention_internal.h"
#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

template <KvFormat F>
const void* row_at(const void* rows, int j, int head_dim) {
  return static_cast<const unsigned char*>(rows) + static_cast<size_t>(j) * head_dim * kv_element_bytes(F);
}

template <KvFormat F>
void score(const float* q, int group, const void* keys, int n, int head_dim, float* scores) {
  for (int g = 0; g < group; ++g) {
    const float* qg = q + static_cast<size_t>(g) * head_dim;
    for (int j = 0; j < n; ++j) {
      const void* k = row_at<F>(keys, j, head_dim);
      float dot = 0.0f;
      for (int d = 0; d < head_dim; ++d) dot += qg[d] * cache_element<F>(k, d);
      scores[static_cast<size_t>(g) * kAttentionTile + j] = dot;
    }
  }
}

template <KvFormat F>
void accumulate(const float* p, int group, const void* values, int n, int head_dim,
                const float* rescale, float* acc) {
  for (int g = 0; g < group; ++g) {
    float* ag = acc + static_cast<size_t>(g) * head_dim;
    for (int d = 0; d < head_dim; ++d) ag[d] *= rescale[g];
    for (int j = 0; j < n; ++j) {
      const float pj = p[static_cast<size_t>(g) * kAttentionTile + j];
      const void* v = row_at<F>(values, j, head_dim);
      for (int d = 0; d < head_dim; ++d) ag[d] += pj * cache_element<F>(v, d);
    }
  }
}

}  // namespace

AttentionKernels attention_kernels_scalar(KvFormat format) {
  switch (format) {
    case KvFormat::bf16: return {score<KvFormat::bf16>, accumulate<KvFormat::bf16>};
    case KvFormat::f16: return {score<KvFormat::f16>, accumulate<KvFormat::f16>};
    case KvFormat::f32: break;
  }
  return {score<KvFormat::f32>, accumulate<KvFormat::f32>};
}

}  // namespace xft::engine
