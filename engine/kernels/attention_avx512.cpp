// AVX-512 attention tile kernels.
//
// A tile's keys (values) are widened to float (f32: copied) once per call into
// per-thread scratch, rows padded to a multiple of 16 dims and the key count to a
// multiple of 16, so every query head of the GQA group reuses them.
// Scores are computed 16 keys at a time: 16 FMA accumulators, then one
// transpose-and-add tree turns them into a vector of 16 dot products
// (~3 shuffles/adds per key instead of a full horizontal sum per key).
// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/attention_internal.h"

#define XFT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace xft::engine {
namespace {

int round16(int n) { return (n + 15) / 16 * 16; }

XFT_AVX512 inline __mmask16 tail_mask(int remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff)
                         : remaining <= 0 ? static_cast<__mmask16>(0)
                                          : static_cast<__mmask16>((1u << remaining) - 1u);
}

// Elements [i, i + 16) of a cache row, masked.
template <KvFormat F>
XFT_AVX512 inline __m512 load16(const void* row, int i, __mmask16 mask) {
  if constexpr (F == KvFormat::f32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(row) + i);
  } else {
    const __m256i raw = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(row) + i);
    if constexpr (F == KvFormat::bf16) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
    } else {
      return _mm512_cvtph_ps(raw);
    }
  }
}

// rows [n][head_dim] of the cache format -> float [round16(n)][round16(head_dim)], zero padded.
template <KvFormat F>
XFT_AVX512 float* widen_tile(const void* rows, int n, int head_dim) {
  const size_t row_bytes = static_cast<size_t>(head_dim) * (F == KvFormat::f32 ? 4 : 2);
  thread_local AlignedBuffer buffer;  // used only until the caller returns
  const int stride = round16(head_dim);
  const int padded_rows = round16(n);
  buffer.resize(sizeof(float) * padded_rows * stride);
  float* out = buffer.as<float>();
  for (int j = 0; j < padded_rows; ++j) {
    for (int d = 0; d < stride; d += 16) {
      const __m512 v = j < n ? load16<F>(static_cast<const unsigned char*>(rows) + j * row_bytes, d,
                                         tail_mask(head_dim - d))
                             : _mm512_setzero_ps();
      _mm512_store_ps(out + static_cast<size_t>(j) * stride + d, v);
    }
  }
  return out;
}

// r[k] = Σ lanes of a[k], for 16 vectors.
XFT_AVX512 inline __m512 transpose_sum16(const __m512* a) {
  __m512 u[8], v[4], w[2];
  #pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    u[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  }
  #pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {
    const __m512d x = _mm512_castps_pd(u[2 * i]), y = _mm512_castps_pd(u[2 * i + 1]);
    v[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  #pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) {
    w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xdd));
  }
  return _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88), _mm512_shuffle_f32x4(w[0], w[1], 0xdd));
}

template <KvFormat F>
XFT_AVX512 void score(const float* q, int group, const void* keys, int n, int head_dim, float* scores) {
  const int stride = round16(head_dim);
  const float* k = widen_tile<F>(keys, n, head_dim);
  for (int g = 0; g < group; ++g) {
    const float* qg = q + static_cast<size_t>(g) * head_dim;
    for (int j0 = 0; j0 < n; j0 += 16) {
      __m512 acc[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
      for (int d = 0; d < stride; d += 16) {
        const __m512 qv = _mm512_maskz_loadu_ps(tail_mask(head_dim - d), qg + d);
        const float* kd = k + static_cast<size_t>(j0) * stride + d;
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_load_ps(kd + static_cast<size_t>(i) * stride), acc[i]);
      }
      _mm512_storeu_ps(scores + static_cast<size_t>(g) * kAttentionTile + j0, transpose_sum16(acc));
    }
  }
}

// acc[g] = acc[g] · rescale[g] + Σ_j p[g][j] · v_j, 8 dim chunks (128 dims)
// at a time so each broadcast p feeds 8 independent FMA chains.
template <KvFormat F>
XFT_AVX512 void accumulate(const float* p, int group, const void* values, int n, int head_dim,
                           const float* rescale, float* acc) {
  constexpr int kChunks = 8;
  const int stride = round16(head_dim);
  const float* v = widen_tile<F>(values, n, head_dim);
  for (int g = 0; g < group; ++g) {
    const float* pg = p + static_cast<size_t>(g) * kAttentionTile;
    float* ag = acc + static_cast<size_t>(g) * head_dim;
    for (int d0 = 0; d0 < stride; d0 += 16 * kChunks) {
      const int chunks = std::min(kChunks, (stride - d0) / 16);
      __m512 a[kChunks];
      const __m512 scale = _mm512_set1_ps(rescale[g]);
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        if (c < chunks) a[c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(tail_mask(head_dim - d0 - 16 * c), ag + d0 + 16 * c), scale);
      }
      for (int j = 0; j < n; ++j) {
        const __m512 pj = _mm512_set1_ps(pg[j]);
        const float* vj = v + static_cast<size_t>(j) * stride + d0;
#pragma GCC unroll 8
        for (int c = 0; c < kChunks; ++c) {
          if (c < chunks) a[c] = _mm512_fmadd_ps(pj, _mm512_load_ps(vj + 16 * c), a[c]);
        }
      }
#pragma GCC unroll 8
      for (int c = 0; c < kChunks; ++c) {
        if (c < chunks) _mm512_mask_storeu_ps(ag + d0 + 16 * c, tail_mask(head_dim - d0 - 16 * c), a[c]);
      }
    }
  }
}

}  // namespace

AttentionKernels attention_kernels_avx512(KvFormat format) {
  switch (format) {
    case KvFormat::bf16: return {score<KvFormat::bf16>, accumulate<KvFormat::bf16>};
    case KvFormat::f16: return {score<KvFormat::f16>, accumulate<KvFormat::f16>};
    case KvFormat::f32: break;
  }
  return {score<KvFormat::f32>, accumulate<KvFormat::f32>};
}

}  // namespace xft::engine
