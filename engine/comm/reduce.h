// Element-wise sum kernels the allreduce algorithms use, for fp32 and bf16
// (bf16 accumulated in fp32, rounded once at the end). The AVX-512 versions
// are picked at run time; the scalar ones are the reference and the fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace xft::engine::comm {

enum class DType { f32, bf16 };

inline size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }
// "float32" / "bfloat16": the names the bench prints and parses.
const char* dtype_name(DType dtype);
// Accepts float32|fp32|float and bfloat16|bf16.
std::optional<DType> parse_dtype(const std::string& name);

inline float bf16_to_f32(uint16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// Round to nearest even, NaN kept a (quiet) NaN.
inline uint16_t f32_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

// dst[i] += src[i]
void reduce_sum(DType dtype, void* dst, const void* src, size_t count);
// dst[i] = sum over k of srcs[k][i], summed in the order k = 0..nsrc-1 so that
// every rank that calls this with the same inputs gets bit-identical results.
// dst may alias srcs[k] for any k.
void reduce_sum_n(DType dtype, void* dst, const void* const* srcs, int nsrc, size_t count);

// The plain loops: the reference the vector kernels are tested against.
void reduce_sum_scalar(DType dtype, void* dst, const void* src, size_t count);
void reduce_sum_n_scalar(DType dtype, void* dst, const void* const* srcs, int nsrc, size_t count);

// True when the AVX-512 kernels are in use on this CPU (XFT_COMM_NO_AVX512=1 turns them off).
bool reduce_uses_avx512();

}  // namespace xft::engine::comm
