#include "engine/kernels/quant_int4.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/kernels/ops.h"

namespace xft::engine {
namespace {

// Packed nibble index (2 · byte + high) of offset o inside a group of group_len slots.
int nibble_in_group(int o, int group_len) {
  const int full_units = group_len / 64;
  const int u = o / 64;
  if (u < full_units) {
    const int e = o % 64;
    return 2 * (u * 32 + e % 32) + (e >= 32 ? 1 : 0);
  }
  const int e = o - full_units * 64;
  return 2 * (full_units * 32 + e % 16) + (e >= 16 ? 1 : 0);
}

int nibble_of_slot(const PackedWeight& w, int s) {
  const int g = s / w.group_len;
  return g * w.group_len + nibble_in_group(s % w.group_len, w.group_len);
}

// Where slot s of a row sits: byte `offset` from the row's base
// (row_base), in the high nibble when `high`.
struct NibblePlace {
  size_t offset = 0;
  bool high = false;
};

NibblePlace nibble_place(const PackedWeight& w, int s) {
  if (w.int4_interleaved) return {static_cast<size_t>(s / 8) * 4 * kInt4TileRows + s % 4, s % 8 >= 4};
  const int n = nibble_of_slot(w, s);
  return {static_cast<size_t>(n >> 1), (n & 1) != 0};
}

// Byte offset of row r's base in w.data: its own bytes (row-major), or its
// four-byte column of every 64-byte run of its tile (interleaved).
size_t row_offset(const PackedWeight& w, int r) {
  const size_t row_bytes = w.ld / 2;
  if (!w.int4_interleaved) return r * row_bytes;
  return static_cast<size_t>(r / kInt4TileRows) * kInt4TileRows * row_bytes + 4 * (r % kInt4TileRows);
}

const uint8_t* row_base(const PackedWeight& w, int r) { return w.data.as<uint8_t>() + row_offset(w, r); }

bool same_groups(const Int4Rows& a, const Int4Rows& b, int in) {
  if (a.groups != b.groups) return false;
  return a.group_of == b.group_of || std::equal(a.group_of, a.group_of + in, b.group_of);
}

// Round to nearest even for |v| < 2^22 (the default rounding mode), without
// a libm call per element: quantizing a model at load is millions of these.
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 · 2^23
  volatile float shifted = v + kMagic;   // keeps the compiler from folding the pair away
  return shifted - kMagic;
}

}  // namespace

Int4Matrix quantize_int4(const float* w, int rows, int in, int group_size) {
  Int4Matrix m;
  m.rows = rows;
  m.in = in;
  const int g_size = group_size > 0 ? std::min(group_size, in) : in;
  m.groups = (in + g_size - 1) / g_size;
  m.q.resize(static_cast<size_t>(rows) * in);
  m.scale_f16.resize(static_cast<size_t>(rows) * m.groups);
  m.zero.resize(static_cast<size_t>(rows) * m.groups);
  m.group_of.resize(in);
  for (int c = 0; c < in; ++c) m.group_of[c] = c / g_size;
  for (int r = 0; r < rows; ++r) {
    const float* row = w + static_cast<size_t>(r) * in;
    for (int g = 0; g < m.groups; ++g) {
      const int c0 = g * g_size, c1 = std::min(in, c0 + g_size);
      // Zero is kept exactly representable (as GPTQ's quantizer does).
      float lo = 0.0f, hi = 0.0f;
      for (int c = c0; c < c1; ++c) {
        lo = std::min(lo, row[c]);
        hi = std::max(hi, row[c]);
      }
      const uint16_t s16 = f32_to_f16((hi - lo) / 15.0f);
      const float s = f16_to_f32(s16);
      const size_t sg = static_cast<size_t>(r) * m.groups + g;
      m.scale_f16[sg] = s16;
      if (!(s > 0.0f)) {
        m.zero[sg] = 0;
        for (int c = c0; c < c1; ++c) m.q[static_cast<size_t>(r) * in + c] = 0;
        continue;
      }
      const float z = std::clamp(round_even(-lo / s), 0.0f, 15.0f);
      m.zero[sg] = static_cast<uint8_t>(z);
      for (int c = c0; c < c1; ++c) {
        const float q = std::clamp(round_even(row[c] / s) + z, 0.0f, 15.0f);
        m.q[static_cast<size_t>(r) * in + c] = static_cast<uint8_t>(q);
      }
    }
  }
  return m;
}

