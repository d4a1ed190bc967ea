// Batch-invariant GEMM for fp8 weights on AVX512-BF16: many inputs against a
// block of weight rows, each input's outputs bit for bit what
// gemv_fp8_avx512bf16 gives it alone (gemm_fp8_avx512bf16_dot.h: the same
// e4m3 -> bf16 conversion, chunks and column blocks in the same order, the
// same final sum). Only the blocking differs from the decode kernel:
//  * each panel of weight rows is converted to bf16 once per call into a
//    per-thread buffer sized to stay in L2 (gemm_fp8_avx512bf16_panel_rows),
//    and every input then reads the converted panel: the decode kernel
//    converts each chunk again per group of four inputs;
//  * a microkernel of kXRows inputs x kWRows weight rows keeps its outputs'
//    block accumulators in registers, so each converted weight load feeds
//    kXRows vdpbf16ps and each x load kWRows; every chunk of inputs passes
//    over the panel, the chunk's rows staying in L1;
//  * while the inputs pass over a panel, the next panel's e4m3 rows are
//    prefetched a few lines per microkernel call, so that converting it
//    finds them in cache: a panel's conversion alone is memory-bound, and
//    with an expert's ~32 rows (512 tokens, top 8 of 128) it otherwise stalls
//    the core for a fourth of the panel's compute time.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_fp8_avx512bf16_dot.h"

namespace xft::engine {
namespace {

using namespace fp8_avx512bf16_dot;

constexpr int kXRows = 4;  // inputs per microkernel
// Weight rows per microkernel: 16 block accumulators, 8 totals, 4 weight and
// 2 x registers. Loads per vdpbf16ps are 1/kXRows + 1/kWRows, the fewest of
// the tiles that keep all of it in the 32 registers.
constexpr int kWRows = 2;
constexpr size_t kPanelBytes = size_t(256) << 10;  // of L2 for a converted panel
constexpr int kMaxPanelRows = 64;  // enough panels per call for the threads to balance

// Weight rows [r0, r0 + rows) as bf16 into panel [rows][ld], each chunk as
// chunk_as_bf16 gives it (32 even weights, then 32 odd ones).
XFT_AVX512BF16 void convert_panel(const PackedWeight& w, int r0, int rows, uint16_t* panel) {
  const __m512i table = subnormal_table();
  for (int i = 0; i < rows; ++i) {
    const uint8_t* q = w.row<uint8_t>(r0 + i);
    uint16_t* dst = panel + static_cast<size_t>(i) * w.ld;
    for (int c = 0; c < w.ld; c += kChunk) {
      const Chunk chunk = chunk_as_bf16(q + c, table);
      _mm512_store_si512(dst + c, chunk.even);
      _mm512_store_si512(dst + c + 32, chunk.odd);
    }
  }
}

// Half a chunk (32 bf16 from column c) of R converted rows times the same
// half of M inputs (rows of x at stride ld) into acc, as add_chunk adds it.
template <int R, int M>
XFT_AVX512BF16 inline void half_chunk(__m512 (&acc)[R][M], const uint16_t* const (&wr)[R], const uint16_t* xc,
                                      size_t ld, int c) {
  __m512i wv[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) wv[i] = _mm512_load_si512(wr[i] + c);
  #pragma GCC unroll 8
  for (int j = 0; j < M; ++j) {
    __m512i xv = _mm512_loadu_si512(xc + j * ld + c);
    // One x load for the R products (see gemm_avx2.cpp: folded into each
    // instruction as a memory operand the loads become the bottleneck).
    __asm__("" : "+v"(xv));
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)wv[i], (__m512bh)xv);
  }
}

