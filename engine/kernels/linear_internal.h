// Packed weight layout shared by the GEMV kernels (gemv_*.cpp) and the oneDNN
// prefill path (matmul_onednn.cpp). Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"

namespace xft::engine {

constexpr int kRowAlign = 64;

struct AmxPackedWeight;  // amx_linear.h  // elements; every packed row is a multiple of this

// The int4 decode kernel new Linears pack for on AVX-512 where the CPU has
// both: vnni (the default: x quantized to int8, vpdpbusd on the nibbles) or
// bf16 (x rounded to bf16, nibbles widened for vdpbf16ps). Env XFT_INT4_DOT
// (read on first use), or set_int4_dot() (tests and benches run both).
enum class Int4Dot { vnni, bf16 };
Int4Dot int4_dot();
void set_int4_dot(Int4Dot dot);

// How the int4 decode kernel wants x staged (stage_x_int4).
enum class Int4X { f32, bf16, int8 };

struct PackedWeight {
  WeightFormat format = WeightFormat::f32;
  Isa isa = Isa::scalar;
  bool use_bf16_dot = false;  // decode x is converted to bf16 (vdpbf16ps)
  bool use_int8_dot = false;  // vpdpbusd: int8 x quantized per kInt8Block (int4: per Int4X::int8 block)
  int out = 0;
  int in = 0;
  int ld = 0;               // padded row length in elements
  AlignedBuffer data;       // [out][ld] of f32 / bf16 bits / f16 bits / int8; int4: [out][ld / 2] bytes (quant_int4.h)
  std::vector<float> scales;  // int8: per output row
  bool int8_tiled = false;    // int8 rows in tiles of kInt8TileRows (the VNNI kernels' layout, below)
  std::vector<float> bias;    // empty when there is none
  // int4 (layout in quant_int4.h): ld = groups * group_len slots per row,
  // group g in slots [g * group_len, (g + 1) * group_len).
  int groups = 0;
  int group_len = 0;                    // multiple of 32
  bool int4_interleaved = false;        // rows in tiles of 16 (the VNNI kernel's layout)
  std::vector<uint16_t> group_scale;    // IEEE half, in row blocks (int4_param_index)
  std::vector<uint8_t> group_zero;      // the same layout
  std::vector<int32_t> slot_input;      // [ld]: input index of a slot, -1 for padding;
                                        // empty when slot c is input c (padding only at the end)
  Int4X int4_x = Int4X::f32;            // how the decode kernel wants x staged
  // fp8 (layout in fp8.h): e4m3 bytes [out][ld], one float scale per block of
  // fp8_block_cols inputs and the block's rows (fp8_scale_row maps a row to
  // its scale row).
  int fp8_block_cols = 0;
  int fp8_col_blocks = 0;
  std::vector<float> fp8_scale;         // [scale rows][fp8_col_blocks]
  std::vector<int32_t> fp8_scale_row;   // [out]
  // What only the AVX512-BF16 decode kernel reads (gemv_fp8_avx512bf16.cpp):
  // fp8_scale times kFp8Bf16ScaleBack, the block multipliers it would
  // otherwise form block by block; and per row whether any byte has exponent
  // field 0 (zero, subnormal or padding), the bytes its conversion must patch
  // (rows without one skip the per-chunk test).
  std::vector<float> fp8_scale_bf16_dot;     // like fp8_scale
  std::vector<uint8_t> fp8_row_exponent_zero;  // [out]
  // The AMX tile packing (amx_linear.h); set: every forward_gemv runs on AMX.
  std::shared_ptr<const AmxPackedWeight> amx;

  size_t element_bytes() const {
    switch (format) {
      case WeightFormat::f32: return 4;
      case WeightFormat::bf16:
      case WeightFormat::f16: return 2;
      case WeightFormat::int8:
      case WeightFormat::fp8: return 1;
      case WeightFormat::int4: return 1;  // per two elements; see row_bytes()
    }
    return 4;
  }
  size_t row_bytes() const {
    return format == WeightFormat::int4 ? static_cast<size_t>(ld) / 2 : static_cast<size_t>(ld) * element_bytes();
  }
  template <class T>
  const T* row(int r) const { return data.as<T>() + static_cast<size_t>(r) * ld; }
  // int4 row r in the row-major layout (not int4_interleaved).
  const uint8_t* int4_row(int r) const { return data.as<uint8_t>() + static_cast<size_t>(r) * (ld / 2); }
};

// The int8 layout of the AVX512-VNNI kernels (int8_tiled): tiles of
// kInt8TileRows rows, out rounded up with zero rows; in a tile, the inputs
// 4k .. 4k + 3 of its row i at bytes 64k + 4i, each stored as q + 128 (u8,
// vpdpbusd's unsigned operand). One 64-byte load then feeds one vpdpbusd
// that leaves each row's dot in its own lane: the per-block dot of a row is
// exact without a horizontal add, for decode and GEMM alike.
constexpr int kInt8TileRows = 16;
inline const uint8_t* int8_tile(const PackedWeight& w, int r) {
  return w.data.as<uint8_t>() + static_cast<size_t>(r / kInt8TileRows) * kInt8TileRows * w.ld;
}
inline size_t int8_tiled_offset(const PackedWeight& w, int r, int c) {
  return static_cast<size_t>(r / kInt8TileRows) * kInt8TileRows * w.ld + static_cast<size_t>(c / 4) * 64 +
         (r % kInt8TileRows) * 4 + c % 4;
}
// int8 rows [r0, r0 + rows) row-major into dst [rows][ld], whatever the layout.
void int8_unpack_rows(const PackedWeight& w, int r0, int rows, int8_t* dst);

// Decode kernels: y rows [row_begin, row_end) of all m <= kGemvMaxRows inputs.
// x: m rows of ld elements, zero padded: float, or bf16 bits when
// use_bf16_dot. y: m rows of w.out floats. Bias is added here.
using GemvKernel = void (*)(const PackedWeight& w, const void* x, int m, float* y, int row_begin,
                            int row_end);

void gemv_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_f32_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin,
                     int row_end);