void pack_int4(PackedWeight& w, const std::vector<LinearBlock>& blocks) {
  const Int4Rows* first = blocks.front().int4;
  const int in = w.in;
  if (first->groups <= 0) throw std::invalid_argument("Linear: int4 block without groups");
  for (const auto& block : blocks) {
    if (!block.int4 || !same_groups(*first, *block.int4, in)) {
      throw std::invalid_argument("Linear: fused int4 blocks must share one input grouping");
    }
  }
  std::vector<int> count(first->groups, 0);
  for (int c = 0; c < in; ++c) {
    const int g = first->group_of[c];
    if (g < 0 || g >= first->groups) throw std::invalid_argument("Linear: int4 group index out of range");
    ++count[g];
  }
  const int most = std::max(1, *std::max_element(count.begin(), count.end()));
  w.groups = first->groups;
  w.group_len = (most + 31) / 32 * 32;
  w.ld = w.groups * w.group_len;
  // Slot of every input: its group's next free slot, inputs in ascending order.
  std::vector<int> fill(w.groups, 0), slot_of(in);
  bool identity = true;
  std::vector<int32_t> slot_input(w.ld, -1);
  for (int c = 0; c < in; ++c) {
    const int g = first->group_of[c];
    const int slot = g * w.group_len + fill[g]++;
    identity = identity && slot == c;
    slot_input[slot] = c;
    slot_of[c] = slot;
  }
  if (!identity) w.slot_input = std::move(slot_input);
  w.int4_interleaved = w.use_int8_dot && w.group_len <= kInt4InterleavedMaxGroup;
  std::vector<NibblePlace> place(in);
  for (int c = 0; c < in; ++c) place[c] = nibble_place(w, slot_of[c]);
  const int param_rows = int4_param_rows(w);
  const size_t padded_rows = static_cast<size_t>((w.out + param_rows - 1) / param_rows) * param_rows;
  w.data.resize((w.int4_interleaved ? padded_rows : static_cast<size_t>(w.out)) * w.ld / 2);
  w.group_scale.assign(padded_rows * w.groups, 0);
  w.group_zero.assign(padded_rows * w.groups, 0);
  int r = 0;
  for (const auto& block : blocks) {
    const Int4Rows& src = *block.int4;
    for (int i = 0; i < block.rows; ++i, ++r) {
      uint8_t* dst = w.data.as<uint8_t>() + row_offset(w, r);
      const uint8_t* q = src.q + static_cast<size_t>(i) * in;
      for (int c = 0; c < in; ++c) dst[place[c].offset] |= static_cast<uint8_t>((q[c] & 15) << (place[c].high ? 4 : 0));
      for (int g = 0; g < w.groups; ++g) {
        w.group_scale[int4_param_index(w, r, g)] = src.scale_f16[static_cast<size_t>(i) * w.groups + g];
        w.group_zero[int4_param_index(w, r, g)] = src.zero[static_cast<size_t>(i) * w.groups + g];
      }
    }
  }
}

uint8_t int4_nibble(const PackedWeight& w, int r, int s) {
  const NibblePlace place = nibble_place(w, s);
  return (row_base(w, r)[place.offset] >> (place.high ? 4 : 0)) & 15;
}

namespace {

// out[j] = (q_j - z) · s for the 2 · half slots of one unit (low nibbles, then high).
void dequantize_unit(const uint8_t* b, int half, float z, float s, float* out) {
  for (int j = 0; j < half; ++j) {
    out[j] = (static_cast<float>(b[j] & 15) - z) * s;
    out[half + j] = (static_cast<float>(b[j] >> 4) - z) * s;
  }
}

// The same 8 slots at a time (half is 16 or 32): the prefill dequantizes every
// weight tile it hands to oneDNN, once per row of every tile. Same operations,
// same results.
__attribute__((target("avx2"))) void dequantize_unit_avx2(const uint8_t* b, int half, float z, float s, float* out) {
  const __m256 zv = _mm256_set1_ps(z), sv = _mm256_set1_ps(s);
  for (int j = 0; j < half; j += 8) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + j)));
    const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(q, _mm256_set1_epi32(15)));
    const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(q, 4));
    _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_sub_ps(lo, zv), sv));
    _mm256_storeu_ps(out + half + j, _mm256_mul_ps(_mm256_sub_ps(hi, zv), sv));
  }
}

