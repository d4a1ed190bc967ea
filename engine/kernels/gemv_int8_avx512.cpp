// AVX-512 decode kernel for int8 weight-only quantization: the exact
// dequantize-FMA path (int8 -> int32 -> float, FMA with float x; the
// per-row scale is applied once to the sum). No activation quantization, so
// the result differs from x·(q·s)ᵀ only by float rounding.
#include "engine/kernels/gemv_avx512_fma.h"

namespace xft::engine {
namespace {

struct LoadInt8 {
  static constexpr int kBytes = 1;
  XFT_AVX512 __m512 operator()(const PackedWeight& w, int r, int c) const {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.row<int8_t>(r) + c));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw));
  }
};

}  // namespace

void gemv_int8_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  avx512_fma::gemv<LoadInt8>(w, x, m, y, rb, re);
}

}  // namespace xft::engine
