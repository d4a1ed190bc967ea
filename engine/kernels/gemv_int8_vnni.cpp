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
// needs 12 operations). gemm_int8_vnni.cpp keeps this kernel's order per
// output (gemm_int8_vnni_dot.h spells it out) for larger batches; this file
// keeps its own copy of the steps, which measured faster here than the
// shared helpers (bench_kernels --only linear --dtype int8 --m 1).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/linear_internal.h"

#define XFT_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")))

namespace xft::engine {
namespace {

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

// Input j's block b against the weight block wq (already flipped): exact int32 dot product,
// then scaled by the block's x scale and added to `acc`.
XFT_VNNI inline __m512 add_input_block(__m512 acc, __m512i wq, const PackedWeight& w, const Int8StagedX& x, int j, int b) {
  const size_t block = static_cast<size_t>(j) * (w.ld / kInt8Block) + b;
  const __m512i xq = _mm512_loadu_si512(x.q + static_cast<size_t>(j) * w.ld + b * kInt8Block);
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_maskz_set1_epi32(1, x.neg_comp[block]), wq, xq);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(x.scale[block]), acc);
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
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int8_t* wr = w.row<int8_t>(r);
  __m512 a[4][M];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) a[0][j] = a[1][j] = a[2][j] = a[3][j] = _mm512_setzero_ps();
  int b = 0;
  for (; b + 4 <= blocks; b += 4) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i wq = _mm512_xor_si512(_mm512_loadu_si512(wr + (b + k) * kInt8Block), flip);
      #pragma GCC unroll 16
      for (int j = 0; j < M; ++j) a[k][j] = add_input_block(a[k][j], wq, w, x, j, b + k);
    }
  }
  for (; b < blocks; ++b) {
    const __m512i wq = _mm512_xor_si512(_mm512_loadu_si512(wr + b * kInt8Block), flip);
    #pragma GCC unroll 16
    for (int j = 0; j < M; ++j) a[0][j] = add_input_block(a[0][j], wq, w, x, j, b);
  }
  const float bias = w.bias.empty() ? 0.0f : w.bias[r];
  #pragma GCC unroll 16
  for (int j = 0; j < M; ++j) {
    y[static_cast<size_t>(j) * w.out + r] =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0][j], a[1][j]), _mm512_add_ps(a[2][j], a[3][j]))) *
            w.scales[r] + bias;
  }
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