// R converted rows (panel rows from p0, weight rows from r0) x M inputs from
// i0, the whole row: y's R x M outputs.
template <int R, int M>
XFT_AVX512BF16 void micro(const PackedWeight& w, const uint16_t* panel, int p0, int r0, const uint16_t* x, int i0,
                          float* y) {
  const size_t ld = static_cast<size_t>(w.ld);
  const uint16_t* wr[R];
  const float* scale[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    wr[i] = panel + static_cast<size_t>(p0 + i) * ld;
    scale[i] = fp8_row_scales(w, r0 + i);
  }
  const uint16_t* xc = x + static_cast<size_t>(i0) * ld;
  __m512 total[R][M];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) total[i][j] = _mm512_setzero_ps();
  for (int b = 0; b < w.fp8_col_blocks; ++b) {
    const int end = block_end(w, b);
    __m512 even[R][M], odd[R][M];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) even[i][j] = odd[i][j] = _mm512_setzero_ps();
    for (int c = block_begin(w, b); c < end; c += kChunk) {
      // The chunk's even half into the even accumulators, then its odd
      // half into the odd ones: each accumulator still gets one vdpbf16ps
      // per chunk as add_chunk gives it, with half the weight and x
      // registers live (a whole chunk's left GCC spilling them at R = 2, M = 4).
      half_chunk<R, M>(even, wr, xc, ld, c);
      half_chunk<R, M>(odd, wr, xc, ld, c + 32);
    }
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 multiplier = block_multiplier(scale[i], b);
      #pragma GCC unroll 8
      for (int j = 0; j < M; ++j) total[i][j] = add_block(total[i][j], even[i][j], odd[i][j], multiplier);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) y[static_cast<size_t>(i0 + j) * w.out + r0 + i] = finish(w, r0 + i, total[i][j]);
}

// The next panel's e4m3 bytes [next, end), a few cache lines per step.
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;
  int lines_per_step = 0;

  void step() {
    for (int i = 0; i < lines_per_step && next < end; ++i, next += 64) _mm_prefetch(next, _MM_HINT_T0);
  }
};

using Micro = void (*)(const PackedWeight&, const uint16_t*, int, int, const uint16_t*, int, float*);

template <int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<R, 1>;
    case 2: return micro<R, 2>;
    case 3: return micro<R, 3>;
    default: return micro<R, 4>;
  }
}

// Inputs [i0, i0 + mc) against the converted panel of weight rows [r0, r0 + rows).
void inputs_against_panel(const PackedWeight& w, const uint16_t* panel, int r0, int rows, const uint16_t* x, int i0,
                          int mc, float* y, Prefetch& prefetch) {
  const Micro full = micro_for<kWRows>(mc);
  const Micro single = micro_for<1>(mc);
  int p = 0;
  for (; p + kWRows <= rows; p += kWRows) {
    prefetch.step();
    full(w, panel, p, r0 + p, x, i0, y);
  }
  for (; p < rows; ++p) single(w, panel, p, r0 + p, x, i0, y);
}

// Prefetch of weight rows [begin, end) spread over the microkernel calls of
// m inputs against a panel of `rows` rows.
Prefetch prefetch_rows(const PackedWeight& w, int begin, int end, int rows, int m) {
  Prefetch prefetch;
  if (begin >= end) return prefetch;
  prefetch.next = reinterpret_cast<const char*>(w.row<uint8_t>(begin));
  prefetch.end = reinterpret_cast<const char*>(w.row<uint8_t>(end));
  const size_t lines = (static_cast<size_t>(prefetch.end - prefetch.next) + 63) / 64;
  const size_t calls = static_cast<size_t>(std::max(1, rows / kWRows)) * ((m + kXRows - 1) / kXRows);
  prefetch.lines_per_step = static_cast<int>((lines + calls - 1) / calls);
  return prefetch;
}

AlignedBuffer& panel_scratch() {
  thread_local AlignedBuffer buffer;
  return buffer;
}

}  // namespace

int gemm_fp8_avx512bf16_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / (static_cast<size_t>(w.ld) * sizeof(uint16_t));
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_fp8_avx512bf16(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  const int panel_rows = gemm_fp8_avx512bf16_panel_rows(w);
  AlignedBuffer& buffer = panel_scratch();
  buffer.resize(static_cast<size_t>(panel_rows) * w.ld * sizeof(uint16_t));
  uint16_t* panel = buffer.as<uint16_t>();
  for (int r0 = row_begin; r0 < row_end; r0 += panel_rows) {
    const int rows = std::min(panel_rows, row_end - r0);
    convert_panel(w, r0, rows, panel);
    // The next panel: this call's, or past row_end the task this thread
    // most likely takes next (parallel_for_balanced hands each thread a
    // contiguous range in order).
    const int next = r0 + rows;
    Prefetch prefetch = prefetch_rows(w, next, std::min(w.out, next + panel_rows), rows, m);
    for (int i0 = 0; i0 < m; i0 += kXRows) {
      inputs_against_panel(w, panel, r0, rows, xb, i0, std::min(kXRows, m - i0), y, prefetch);
    }
  }
}

}  // namespace xft::engine
