#include "engine/kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/ops_simd.h"

namespace xft::engine {

// ---- scalar conversions ----

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    __builtin_memcpy(&bits, &magnitude, 4);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float out;
  __builtin_memcpy(&out, &bits, 4);
  return out;
}

uint16_t f32_to_f16(float value) {
  uint32_t bits;
  __builtin_memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (bits >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (bits < 0x38800000u) {                         // below 2^-14: half subnormal
    float magnitude;
    __builtin_memcpy(&magnitude, &bits, 4);
    // Round-half-even to a multiple of 2^-24; 0x400 is the smallest normal.
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  const uint32_t odd = (bits >> 13) & 1u;
  return sign | static_cast<uint16_t>((bits - (112u << 23) + 0xfffu + odd) >> 13);
}

// ---- array conversions ----

void bf16_to_f32(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(in[i]);
}

void f32_to_bf16(const float* in, uint16_t* out, size_t n) {
  if (use_avx512_bf16()) {
    f32_to_bf16_avx512(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

void f16_to_f32(const uint16_t* in, float* out, size_t n) {
  if (use_avx2()) {
    f16_to_f32_f16c(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void f32_to_f16(const float* in, uint16_t* out, size_t n) {
  if (use_avx2()) {
    f32_to_f16_f16c(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

// ---- normalization ----

void rmsnorm(const float* x, const float* weight, float* y, int n, float eps) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv * weight[i];
}

void rmsnorm(float* x, const float* weight, int n, float eps) { rmsnorm(x, weight, x, n, eps); }

void rmsnorm_rows(const float* x, const float* weight, float* y, int m, int n, float eps) {
  for (int r = 0; r < m; ++r) {
    rmsnorm(x + static_cast<size_t>(r) * n, weight, y + static_cast<size_t>(r) * n, n, eps);
  }
}

void rmsnorm_rows(float* x, const float* weight, int m, int n, float eps) {
  rmsnorm_rows(x, weight, x, m, n, eps);
}

// ---- rope ----

RopeTable::RopeTable(int rotary_dim, int max_positions, double theta)
    : rotary_dim_(rotary_dim), max_positions_(max_positions) {
  const int half = rotary_dim / 2;
  cos_.resize(static_cast<size_t>(max_positions) * half);
  sin_.resize(static_cast<size_t>(max_positions) * half);
  for (int pos = 0; pos < max_positions; ++pos) {
    for (int i = 0; i < half; ++i) {
      const double inv_freq = std::pow(theta, -2.0 * i / rotary_dim);
      const double angle = pos * inv_freq;
      cos_[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::cos(angle));
      sin_[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void apply_rope(float* x, int m, int row_stride, int n_heads, int head_dim, const int* positions,
                const RopeTable& table) {
  const int half = table.rotary_dim() / 2;
  for (int r = 0; r < m; ++r) {
    const float* c = table.cos(positions[r]);
    const float* s = table.sin(positions[r]);
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + static_cast<size_t>(r) * row_stride + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float a = v[i];
        const float b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

// ---- MLP and residual ----

void silu_mul(const float* gate, const float* up, float* out, int n) {
  if (use_avx512()) {
    silu_mul_avx512(gate, up, out, n);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void silu_mul_fused(const float* gate_up, int m, int n, float* out) {
  for (int r = 0; r < m; ++r) {
    const float* row = gate_up + static_cast<size_t>(r) * 2 * n;
    silu_mul(row, row + n, out + static_cast<size_t>(r) * n, n);
  }
}

void add(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void add_inplace(float* acc, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] += b[i];
}

void scale(float* x, float factor, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= factor;
}

// ---- sampling helpers ----

float exp_shift_sum(float* x, int n, float shift) {
  if (use_avx512()) return exp_shift_sum_avx512(x, n, shift);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

void softmax(float* x, int n) {
  if (n <= 0) return;
  if (use_avx512()) {
    const float max_value = max_avx512(x, n);
    const float inv = 1.0f / exp_shift_sum_avx512(x, n, max_value);
    for (int i = 0; i < n; ++i) x[i] *= inv;
    return;
  }
  float max_value = x[0];
  for (int i = 1; i < n; ++i) max_value = std::max(max_value, x[i]);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_value);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

float max_value(const float* x, int n) {
  if (use_avx512()) return max_avx512(x, n);
  float best = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

int argmax(const float* x, int n) {
  if (n <= 0) return -1;
  if (use_avx512()) return argmax_avx512(x, n);
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

int top_k(const float* x, int n, int k, int* indices, float* values) {
  k = std::clamp(k, 0, std::max(n, 0));
  if (k == 0) return 0;
  // "a ranks before b": larger value, then lower index.
  auto before = [x](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  // Min-heap (by rank) of the k best seen so far: its front is the worst kept.
  std::vector<int> heap;
  heap.reserve(k);
  for (int i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    if (static_cast<int>(heap.size()) < k) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (before(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  std::sort(heap.begin(), heap.end(), before);
  for (size_t i = 0; i < heap.size(); ++i) {
    indices[i] = heap[i];
    values[i] = x[heap[i]];
  }
  return static_cast<int>(heap.size());
}

}  // namespace xft::engine
