#include "engine/comm/reduce.h"

#include <immintrin.h>

// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined in the zero-extension intrinsics).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstdlib>

namespace xft::engine::comm {

const char* dtype_name(DType dtype) { return dtype == DType::f32 ? "float32" : "bfloat16"; }

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float" || name == "f32") return DType::f32;
  if (name == "bfloat16" || name == "bf16") return DType::bf16;
  return std::nullopt;
}

namespace {

// ---- scalar ---------------------------------------------------------------

void sum_f32_scalar(float* dst, const float* src, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) dst[i] += src[i];
}

void sum_bf16_scalar(uint16_t* dst, const uint16_t* src, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) dst[i] = f32_to_bf16(bf16_to_f32(dst[i]) + bf16_to_f32(src[i]));
}

void sum_n_f32_scalar(float* dst, const float* const* srcs, int nsrc, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    float acc = srcs[0][i];
    for (int k = 1; k < nsrc; ++k) acc += srcs[k][i];
    dst[i] = acc;
  }
}

void sum_n_bf16_scalar(uint16_t* dst, const uint16_t* const* srcs, int nsrc, size_t begin,
                       size_t end) {
  for (size_t i = begin; i < end; ++i) {
    float acc = bf16_to_f32(srcs[0][i]);
    for (int k = 1; k < nsrc; ++k) acc += bf16_to_f32(srcs[k][i]);
    dst[i] = f32_to_bf16(acc);
  }
}

// ---- AVX-512 --------------------------------------------------------------
// Full 16-lane blocks in vector code, the remainder through the scalar loops
// (same fp32 operation order, so results are identical either way).

#define XFT_AVX512 __attribute__((target("avx512f,avx512bw")))

XFT_AVX512 inline __m512 load_bf16x16(const uint16_t* p) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

XFT_AVX512 inline void store_bf16x16(uint16_t* p, __m512 value) {
  __m512i bits = _mm512_castps_si512(value);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  __m512i shifted = _mm512_srli_epi32(rounded, 16);
  __mmask16 nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
  __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  shifted = _mm512_mask_blend_epi32(nan, shifted, quiet);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(shifted));
}

XFT_AVX512 void sum_f32_avx512(float* dst, const float* src, size_t count) {
  size_t i = 0;
  for (; i + 64 <= count; i += 64) {
    __m512 a0 = _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i));
    __m512 a1 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 16), _mm512_loadu_ps(src + i + 16));
    __m512 a2 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 32), _mm512_loadu_ps(src + i + 32));
    __m512 a3 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 48), _mm512_loadu_ps(src + i + 48));
    _mm512_storeu_ps(dst + i, a0);
    _mm512_storeu_ps(dst + i + 16, a1);
    _mm512_storeu_ps(dst + i + 32, a2);
    _mm512_storeu_ps(dst + i + 48, a3);
  }
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(dst + i), _mm512_loadu_ps(src + i)));
  sum_f32_scalar(dst, src, i, count);
}

XFT_AVX512 void sum_bf16_avx512(uint16_t* dst, const uint16_t* src, size_t count) {
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512 a0 = _mm512_add_ps(load_bf16x16(dst + i), load_bf16x16(src + i));
    __m512 a1 = _mm512_add_ps(load_bf16x16(dst + i + 16), load_bf16x16(src + i + 16));
    store_bf16x16(dst + i, a0);
    store_bf16x16(dst + i + 16, a1);
  }
  for (; i + 16 <= count; i += 16)
    store_bf16x16(dst + i, _mm512_add_ps(load_bf16x16(dst + i), load_bf16x16(src + i)));
  sum_bf16_scalar(dst, src, i, count);
}

