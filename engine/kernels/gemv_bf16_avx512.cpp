// AVX512-BF16 decode kernel: x was rounded to bf16 once (stage_x), each
// vdpbf16ps multiplies 32 bf16 pairs and accumulates pairs into 16 float
// lanes. One weight row at a time, for all M inputs; the weight is read exactly once.
// The order per output is gemm_bf16_avx512_dot.h's, which the GEMM keeps.
#include "engine/kernels/gemm_bf16_avx512_dot.h"

namespace xft::engine {
namespace {

using bf16_avx512_dot::finish;

// How far ahead of its loads a thread asks for its weight bytes, into L2
// (prefetcht2): the hardware prefetchers alone keep too few lines in
// flight for one stream. bench_moe (experts' decode, bf16, 2-core Zen 4 VM)
// against a read pass right after: one thread 78 % of its pass as a plain
// stream, 92-93 % with the prefetch at 2-4 KiB (four rows side by side:
// 89-99 %); two threads with the memory at 61-63 GB/s, 80-85 % with the
// prefetch against 61-64 % as four rows side by side.
constexpr int kPrefetchBytes = 2048;

// One weight row for M inputs (1..4): the row is read once as one
// sequential stream, the bytes kPrefetchBytes ahead asked for on the way,
// two accumulators per input over alternate chunks hide the vdpbf16ps
// latency. Every M sums an input in the same order, so each input gets bit
// for bit its result alone (the server batches requests and must not change
// their answers). ld is a multiple of 64 elements: steps of 4 x 32, then
// maybe 2 x 32.
template <int M>
XFT_AVX512BF16 inline void row_streams(const PackedWeight& w, const uint16_t* x, float* y, int r) {
  __m512 a[2][M];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = _mm512_setzero_ps();
  const uint16_t* wr = w.row<uint16_t>(r);
  int c = 0;
  for (; c + 128 <= w.ld; c += 128) {
    const char* ahead = reinterpret_cast<const char*>(wr + c) + kPrefetchBytes;
    #pragma GCC unroll 4
    for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T2);
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(wr + c + 32 * k);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) a[k % 2][j] = _mm512_dpbf16_ps(a[k % 2][j], wv, (__m512bh)_mm512_loadu_si512(x + static_cast<size_t>(j) * w.ld + c + 32 * k));
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
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, a[0][j], a[1][j]);
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const uint16_t* x, float* y, int rb, int re) {
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