void gemv_f16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin,
                     int row_end);
void gemv_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin,
                      int row_end);
void gemv_int8_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin,
                      int row_end);

// Batch-invariant GEMM (AVX2 formats: f32, bf16, f16, int8; x staged as for
// gemv_avx2): weight rows [row_begin, row_end) for all m inputs, each input's
// result bit for bit gemv_avx2's for it alone. Fastest when each call gets
// gemm_avx2_panel_rows(w) rows (a panel that stays in L2).
void gemm_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_avx2_panel_rows(const PackedWeight& w);

// The batch-invariant GEMMs of the AVX-512 decode kernels, each input's result
// bit for bit its decode kernel's for it alone (x staged as for that kernel):
// gemv_bf16_avx512, gemv_int8_vnni, gemv_int4_avx512. Fastest when each call
// gets its *_panel_rows(w) rows.
void gemm_bf16_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_bf16_avx512_panel_rows(const PackedWeight& w);
void gemm_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_int8_vnni_panel_rows(const PackedWeight& w);
void gemm_int4_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_int4_avx512_panel_rows(const PackedWeight& w);

// The stagers below fill their rows on pool's threads where one is given
// and there are enough rows (a prompt's: ThreadPool::parallel_rows), on the
// caller otherwise; a row's staged bytes are the same either way.
template <class F>
void stage_rows(ThreadPool* pool, int m, F&& fn) {
  if (pool) pool->parallel_rows(m, fn);
  else if (m > 0) fn(0, m);
}

// int8 x AVX512-VNNI decode. stage_x_int8 quantizes m rows of x (w.in
// floats each) into `buffer`, laid out as Int8StagedX describes; the kernel
// reads that layout as its x.
struct Int8StagedX {
  const int8_t* q;         // [m][ld] int8, zero padded
  const int32_t* neg_comp; // [m][ld / kInt8Block]: -128 · Σ q over the block (every lane's start)
  const float* scale;      // [m][ld / kInt8Block]
};
const void* stage_x_int8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool = nullptr);
void gemv_int8_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);

// int4 decode. stage_x_int4 gathers m rows of x into slot order (zero in
// padding slots) in the kernel's form (int4_x), and the sum of each group's
// staged values (as the kernel multiplies them); the kernels read that
// layout as their x.
struct Int4StagedX {
  const void* x;             // [m][ld] float, bf16 bits or int8
  const float* unit_scale;   // int8: [m][groups * int4_x_blocks_per_group(w)], one scale per block
  const float* group_sums;   // [m][groups]
};
// int8 x comes in blocks with one scale: a whole group of up to 128 slots
// (the kernel sums it in int16: 4 pairs of 15 · 127 per lane at most), else
// 64-slot units, the last one 32 when the group ends in a half unit.
inline int int4_x_block(const PackedWeight& w) { return w.group_len <= 128 ? w.group_len : 64; }
inline int int4_x_blocks_per_group(const PackedWeight& w) { return (w.group_len + int4_x_block(w) - 1) / int4_x_block(w); }
const void* stage_x_int4(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer, ThreadPool* pool = nullptr);
void gemv_int4_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_int4_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_int4_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
// AVX512-VNNI on int8 x (staged as for gemv_int4_avx2), bit for bit gemv_int4_avx2's results.
void gemv_int4_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
// Its batch-invariant GEMM (any m, each input bit for bit gemv_int4_vnni's
// alone), fastest with gemm_int4_vnni_panel_rows(w) rows per call (a multiple of
// the eight-row blocks).
void gemm_int4_vnni(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_int4_vnni_panel_rows(const PackedWeight& w);

// fp8 (e4m3 weights, block scales; x float staged by stage_x_fp8, fp8.h):
// per row and input, each column
// block summed on its own, then times its scale into the row total, in the
// same order whatever m is.
void gemv_fp8_scalar(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_fp8_avx2(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_fp8_avx512(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
void gemv_fp8_avx512bf16(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
// Its batch-invariant GEMM (any m, each input bit for bit gemv_fp8_avx512bf16's
// alone), fastest with gemm_fp8_avx512bf16_panel_rows(w) rows per call (the
// rows it converts to bf16 at once).
void gemm_fp8_avx512bf16(const PackedWeight& w, const void* x, int m, float* y, int row_begin, int row_end);
int gemm_fp8_avx512bf16_panel_rows(const PackedWeight& w);

// Prefill: returns false when oneDNN cannot run this shape (caller falls back).
// Uses bf16 matmul when onednn_bf16_matmul_available() (declared in linear.h),
// else float tiles and f32 matmul.
bool matmul_onednn(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool);

}  // namespace xft::engine
