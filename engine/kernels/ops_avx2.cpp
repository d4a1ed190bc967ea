// F16C array conversions (AVX2 family and up).
#include <immintrin.h>

#include "engine/kernels/ops.h"
#include "engine/kernels/ops_simd.h"

#define XFT_F16C __attribute__((target("avx2,f16c")))

namespace xft::engine {

XFT_F16C void f16_to_f32_f16c(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

XFT_F16C void f32_to_f16_f16c(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

}  // namespace xft::engine
