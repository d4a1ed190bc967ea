// AVX2 attention tile kernels: the AVX-512 ones' plan on 8-float vectors.
//
// A tile's keys (values) are widened to float (f32: copied) once per call into
// per-thread scratch, rows padded with zeros to a multiple of 8 dims and the
// key count to a multiple of 8, so every query head of the GQA group reuses
// them. Scores are computed 8 keys at a time: 8 FMA accumulators, then one
// transpose-and-add tree turns them into a vector of 8 dot products.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/attention_internal.h"

#define XFT_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace xft::engine {
namespace {

int round8(int n) { return (n + 7) / 8 * 8; }

// Lanes [0, remaining) set: the mask of _mm256_maskload_ps/_mm256_maskstore_ps.
XFT_AVX2 inline __m256i tail_mask(int remaining) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::clamp(remaining, 0, 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Elements [i, i + 8) of a cache row (all present).
template <KvFormat F>
XFT_AVX2 inline __m256 load8(const void* row, int i) {
  if constexpr (F == KvFormat::f32) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + i);
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    if constexpr (F == KvFormat::bf16) {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
    } else {
      return _mm256_cvtph_ps(raw);
    }
  }
}

// rows [n][head_dim] of the cache format -> float [round8(n)][round8(head_dim)], zero padded.
template <KvFormat F>
XFT_AVX2 float* widen_tile(const void* rows, int n, int head_dim) {
  const size_t row_bytes = static_cast<size_t>(head_dim) * (F == KvFormat::f32 ? 4 : 2);
  thread_local AlignedBuffer buffer;  // used only until the caller returns
  const int stride = round8(head_dim);
  const int padded_rows = round8(n);
  const int whole = head_dim / 8 * 8;
  buffer.resize(sizeof(float) * padded_rows * stride);
  float* out = buffer.as<float>();
  for (int j = 0; j < padded_rows; ++j) {
    float* dst = out + static_cast<size_t>(j) * stride;
    if (j >= n) {
      std::memset(dst, 0, sizeof(float) * stride);
      continue;
    }
    const void* row = static_cast<const unsigned char*>(rows) + j * row_bytes;
    for (int d = 0; d < whole; d += 8) _mm256_store_ps(dst + d, load8<F>(row, d));
    for (int d = whole; d < stride; ++d) dst[d] = d < head_dim ? cache_element<F>(row, d) : 0.0f;
  }
  return out;
}

// r[k] = Σ lanes of a[k], for 8 vectors.
XFT_AVX2 inline __m256 transpose_sum8(const __m256* a) {
  const __m256 u0 = _mm256_hadd_ps(a[0], a[1]);
  const __m256 u1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 u2 = _mm256_hadd_ps(a[4], a[5]);
  const __m256 u3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 v0 = _mm256_hadd_ps(u0, u1);  // [a0..a3 low halves | a0..a3 high halves]
  const __m256 v1 = _mm256_hadd_ps(u2, u3);
  return _mm256_add_ps(_mm256_permute2f128_ps(v0, v1, 0x20), _mm256_permute2f128_ps(v0, v1, 0x31));
}

template <KvFormat F>
XFT_AVX2 void score(const float* q, int group, const void* keys, int n, int head_dim, float* scores) {
  const int stride = round8(head_dim);
  const float* k = widen_tile<F>(keys, n, head_dim);
  for (int g = 0; g < group; ++g) {
    const float* qg = q + static_cast<size_t>(g) * head_dim;
    for (int j0 = 0; j0 < n; j0 += 8) {
      __m256 acc[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
      for (int d = 0; d < stride; d += 8) {
        const __m256 qv = d + 8 <= head_dim ? _mm256_loadu_ps(qg + d) : _mm256_maskload_ps(qg + d, tail_mask(head_dim - d));
        const float* kd = k + static_cast<size_t>(j0) * stride + d;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, _mm256_load_ps(kd + static_cast<size_t>(i) * stride), acc[i]);
      }
      // scores rows hold kAttentionTile (a multiple of 8) slots: the padded keys land in unused ones.
      _mm256_storeu_ps(scores + static_cast<size_t>(g) * kAttentionTile + j0, transpose_sum8(acc));
    }
  }
}

// acc[g] = acc[g] · rescale[g] + Σ_j p[g][j] · v_j, 8 dim chunks (64 dims)
// at a time so each broadcast p feeds 8 independent FMA chains.
template <KvFormat F>
XFT_AVX2 void accumulate(const float* p, int group, const void* values, int n, int head_dim,
                         const float* rescale, float* acc) {
  constexpr int kChunks = 8;
  const int stride = round8(head_dim);
  const float* v = widen_tile<F>(values, n, head_dim);
  for (int g = 0; g < group; ++g) {
    const float* pg = p + static_cast<size_t>(g) * kAttentionTile;
    float* ag = acc + static_cast<size_t>(g) * head_dim;
    for (int d0 = 0; d0 < stride; d0 += 8 * kChunks) {
      const int chunks = std::min(kChunks, (stride - d0) / 8);
      __m256 a[kChunks];
      const __m256 scale = _mm256_set1_ps(rescale[g]);
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        a[c] = c < chunks ? _mm256_mul_ps(_mm256_maskload_ps(ag + d0 + 8 * c, tail_mask(head_dim - d0 - 8 * c)), scale)
                          : _mm256_setzero_ps();
      }
      for (int j = 0; j < n; ++j) {
        const __m256 pj = _mm256_set1_ps(pg[j]);
        const float* vj = v + static_cast<size_t>(j) * stride + d0;
#pragma GCC unroll 8
        for (int c = 0; c < kChunks; ++c) {
          if (c < chunks) a[c] = _mm256_fmadd_ps(pj, _mm256_load_ps(vj + 8 * c), a[c]);
        }
      }
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        if (c < chunks) _mm256_maskstore_ps(ag + d0 + 8 * c, tail_mask(head_dim - d0 - 8 * c), a[c]);
      }
    }
  }
}

}  // namespace

AttentionKernels attention_kernels_avx2(KvFormat format) {
  switch (format) {
    case KvFormat::bf16: return {score<KvFormat::bf16>, accumulate<KvFormat::bf16>};
    case KvFormat::f16: return {score<KvFormat::f16>, accumulate<KvFormat::f16>};
    case KvFormat::f32: break;
  }
  return {score<KvFormat::f32>, accumulate<KvFormat::f32>};
}

}  // namespace xft::engine