// Row r of the interleaved layout (a group_len a multiple of 32), eight
// slots per four bytes: the bytes widened twice to int32 lanes, the second
// four shifted to their high nibbles. The row-major path's operations, so
// the same floats.
__attribute__((target("avx2"))) void dequantize_interleaved_avx2(const PackedWeight& w, int r, float* dst) {
  const uint8_t* base = row_base(w, r);
  const __m256i shifts = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
  const __m256i low4 = _mm256_set1_epi32(15);
  for (int g = 0; g < w.groups; ++g) {
    const size_t sg = int4_param_index(w, r, g);
    const __m256 zv = _mm256_set1_ps(w.group_zero[sg]);
    const __m256 sv = _mm256_set1_ps(f16_to_f32(w.group_scale[sg]));
    for (int s = g * w.group_len; s < (g + 1) * w.group_len; s += 8) {
      int32_t four;
      std::memcpy(&four, base + static_cast<size_t>(s / 8) * 4 * kInt4TileRows, sizeof(four));
      const __m256i bytes = _mm256_cvtepu8_epi32(_mm_set1_epi32(four));
      const __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(bytes, shifts), low4));
      _mm256_storeu_ps(dst + s, _mm256_mul_ps(_mm256_sub_ps(q, zv), sv));
    }
  }
}

void dequantize_row_major(const PackedWeight& w, int r, float* dst) {
  const uint8_t* row = w.int4_row(r);
  const auto unit = w.isa >= Isa::avx2 ? dequantize_unit_avx2 : dequantize_unit;
  for (int g = 0; g < w.groups; ++g) {
    const size_t sg = int4_param_index(w, r, g);
    const float s = f16_to_f32(w.group_scale[sg]);
    const float z = w.group_zero[sg];
    const uint8_t* bytes = row + static_cast<size_t>(g) * w.group_len / 2;
    float* out = dst + static_cast<size_t>(g) * w.group_len;
    // Units as the layout cuts them: low nibbles first, then the high ones.
    for (int o = 0; o < w.group_len; o += 64) unit(bytes + o / 2, std::min(64, w.group_len - o) / 2, z, s, out + o);
  }
}

}  // namespace

void int4_dequantize_slots(const PackedWeight& w, int r, float* dst) {
  // Only the VNNI kernel's weights are interleaved: the CPU has AVX2.
  if (w.int4_interleaved) dequantize_interleaved_avx2(w, r, dst);
  else dequantize_row_major(w, r, dst);
  if (!w.slot_input.empty()) {
    for (int s = 0; s < w.ld; ++s) {
      if (w.slot_input[s] < 0) dst[s] = 0.0f;
    }
  } else {
    for (int s = w.in; s < w.ld; ++s) dst[s] = 0.0f;
  }
}

void int4_gather_x(const PackedWeight& w, const float* x, float* dst) {
  if (w.slot_input.empty()) {
    std::memcpy(dst, x, sizeof(float) * w.in);
    std::memset(dst + w.in, 0, sizeof(float) * (w.ld - w.in));
    return;
  }
  for (int s = 0; s < w.ld; ++s) dst[s] = w.slot_input[s] >= 0 ? x[w.slot_input[s]] : 0.0f;
}

namespace {

// One block of n slots -> int8 with its scale
// sx = max|x| / 127 (round to nearest even); returns Σ sx · t in double.
double quantize_unit(const float* x, int n, int8_t* q, float* scale) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float sx = amax / 127.0f;
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<int8_t>(std::clamp(round_even(x[i] * inv), -127.0f, 127.0f));
    sum += q[i];
  }
  *scale = sx;
  return static_cast<double>(sx) * sum;
}

