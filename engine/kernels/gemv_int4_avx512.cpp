// AVX512-BF16 int4 decode kernel. x was rounded to bf16 once (stage_x_int4).
// A nibble q becomes the bf16 of 128 + q by OR-ing it into 0x4300 (128.0:
// exponent 7, the 7 mantissa bits count units), one vpternlogd per 32
// weights, no table and no conversion; vdpbf16ps then sums (128 + q)·x over
// 32 slots, exactly the products of the bf16 inputs, in float. Per group the
// (128 + z) · Σ x share (Σ x of the same bf16 values, staged) comes off lane 0
// and the group's scale multiplies the rest. The packed row is read once,
// for all M inputs, as one sequential stream; every M sums an input in the
// same order (each input gets bit for bit its result alone).
// The order per output is gemm_int4_avx512_dot.h's, which the GEMM keeps.
#include "engine/kernels/gemm_int4_avx512_dot.h"

namespace xft::engine {
namespace {

using int4_avx512_dot::add_group;
using int4_avx512_dot::dot;
using int4_avx512_dot::finish;
using int4_avx512_dot::group_params;
using int4_avx512_dot::GroupParams;
using int4_avx512_dot::unpack_half_unit;
using int4_avx512_dot::unpack_unit;

template <int M>
XFT_AVX512BF16 inline void row_stream(const PackedWeight& w, const uint16_t* x, const float* sums, float* y, int r) {
  const uint8_t* row = w.int4_row(r);
  const int full_units = w.group_len / 64;
  const bool half_unit = w.group_len % 64 != 0;
  __m512 acc[M];
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) acc[j] = _mm512_setzero_ps();
  for (int g = 0; g < w.groups; ++g) {
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    const uint16_t* xg = x + static_cast<size_t>(g) * w.group_len;
    __m512 d0[M], d1[M];
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) d0[j] = d1[j] = _mm512_setzero_ps();
    for (int u = 0; u < full_units; ++u) {
      __m512i lo, hi;
      unpack_unit(bytes + 32 * u, lo, hi);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) {
        const uint16_t* xj = xg + static_cast<size_t>(j) * w.ld + 64 * u;
        d0[j] = dot(d0[j], lo, xj);
        d1[j] = dot(d1[j], hi, xj + 32);
      }
    }
    if (half_unit) {
      const __m512i wv = unpack_half_unit(bytes + 32 * full_units);
      #pragma GCC unroll 4
      for (int j = 0; j < M; ++j) d0[j] = dot(d0[j], wv, xg + static_cast<size_t>(j) * w.ld + 64 * full_units);
    }
    const GroupParams p = group_params(w, r, g);
    #pragma GCC unroll 4
    for (int j = 0; j < M; ++j) acc[j] = add_group(acc[j], d0[j], d1[j], p, sums[static_cast<size_t>(j) * w.groups + g]);
  }
  #pragma GCC unroll 4
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, acc[j]);
}

template <int M>
XFT_AVX512BF16 void run_rows(const PackedWeight& w, const Int4StagedX& xs, float* y, int rb, int re) {
  const uint16_t* x = static_cast<const uint16_t*>(xs.x);
  for (int r = rb; r < re; ++r) row_stream<M>(w, x, xs.group_sums, y, r);
}

}  // namespace

void gemv_int4_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
