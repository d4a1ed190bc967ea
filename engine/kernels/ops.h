// Element-wise and row-wise operations of a Qwen decoder layer, on float32
// rows, plus the bf16/f16 conversions. Every function picks its kernel from
// active_isa(); all paths give the same results up to float rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xft::engine {

// ---- scalar conversions (bf16/f16 values are raw uint16_t bits) ----
// Round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float value) {
  uint32_t bits;
  __builtin_memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
inline float bf16_to_f32(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  __builtin_memcpy(&out, &bits, 4);
  return out;
}
uint16_t f32_to_f16(float value);  // IEEE half, round to nearest even, saturates to inf
float f16_to_f32(uint16_t value);

// ---- array conversions ----
void bf16_to_f32(const uint16_t* in, float* out, size_t n);
void f32_to_bf16(const float* in, uint16_t* out, size_t n);
void f16_to_f32(const uint16_t* in, float* out, size_t n);
void f32_to_f16(const float* in, uint16_t* out, size_t n);

// ---- normalization ----
// y = x / sqrt(mean(x^2) + eps) * weight, one row of n.
void rmsnorm(const float* x, const float* weight, float* y, int n, float eps);
void rmsnorm(float* x, const float* weight, int n, float eps);  // in place
// m rows of n, row stride n.
void rmsnorm_rows(const float* x, const float* weight, float* y, int m, int n, float eps);
void rmsnorm_rows(float* x, const float* weight, int m, int n, float eps);

// ---- rotary position embedding (Qwen1/2/3: rotate-half, "NeoX" layout) ----
// Element i < half pairs with i + half: (a, b) -> (a cos - b sin, b cos + a sin),
// angle = pos * theta^(-2i / rotary_dim).
class RopeTable {
 public:
  RopeTable() = default;
  // rotary_dim <= head_dim, even; positions in [0, max_positions).
  RopeTable(int rotary_dim, int max_positions, double theta);
  int rotary_dim() const { return rotary_dim_; }
  int max_positions() const { return max_positions_; }
  const float* cos(int pos) const { return cos_.data() + static_cast<size_t>(pos) * (rotary_dim_ / 2); }
  const float* sin(int pos) const { return sin_.data() + static_cast<size_t>(pos) * (rotary_dim_ / 2); }

 private:
  int rotary_dim_ = 0;
  int max_positions_ = 0;
  std::vector<float> cos_, sin_;  // [max_positions][rotary_dim / 2]
};

// x: m rows, each n_heads * head_dim floats at row stride `row_stride`
// (floats); row r is at position positions[r]. Rotates the first
// table.rotary_dim() elements of every head in place.
void apply_rope(float* x, int m, int row_stride, int n_heads, int head_dim, const int* positions,
                const RopeTable& table);

// ---- MLP and residual ----
// out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int n);
// Rows of a fused gate/up projection [m][2n] (gate = first n, up = last n) -> out [m][n].
void silu_mul_fused(const float* gate_up, int m, int n, float* out);
void add(const float* a, const float* b, float* out, size_t n);  // out may alias a or b
void add_inplace(float* acc, const float* b, size_t n);          // acc += b
void scale(float* x, float factor, size_t n);

// ---- sampling helpers ----
// x[i] = exp(x[i] - shift) for i < n, returns Σ x[i] (the body of a softmax;
// attention uses it per tile). The AVX-512 exp is within ~2 ulp.
float exp_shift_sum(float* x, int n, float shift);
// Numerically stable, in place; returns nothing for n == 0.
void softmax(float* x, int n);
// Largest value, NaN ignored; -inf for n == 0.
float max_value(const float* x, int n);
// Index of the largest value (first one on ties, NaN ignored); -1 for n == 0.
int argmax(const float* x, int n);
// The k largest values with their indices, sorted by value descending
// (ties: lower index first); k is clamped to n. Returns the count written.
int top_k(const float* x, int n, int k, int* indices, float* values);

}  // namespace xft::engine