// The same for n a multiple of 32 (every block of the int8 layout), 8 lanes
// at a time: the staging runs on one thread before the GEMV is split, so its
// time is not shared. vcvtps2dq rounds to nearest even like round_even, and
// |x · inv| <= 127 needs no clamp; the results are quantize_unit's.
__attribute__((target("avx2,fma"))) double quantize_unit_avx2(const float* x, int n, int8_t* q, float* scale) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax8 = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) amax8 = _mm256_max_ps(amax8, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax8);
  float amax = 0.0f;
  for (float v : lanes) amax = std::max(amax, v);
  const float sx = amax / 127.0f;
  const __m256 inv = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
  __m256i sum8 = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 32) {
    __m256i t[4];
    for (int k = 0; k < 4; ++k) {
      t[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), inv));
      sum8 = _mm256_add_epi32(sum8, t[k]);
    }
    // Packs interleave the 128-bit halves; the permute puts the 32 bytes back in order.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(t[0], t[1]), _mm256_packs_epi32(t[2], t[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i),
                        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  alignas(32) int32_t sums[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums), sum8);
  int sum = 0;
  for (int v : sums) sum += v;
  *scale = sx;
  return static_cast<double>(sx) * sum;
}

}  // namespace

const void* stage_x_int4(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool) {
  const size_t elem = w.int4_x == Int4X::f32 ? 4 : w.int4_x == Int4X::bf16 ? 2 : 1;
  const int units = w.groups * int4_x_blocks_per_group(w);
  const size_t x_bytes = (static_cast<size_t>(m) * w.ld * elem + 63) / 64 * 64;
  const size_t unit_bytes = w.int4_x == Int4X::int8 ? (static_cast<size_t>(m) * units * sizeof(float) + 63) / 64 * 64 : 0;
  const size_t sum_bytes = (static_cast<size_t>(m) * w.groups * sizeof(float) + 63) / 64 * 64;
  buffer.resize(x_bytes + unit_bytes + sum_bytes + sizeof(Int4StagedX));
  unsigned char* base = buffer.as<unsigned char>();
  float* unit_scale = reinterpret_cast<float*>(base + x_bytes);
  float* sums = reinterpret_cast<float*>(base + x_bytes + unit_bytes);
  stage_rows(pool, m, [&](int j0, int j1) {
    thread_local std::vector<float> gathered;
    gathered.resize(w.ld);
    for (int j = j0; j < j1; ++j) {
      int4_gather_x(w, x + static_cast<size_t>(j) * w.in, gathered.data());
      if (w.int4_x == Int4X::int8) {
        int8_t* q = reinterpret_cast<int8_t*>(base) + static_cast<size_t>(j) * w.ld;
        float* scales = unit_scale + static_cast<size_t>(j) * units;
        const int per_group = int4_x_blocks_per_group(w), block = int4_x_block(w);
        for (int g = 0; g < w.groups; ++g) {
          double sum = 0.0;
          for (int u = 0; u < per_group; ++u) {
            const int s0 = g * w.group_len + block * u;
            const int n = std::min(block, w.group_len - block * u);
            // int8 x is staged only for the AVX2 and AVX512-VNNI kernels (both have AVX2).
            sum += n % 32 == 0 ? quantize_unit_avx2(gathered.data() + s0, n, q + s0, scales + g * per_group + u)
                               : quantize_unit(gathered.data() + s0, n, q + s0, scales + g * per_group + u);
          }
          sums[static_cast<size_t>(j) * w.groups + g] = static_cast<float>(sum);
        }
        continue;
      }
      if (w.int4_x == Int4X::bf16) {
        uint16_t* dst = reinterpret_cast<uint16_t*>(base) + static_cast<size_t>(j) * w.ld;
        f32_to_bf16(gathered.data(), dst, w.ld);
        bf16_to_f32(dst, gathered.data(), w.ld);  // the sums must be of the values the kernel multiplies
      } else {
        std::memcpy(reinterpret_cast<float*>(base) + static_cast<size_t>(j) * w.ld, gathered.data(),
                    sizeof(float) * w.ld);
      }
      for (int g = 0; g < w.groups; ++g) {
        // In double: the bf16 kernel subtracts (128 + z) times this sum.
        double sum = 0.0;
        const float* v = gathered.data() + static_cast<size_t>(g) * w.group_len;
        for (int o = 0; o < w.group_len; ++o) sum += v[o];
        sums[static_cast<size_t>(j) * w.groups + g] = static_cast<float>(sum);
      }
    }
  });
  Int4StagedX* header = reinterpret_cast<Int4StagedX*>(base + x_bytes + unit_bytes + sum_bytes);
  header->x = base;
  header->unit_scale = w.int4_x == Int4X::int8 ? unit_scale : nullptr;
  header->group_sums = sums;
  return header;
}

}  // namespace xft::engine