XFT_AVX512 void sum_n_f32_avx512(float* dst, const float* const* srcs, int nsrc, size_t count) {
  size_t i = 0;
  for (; i + 64 <= count; i += 64) {
    __m512 a0 = _mm512_loadu_ps(srcs[0] + i);
    __m512 a1 = _mm512_loadu_ps(srcs[0] + i + 16);
    __m512 a2 = _mm512_loadu_ps(srcs[0] + i + 32);
    __m512 a3 = _mm512_loadu_ps(srcs[0] + i + 48);
    for (int k = 1; k < nsrc; ++k) {
      const float* s = srcs[k] + i;
      a0 = _mm512_add_ps(a0, _mm512_loadu_ps(s));
      a1 = _mm512_add_ps(a1, _mm512_loadu_ps(s + 16));
      a2 = _mm512_add_ps(a2, _mm512_loadu_ps(s + 32));
      a3 = _mm512_add_ps(a3, _mm512_loadu_ps(s + 48));
    }
    _mm512_storeu_ps(dst + i, a0);
    _mm512_storeu_ps(dst + i + 16, a1);
    _mm512_storeu_ps(dst + i + 32, a2);
    _mm512_storeu_ps(dst + i + 48, a3);
  }
  for (; i + 16 <= count; i += 16) {
    __m512 acc = _mm512_loadu_ps(srcs[0] + i);
    for (int k = 1; k < nsrc; ++k) acc = _mm512_add_ps(acc, _mm512_loadu_ps(srcs[k] + i));
    _mm512_storeu_ps(dst + i, acc);
  }
  sum_n_f32_scalar(dst, srcs, nsrc, i, count);
}

XFT_AVX512 void sum_n_bf16_avx512(uint16_t* dst, const uint16_t* const* srcs, int nsrc,
                                  size_t count) {
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m512 a0 = load_bf16x16(srcs[0] + i);
    __m512 a1 = load_bf16x16(srcs[0] + i + 16);
    for (int k = 1; k < nsrc; ++k) {
      a0 = _mm512_add_ps(a0, load_bf16x16(srcs[k] + i));
      a1 = _mm512_add_ps(a1, load_bf16x16(srcs[k] + i + 16));
    }
    store_bf16x16(dst + i, a0);
    store_bf16x16(dst + i + 16, a1);
  }
  for (; i + 16 <= count; i += 16) {
    __m512 acc = load_bf16x16(srcs[0] + i);
    for (int k = 1; k < nsrc; ++k) acc = _mm512_add_ps(acc, load_bf16x16(srcs[k] + i));
    store_bf16x16(dst + i, acc);
  }
  sum_n_bf16_scalar(dst, srcs, nsrc, i, count);
}

bool detect_avx512() {
  const char* off = std::getenv("XFT_COMM_NO_AVX512");
  if (off && *off && *off != '0') return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

const bool kUseAvx512 = detect_avx512();

}  // namespace

bool reduce_uses_avx512() { return kUseAvx512; }

void reduce_sum_scalar(DType dtype, void* dst, const void* src, size_t count) {
  if (dtype == DType::f32)
    sum_f32_scalar(static_cast<float*>(dst), static_cast<const float*>(src), 0, count);
  else
    sum_bf16_scalar(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), 0, count);
}

void reduce_sum_n_scalar(DType dtype, void* dst, const void* const* srcs, int nsrc, size_t count) {
  if (dtype == DType::f32)
    sum_n_f32_scalar(static_cast<float*>(dst), reinterpret_cast<const float* const*>(srcs), nsrc,
                     0, count);
  else
    sum_n_bf16_scalar(static_cast<uint16_t*>(dst), reinterpret_cast<const uint16_t* const*>(srcs),
                      nsrc, 0, count);
}

void reduce_sum(DType dtype, void* dst, const void* src, size_t count) {
  if (!kUseAvx512) return reduce_sum_scalar(dtype, dst, src, count);
  if (dtype == DType::f32)
    sum_f32_avx512(static_cast<float*>(dst), static_cast<const float*>(src), count);
  else
    sum_bf16_avx512(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count);
}

void reduce_sum_n(DType dtype, void* dst, const void* const* srcs, int nsrc, size_t count) {
  if (!kUseAvx512) return reduce_sum_n_scalar(dtype, dst, srcs, nsrc, count);
  if (dtype == DType::f32)
    sum_n_f32_avx512(static_cast<float*>(dst), reinterpret_cast<const float* const*>(srcs), nsrc,
                     count);
  else
    sum_n_bf16_avx512(static_cast<uint16_t*>(dst), reinterpret_cast<const uint16_t* const*>(srcs),
                      nsrc, count);
}

}  // namespace xft::engine::comm
