// AVX512-BF16 decode kernel: x was rounded to bf16 once (stage_x), each
// vdpbf16ps multiplies 32 bf16 pairs and accumulates pairs into 16 float
// lanes. One weight row at a time, for all M inputs; the weight is read exactly once.
// The order per output is gemm_bf16_avx512_dot.h's, which the GEMM keeps.
#include "engine/kernels/gemm_bf16_avx512_dot.h"

namespace xft::engine {
namespace {

using bf16_avx512_dot::finish;

// One weight row for M inputs (1..4; one input alone reads four rows side by
// side, below): the row is read once as one sequential stream, four
// accumulators per input over
// consecutive chunks hide the vdpbf16ps latency. Every M sums an input in the
// same order, so each input gets bit for bit its result alone (the server
// batches requests and must not change their answers). ld is a multiple of
// 64 elements: steps of 4 x 32, then maybe 2 x 32.
template <int M>
XFT_AVX512BF16 inline void row_streams(const PackedWeight& w, const uint16_t* x, float* y, int r) {
  __m512 a[4][M];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = a[2][j] = a[3][j] = _mm512_setzero_ps();
  const uint16_t* wr = w.row<uint16_t>(r);
  int c = 0;
  for (; c + 128 <= w.ld; c += 128) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr + c + 32 * k);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) a[k][j] = _mm512_dpbf16_ps(a[k][j], wv, (__m512bh)_mm512_loadu_si512(x + static_cast<size_t>(j) * w.ld + c + 32 * k));
    }
  }
  if (c < w.ld) {  // the last 64 elements
    #pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr + c + 32 * k);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) a[k][j] = _mm512_dpbf16_ps(a[k][j], wv, (__m512bh)_mm512_loadu_si512(x + static_cast<size_t>(j) * w.ld + c + 32 * k));
    }
  }
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, a[0][j], a[1][j], a[2][j], a[3][j]);
}

// One input, R rows side by side (rows[0..R)): each the same sum as
// row_streams<1> gives it, in the same order. R long streams in flight
// instead of one: the hardware prefetchers follow each, so more lines are on
// their way while a stream restarts at a page boundary, and one load of x
// serves R rows.
template <int R>
XFT_AVX512BF16 inline void rows_side_by_side(const PackedWeight& w, const uint16_t* x, float* y, const int* rows) {
  __m512 a[R][4];
  const uint16_t* wr[R];
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    a[i][0] = a[i][1] = a[i][2] = a[i][3] = _mm512_setzero_ps();
    wr[i] = w.row<uint16_t>(rows[i]);
  }
  int c = 0;
  for (; c + 128 <= w.ld; c += 128) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + c + 32 * k);
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) a[i][k] = _mm512_dpbf16_ps(a[i][k], (__m512bh)_mm512_loadu_si512(wr[i] + c + 32 * k), xv);
    }
  }
  if (c < w.ld) {  // the last 64 elements
    #pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + c + 32 * k);
      #pragma GCC unroll 4
      for (int i = 0; i < R; ++i) a[i][k] = _mm512_dpbf16_ps(a[i][k], (__m512bh)_mm512_loadu_si512(wr[i] + c + 32 * k), xv);
    }
  }
  #pragma GCC unroll 4
  for (int i = 0; i < R; ++i) y[rows[i]] = finish(w, rows[i], a[i][0], a[i][1], a[i][2], a[i][3]);
}

// Four streams: a task's 16 rows as four runs of 4. One thread on this VM
// (Zen 4) streamed an expert's gate/up (1536x2048) at about 22 GB/s as one
// stream and about 31 GB/s as four, its read pass at about 30
// (bench_stream_gemv); two streams gave about 25.
constexpr int kStreams = 4;

// Rows [rb, re) for one input as R streams: stream i takes the i-th of R
// near-equal contiguous parts, one row of each at a time.
template <int R>
XFT_AVX512BF16 void run_streams(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
  const int n = re - rb, part = n / R;
  int rows[R];
  for (int k = 0; k < part; ++k) {
    for (int i = 0; i < R; ++i) rows[i] = rb + i * part + k;
    rows_side_by_side<R>(w, x, y, rows);
  }
  for (int r = rb + R * part; r < re; ++r) row_streams<1>(w, x, y, r);
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
  if (M == 1) return run_streams<kStreams>(w, x, y, rb, re);
  for (int r = rb; r < re; ++r) row_streams<M>(w, x, y, r);
}

}  // namespace

void gemv_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xb, y, rb, re); break;
    case 2: run_rows<2>(w, xb, y, rb, re); break;
    case 3: run_rows<3>(w, xb, y, rb, re); break;
    default: run_rows<4>(w, xb, y, rb, re); break;
  }
}

}  // namespace xft::engine
