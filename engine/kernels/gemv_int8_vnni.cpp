// AVX512-VNNI decode kernel for int8 weights.
//
// x is quantized per block of kInt8Block (64) elements to int8 with its own
// scale (stage_x_int8, here). The weights lie in tiles of 16 rows
// (int8_tiled): each 64-byte load holds four inputs of 16 rows, and one
// vpdpbusd with the four x bytes broadcast leaves each row's dot in its own
// lane, exact in int32 over the block; one convert and one FMA by the
// block's x scale then serve 16 rows. The steps are in
// gemv_int8_vnni_tile.h, shared with the batch-invariant GEMM
// (gemm_int8_vnni.cpp), so that an input gets bit for bit the same result
// whatever shares its batch.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/gemv_int8_vnni_tile.h"
#include "engine/kernels/linear_internal.h"

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

// One block of x (n <= 64 floats, zero padded) -> 64 int8, the block's
// compensation and scale. Rounding: nearest even (MXCSR default).
XFT_INT8_VNNI void quantize_block(const float* x, int n, int8_t* q, int32_t* neg_comp, float* scale) {
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

const void* stage_x_int8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool) {
  buffer.resize(staged_bytes(w, m) + 8 + sizeof(Int8StagedX));
  unsigned char* base = buffer.as<unsigned char>();
  const Int8StagedX s = layout(w, m, base);
  const int blocks = w.ld / kInt8Block;
  stage_rows(pool, m, [&](int j0, int j1) {
    for (int j = j0; j < j1; ++j) {
      const float* xr = x + static_cast<size_t>(j) * w.in;
      for (int b = 0; b < blocks; ++b) {
        const int c0 = b * kInt8Block;
        const size_t block = static_cast<size_t>(j) * blocks + b;
        quantize_block(xr + c0, std::min(kInt8Block, w.in - c0),
                       const_cast<int8_t*>(s.q) + static_cast<size_t>(j) * w.ld + c0,
                       const_cast<int32_t*>(s.neg_comp) + block, const_cast<float*>(s.scale) + block);
      }
    }
  });
  // The kernel's x argument: the layout header, stored after the data.
  Int8StagedX* header = reinterpret_cast<Int8StagedX*>(base + (staged_bytes(w, m) + 7) / 8 * 8);
  *header = s;
  return header;
}

void gemv_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  int8_vnni_tile::run_inputs(w, *static_cast<const Int8StagedX*>(x), m, y, rb, re);
}

}  // namespace xft::engine
