// SIMD bodies of ops.cpp conversions (ops_avx2.cpp, ops_avx512.cpp); internal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xft::engine {

void f16_to_f32_f16c(const uint16_t* in, float* out, size_t n);
void f32_to_f16_f16c(const float* in, uint16_t* out, size_t n);
void f32_to_bf16_avx512(const float* in, uint16_t* out, size_t n);
// Small integers are exact in bf16: the top half of their float bits.
void int8_to_bf16_avx512(const int8_t* in, uint16_t* out, size_t n);

// x[i] = exp(x[i] - shift) for i < n; returns Σ x[i]. (exp: ~2 ulp, 0 below -104.)
float exp_shift_sum_avx512(float* x, int n, float shift);
void silu_mul_avx512(const float* gate, const float* up, float* out, int n);
float max_avx512(const float* x, int n);  // NaN ignored; -inf for n == 0
int argmax_avx512(const float* x, int n);

}  // namespace xft::engine
