// Batch-invariant GEMM for AVX2: many inputs against a block of weight rows,
// each input's outputs bit for bit what gemv_avx2 gives it alone (same weight
// widening, one 8-lane accumulator per output over K from 0 to ld, same final
// reduction: gemm_avx2_dot.h). Only the blocking differs from the decode
// kernel, and blocking never reorders an output's sum:
//  * a microkernel of kXRows inputs x kWRows weight rows keeps 12 accumulators
//    in registers, so each weight load feeds kXRows FMAs and each x load
//    kWRows FMAs (the decode kernel re-reads every weight row per 4 inputs);
//  * K is cut into blocks of kKBlock: the microkernel's accumulators go to a
//    small per-thread buffer between blocks (the FMA chain just continues),
//    so the inputs' slice stays in L1 while the panel's rows stream past it;
//  * the caller hands each thread panels of weight rows sized to stay in L2
//    (gemm_avx2_panel_rows) while every chunk of inputs passes over them.
#include <algorithm>
#include <cstddef>

#include "engine/kernels/gemm_avx2_dot.h"

namespace xft::engine {
namespace {

using avx2_dot::finish;
using avx2_dot::load_w8;

constexpr int kXRows = 6;        // inputs per microkernel
constexpr int kWRows = 2;        // weight rows per microkernel
constexpr int kKBlock = 256;     // elements: 6 inputs' slice is 6 KiB of L1
constexpr int kMaxPanelRows = 64;
constexpr size_t kPanelBytes = size_t(192) << 10;  // of L2 for a panel's rows

// Accumulators of R weight rows x M inputs over columns [c0, c1), resumed
// from and saved to acc[i * M + j] (row r0 + i, input j).
template <WeightFormat F, int R, int M>
XFT_AVX2 void micro(const PackedWeight& w, const float* x, int r0, int c0, int c1, __m256* acc) {
  __m256 a[R][M];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) a[i][j] = acc[i * M + j];
  const size_t ld = static_cast<size_t>(w.ld);
  for (int c = c0; c < c1; c += 8) {
    __m256 wv[R];
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wv[i] = load_w8<F>(w, r0 + i, c);
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {
      __m256 xv = _mm256_loadu_ps(x + j * ld + c);
      // Keep xv in a register: GCC otherwise folds it into both FMAs as a
      // memory operand, 14 loads per 12 FMAs instead of 8, and the loads
      // become the bottleneck (about 80% instead of over 90% of FMA peak).
      __asm__("" : "+x"(xv));
      #pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a[i][j] = _mm256_fmadd_ps(wv[i], xv, a[i][j]);
    }
  }
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int j = 0; j < M; ++j) acc[i * M + j] = a[i][j];
}

using Micro = void (*)(const PackedWeight&, const float*, int, int, int, __m256*);

template <WeightFormat F, int R>
constexpr Micro micro_for(int m) {
  switch (m) {
    case 1: return micro<F, R, 1>;
    case 2: return micro<F, R, 2>;
    case 3: return micro<F, R, 3>;
    case 4: return micro<F, R, 4>;
    case 5: return micro<F, R, 5>;
    default: return micro<F, R, 6>;
  }
}

// Inputs [i0, i0 + mc) against weight rows [rb, re): K block by K block over
// the panel, then every output finished from its accumulator.
template <WeightFormat F>
XFT_AVX2 void chunk(const PackedWeight& w, const float* x, int i0, int mc, float* y, int rb, int re, __m256* acc) {
  const Micro full = micro_for<F, kWRows>(mc);
  const Micro single = micro_for<F, 1>(mc);
  const float* xc = x + static_cast<size_t>(i0) * w.ld;
  const int rows = re - rb;
  for (size_t k = 0; k < static_cast<size_t>(rows) * mc; ++k) acc[k] = _mm256_setzero_ps();
  for (int c0 = 0; c0 < w.ld; c0 += kKBlock) {
    const int c1 = std::min(w.ld, c0 + kKBlock);
    int r = rb;
    for (; r + kWRows <= re; r += kWRows) full(w, xc, r, c0, c1, acc + static_cast<size_t>(r - rb) * mc);
    for (; r < re; ++r) single(w, xc, r, c0, c1, acc + static_cast<size_t>(r - rb) * mc);
  }
  for (int r = rb; r < re; ++r) {
    for (int j = 0; j < mc; ++j) {
      y[static_cast<size_t>(i0 + j) * w.out + r] = finish(w, r, acc[static_cast<size_t>(r - rb) * mc + j]);
    }
  }
}

template <WeightFormat F>
XFT_AVX2 void gemm(const PackedWeight& w, const float* x, int m, float* y, int rb, int re) {
  alignas(32) static thread_local __m256 acc[kMaxPanelRows * kXRows];
  for (int p = rb; p < re; p += kMaxPanelRows) {
    const int pe = std::min(re, p + kMaxPanelRows);
    for (int i0 = 0; i0 < m; i0 += kXRows) chunk<F>(w, x, i0, std::min(kXRows, m - i0), y, p, pe, acc);
  }
}

}  // namespace

int gemm_avx2_panel_rows(const PackedWeight& w) {
  const size_t rows = kPanelBytes / w.row_bytes();
  return static_cast<int>(std::clamp<size_t>(rows / kWRows * kWRows, 2 * kWRows, kMaxPanelRows));
}

void gemm_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end) {
  const float* xf = static_cast<const float*>(x);
  switch (w.format) {
    case WeightFormat::f32: gemm<WeightFormat::f32>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::bf16: gemm<WeightFormat::bf16>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::f16: gemm<WeightFormat::f16>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::int8: gemm<WeightFormat::int8>(w, xf, m, y, row_begin, row_end); break;
    case WeightFormat::int4: break;  // the int4 kernels in groups (linear.cpp)
    case WeightFormat::fp8: break;   // the fp8 kernels in groups (linear.cpp)
  }
}

}  // namespace xft::engine
