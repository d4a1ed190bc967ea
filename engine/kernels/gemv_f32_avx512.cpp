// AVX-512 decode kernels for float32 and IEEE-half weights (float x).
#include "engine/kernels/gemv_avx512_fma.h"

namespace xft::engine {
namespace {

struct LoadF32 {
  static constexpr int kBytes = 4;
  XFT_AVX512 __m512 operator()(const PackedWeight& w, int r, int c) const {
    return _mm512_loadu_ps(w.row<float>(r) + c);
  }
};

struct LoadF16 {
  static constexpr int kBytes = 2;
  XFT_AVX512 __m512 operator()(const PackedWeight& w, int r, int c) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.row<uint16_t>(r) + c)));
  }
};

}  // namespace

void gemv_f32_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  avx512_fma::gemv<LoadF32>(w, x, m, y, rb, re);
}

void gemv_f16_avx512(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  avx512_fma::gemv<LoadF16>(w, x, m, y, rb, re);
}

}  // namespace xft::engine
