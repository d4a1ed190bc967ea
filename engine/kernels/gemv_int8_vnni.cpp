// AVX512-VNNI decode kernel for int8 weights.
//
// x is quantized per block of kInt8Block (64) elements to int8 with its own
// scale. vpdpbusd multiplies unsigned by signed bytes, so the weight q is
// fed as q + 128 (q ^ 0x80) and the extra 128 · Σ x_q of the block is
// cancelled by starting lane 0 of the accumulator at -128 · Σ x_q (one
// scalar per block: x stays about as small as the weight row, so a long x
// still fits in L1 beside the weight stream): every block's dot product is
// then exact in int32 (summed over lanes), each lane converted to float
// exactly (|lane| < 2^24) and scaled by the block's x scale. Per 64 weights
// and input row: one vpdpbusd, one convert, one FMA (the exact float path
// needs 12 operations).
// The order per output is gemm_int8_vnni_dot.h's, which the GEMM keeps.
#include <algorithm>

#include "engine/kernels/gemm_int8_vnni_dot.h"

namespace xft::engine {
namespace {

using int8_vnni_dot::add_block;
using int8_vnni_dot::finish;
using int8_vnni_dot::input_block;
using int8_vnni_dot::weight_block;

Int8StagedX layout(const PackedWeight& w, int m, unsigned char* base) {
  const size_t blocks = static_cast<size_t>(w.ld) / kInt8Block;
  Int8StagedX s;
  s.q = reinterpret_cast<const int8_t*>(base);
  s.neg_comp = reinterpret_cast<const int32_t*>(base + static_cast<size_t>(m) * w.ld);
  s.scale = reinterpret_cast<const float*>(base + static_cast<size_t>(m) * w.ld + m * blocks * 4);
  return s;
}

size_t staged_bytes(const PackedWeight& w, int m) {
  const size_t blocks = static_cast<size_t>(w.ld) / kInt8Block;
  return static_cast<size_t>(m) * w.ld + m * blocks * 4 + m * blocks * 4;
}

// One weight row for M inputs (1..4), read once as one sequential stream (see
// gemv_bf16_avx512.cpp), four float accumulators per input over consecutive
// blocks. The accumulators are indexed by constants only (fully unrolled):
// indexed by the block number they would land on the stack, and every block
// would wait for a store-to-load round trip. Every M sums an input in the same
// order, so each input gets bit for bit its result alone (the server batches requests).
template <int M>
XFT_VNNI inline void row_streams(const PackedWeight& w, const Int8StagedX& x, float* y, int r) {
  const int blocks = w.ld / kInt8Block;
  __m512 a[4][M];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = a[2][j] = a[3][j] = _mm512_setzero_ps();
  int b = 0;
  for (; b + 4 <= blocks; b += 4) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i wq = weight_block(w, r, b + k);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) a[k][j] = add_block(a[k][j], wq, input_block(w, x, j, b + k));
    }
  }
  for (; b < blocks; ++b) {
    const __m512i wq = weight_block(w, r, b);
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) a[0][j] = add_block(a[0][j], wq, input_block(w, x, j, b));
  }
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) y[static_cast<size_t>(j) * w.out + r] = finish(w, r, a[0][j], a[1][j], a[2][j], a[3][j]);
}

template <int M>
XFT_VNNI void run_rows(const PackedWeight& w, const Int8StagedX& x, float* y, int rb, int re) {
  for (int r = rb; r < re; ++r) row_streams<M>(w, x, y, r);
}

// One block of x (n <= 64 floats, zero padded) -> 64 int8, the block's
// compensation and scale. Rounding: nearest even (MXCSR default).
XFT_VNNI void quantize_block(const float* x, int n, int8_t* q, int32_t* neg_comp, float* scale) {
  __m512 v[4];
  __m512 amax = _mm512_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    const int left = n - 16 * k;
    const __mmask16 mask = left >= 16 ? 0xffff : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1u);
    v[k] = _mm512_maskz_loadu_ps(mask, x + 16 * k);
    amax = _mm512_max_ps(amax, _mm512_abs_ps(v[k]));
  }
  const float max_abs = _mm512_reduce_max_ps(amax);
  *scale = max_abs / 127.0f;
  const __m512 inv = _mm512_set1_ps(max_abs > 0.0f ? 127.0f / max_abs : 0.0f);
  __m128i bytes[4];
  for (int k = 0; k < 4; ++k) {
    bytes[k] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v[k], inv)));
  }
  __m512i all = _mm512_castsi128_si512(bytes[0]);
  all = _mm512_inserti32x4(all, bytes[1], 1);
  all = _mm512_inserti32x4(all, bytes[2], 2);
  all = _mm512_inserti32x4(all, bytes[3], 3);
  _mm512_storeu_si512(q, all);
  // Σ of the 64 signed bytes, via a dot product with ones.
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), all);
  *neg_comp = -128 * _mm512_reduce_add_epi32(sums);
}

}  // namespace

const void* stage_x_int8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer) {
  buffer.resize(staged_bytes(w, m) + 8 + sizeof(Int8StagedX));
  unsigned char* base = buffer.as<unsigned char>();
  const Int8StagedX s = layout(w, m, base);
  const int blocks = w.ld / kInt8Block;
  for (int j = 0; j < m; ++j) {
    const float* xr = x + static_cast<size_t>(j) * w.in;
    for (int b = 0; b < blocks; ++b) {
      const int c0 = b * kInt8Block;
      const size_t block = static_cast<size_t>(j) * blocks + b;
      quantize_block(xr + c0, std::min(kInt8Block, w.in - c0),
                     const_cast<int8_t*>(s.q) + static_cast<size_t>(j) * w.ld + c0,
                     const_cast<int32_t*>(s.neg_comp) + block, const_cast<float*>(s.scale) + block);
    }
  }
  // The kernel's x argument: the layout header, stored after the data.
  Int8StagedX* header = reinterpret_cast<Int8StagedX*>(base + (staged_bytes(w, m) + 7) / 8 * 8);
  *header = s;
  return header;
}

void gemv_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int8StagedX& xs = *static_cast<const Int8StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
