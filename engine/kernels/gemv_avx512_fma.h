// The AVX-512 decode kernel shape shared by the float-x formats (f32, f16,
// int8): one weight row at a time for all M inputs, four 16-wide FMA
// accumulators per input, weight converted to float in registers, read exactly once. Included by exactly one
// .cpp per format, each compiled for its own target (see XFT_AVX512 below).
#pragma once

// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engine/kernels/linear_internal.h"

#define XFT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace xft::engine::avx512_fma {

// Load16: a functor XFT_AVX512 __m512 operator()(const PackedWeight&, int row, int col)
// with `static constexpr int kBytes` (bytes per weight element).
// One weight row for M inputs (1..4), read once as one sequential stream
// (several short row streams defeat the hardware prefetcher on narrow
// matrices), four accumulators per input over consecutive chunks. Every M
// sums an input in the same order, so each input gets bit for bit its result
// alone (the server batches requests). ld is a multiple of 64 elements.
template <class Load16, int M>
XFT_AVX512 inline void row_streams(const PackedWeight& w, const float* x, float* y, int r) {
  const Load16 load;
  __m512 a[4][M];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = a[2][j] = a[3][j] = _mm512_setzero_ps();
  for (int c = 0; c < w.ld; c += 64) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512 wv = load(w, r, c + 16 * k);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) {
        a[k][j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + static_cast<size_t>(j) * w.ld + c + 16 * k), a[k][j]);
      }
    }
  }
  const float scale = w.scales.empty() ? 1.0f : w.scales[r];
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) {
    y[static_cast<size_t>(j) * w.out + r] =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0][j], a[1][j]), _mm512_add_ps(a[2][j], a[3][j]))) * scale +
        bias;
  }
}

template <class Load16, int M>
XFT_AVX512 inline void run_rows(const PackedWeight& w, const float* x, float* y, int rb, int re) {
  for (int r = rb; r < re; ++r) row_streams<Load16, M>(w, x, y, r);
}

template <class Load16>
XFT_AVX512 inline void gemv(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const float* xf = static_cast<const float*>(x);
  switch (m) {
    case 1: run_rows<Load16, 1>(w, xf, y, rb, re); break;
    case 2: run_rows<Load16, 2>(w, xf, y, rb, re); break;
    case 3: run_rows<Load16, 3>(w, xf, y, rb, re); break;
    default: run_rows<Load16, 4>(w, xf, y, rb, re); break;
  }
}

}  // namespace xft::engine::avx512_fma
