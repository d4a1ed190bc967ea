// A dense projection y[m, out] = x[m, in] · Wᵀ + b with the weight packed once
// at load time into the format the kernels stream.
//
// Two families of kernels:
//  * batch-invariant (forward_gemv): an input's result is bit for bit the
//    same whatever else shares the call. m <= kGemvMaxRows: the decode GEMV
//    kernels, which read the weight exactly once per call, all pool threads
//    splitting the output rows. Larger m: a register-blocked GEMM that keeps
//    the decode kernel's summation order per output, over L2-sized panels of
//    weight rows shared out to the threads: AVX2 (f32, bf16, f16, int8:
//    gemm_avx2.cpp), AVX512-BF16 (bf16: gemm_bf16_avx512.cpp, int4:
//    gemm_int4_avx512.cpp), AVX512-VNNI (int8: gemm_int8_vnni.cpp);
//    elsewhere (AVX-512 f32/f16, fp8, AVX2 int4, scalar) the decode kernel in
//    groups of kGemvMaxRows inputs over a few cached rows at a time.
//  * oneDNN matmul (forward_matmul): one single-threaded call per pool thread
//    on its slice of output columns, primitives cached per shape; bf16
//    matmul where oneDNN has it (AVX-512), else float weight tiles and f32
//    matmul (exact weights, float x). XFT_ISA=scalar uses the decode kernel.
// Which one runs:
//  * the server (ModelOptions::batch_invariant, `run qwen --batch-invariant`)
//    calls forward_gemv for every m: decode and prefill rows alike;
//  * forward (plain prefill, `--no-batch-invariant`, `run qwen --bench`):
//    m <= kGemvMaxRows the decode kernels; larger m the AVX2 GEMM where it
//    exists and oneDNN has no bf16 matmul (oneDNN would run the same float
//    FMAs on widened tiles; bench_kernels --only linear measures the GEMM
//    faster for small batches and on par at m = 512), and the AVX512-VNNI
//    int8 GEMM always (oneDNN widens int8 to bf16 tiles: 3-24x slower),
//    else oneDNN (prefill_batch_invariant() says which).
// Fused projections: pass several LinearBlocks (q/k/v or gate/up rows); the
// output row holds the blocks' columns one after the other.
// The LM head for prefill: only the last position's logits are needed, so
// call forward with that one row (m = 1), not the whole prompt.
//
// Numerics per format (what tests/unit/engine/kernels_linear_test.cpp checks):
//  * f32:  float FMA, float accumulation (oneDNN f32 matmul for prefill).
//  * bf16: weight kept bf16. AVX512-BF16 decode and oneDNN bf16 prefill round
//    x to bf16 once (|error| <= 2^-8 · Σ|x_i w_i|); AVX2/scalar kernels and
//    the AVX2 GEMM keep x float.
//  * f16:  weight kept IEEE half; decode converts it to float (F16C) and
//    keeps x float; bf16 prefill rounds weight tiles and x to bf16
//    (|error| <= 2^-7 · Σ|x_i w_i|).
//  * int8: weight-only quantization, symmetric per output channel:
//    q = round(w / s), s = max|w_row| / 127 (|w - q s| <= s/2).
//    Decode with AVX512-VNNI: x is quantized per block of kInt8Block = 64
//    elements (Q8-style: t = round(x / sx), sx = max|x_block| / 127), each
//    block's integer dot product is exact (vpdpbusd on q+128 with the
//    compensation folded into the accumulator's start), and the block
//    results are summed in float: |error| <= Σ_blocks sx/2 · Σ|q s| on top
//    of the weight rounding. Without VNNI (AVX-512 or AVX2) decode is the
//    exact dequantize-FMA path (int8 -> float, FMA with float x, s applied
//    once per row). bf16 prefill feeds the integers (exact in bf16) to
//    oneDNN and applies s per column, adding only the bf16 rounding of x.
//  * int4: weight-only, per group of input columns with a scale and a zero
//    point per (row, group): w = (q - z) · s, q in 0..15 (GPTQ/AWQ layouts
//    or quantize_int4 at load). Stored as packed nibbles (see quant_int4.h),
//    never as a dequantized copy. AVX512-BF16 decode rounds x to bf16 once
//    (|error| <= 2^-8 · Σ|x_i w_i|); AVX2/scalar decode keep x float. Prefill
//    dequantizes tiles of rows to bf16 (or float without bf16 matmul): the
//    weight is rounded to bf16 on top of x.
//  * fp8:  weight-only, e4m3 bytes with a float scale per block of rows and
//    columns (FP8 checkpoints, fp8.h), kept as stored. Decode widens e4m3 to
//    float exactly in registers and keeps x float; per row and input each
//    column block is summed, then times its scale into the total. Prefill
//    dequantizes tiles of rows as int4 does.
// Padding: every row is zero-padded to a multiple of 64 elements so the
// kernels have no tails; weight_bytes() counts the padded rows plus scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/thread_pool.h"

namespace xft::engine {

enum class WeightFormat { f32, bf16, f16, int8, int4, fp8 };

const char* weight_format_name(WeightFormat format);
// "f32" | "bf16" | "f16" | "int8" | "int4" | "fp8"; false when the text is none of
// them. fp8 from float blocks is quantized at load (fp8.h).
bool parse_weight_format(const std::string& text, WeightFormat* format);

// Rows already quantized to 4 bits, in the plain form every checkpoint layout
// is converted to: weight(r, c) = (q[r][c] - zero[r][g]) * scale[r][g] with
// g = group_of[c]. The blocks of one Linear share group_of (one input).
struct Int4Rows {
  const uint8_t* q = nullptr;           // [rows][in], 0..15
  const uint16_t* scale_f16 = nullptr;  // [rows][groups], IEEE half bits
  const uint8_t* zero = nullptr;        // [rows][groups] (GPTQ's classic zero+1 may be 16)
  const int32_t* group_of = nullptr;    // [in], values in [0, groups)
  int groups = 0;
};

// Rows of an FP8 checkpoint's projection as stored (layout in fp8.h):
// weight(r, c) = e4m3(q[r][c]) * scale[r / block_rows][c / block_cols],
// partial blocks at the edges. block_cols must be a multiple of 64 (the
// kernels' unit); the blocks of one Linear share it.
struct Fp8Rows {
  const uint8_t* q = nullptr;    // [rows][in] e4m3 bits
  const float* scale = nullptr;  // [ceil(rows / block_rows)][ceil(in / block_cols)]
  int block_rows = 0;
  int block_cols = 0;
};

// One block of rows of a fused projection (q/k/v, gate/up): exactly one of
// weight_f32 / weight_bf16 / int4 / fp8 is set, row-major [rows][in]; bias
// optional [rows]. int4 blocks need WeightFormat::int4; float/bf16 blocks
// packed as int4 are quantized at load (quantize_int4, groups of
// kInt4DefaultGroup). fp8 blocks need WeightFormat::fp8, which takes only them.
struct LinearBlock {
  const float* weight_f32 = nullptr;
  const uint16_t* weight_bf16 = nullptr;
  const float* bias = nullptr;
  int rows = 0;
  const Int4Rows* int4 = nullptr;
  const Fp8Rows* fp8 = nullptr;
};

// Largest m served by the GEMV kernels as they are; larger batches go to the
// batch-invariant GEMM or oneDNN (see the top of this file).
constexpr int kGemvMaxRows = 4;
// Activation block of the int8 VNNI decode kernel (one scale per block).
constexpr int kInt8Block = 64;
// Group size of int4 quantization at load (--dtype int4 on a bf16 checkpoint).
constexpr int kInt4DefaultGroup = 128;

struct PackedWeight;  // kernel layout, see linear_internal.h

// Whether prefill runs bf16 matmuls (oneDNN 2.6 has them from AVX-512 on;
// XFT_ISA=avx2 caps oneDNN too). Without them bf16/f16/int8 prefill widens
// weight tiles to float and runs f32 matmuls: exact weights, float x.
bool onednn_bf16_matmul_available();

class Linear {
 public:
  Linear();
  // weight: row-major [out][in] float32 or raw bf16 bits; bias: [out] or null.
  Linear(const float* weight, int out, int in, WeightFormat format, const float* bias = nullptr);
  Linear(const uint16_t* weight_bf16, int out, int in, WeightFormat format,
         const float* bias = nullptr);
  // Rows of all blocks stacked in order: out() = Σ rows. A bias is used when
  // any block has one (blocks without get zeros).
  Linear(const std::vector<LinearBlock>& blocks, int in, WeightFormat format);
  ~Linear();
  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;

  // y[m][out] = x[m][in] · Wᵀ + b; x and y are dense row-major and must not overlap.
  void forward(const float* x, int m, float* y, ThreadPool& pool) const;

  int out() const;
  int in() const;
  WeightFormat format() const;
  // Bytes of packed weight (padded rows, int8 scales, int4 scales and zeros)
  // read by one decode step.
  size_t weight_bytes() const;
  // What weight_bytes() reports for [out, in] weights of this format quantized
  // at load (int4 in groups of kInt4DefaultGroup, fp8 in 128x128 blocks),
  // without packing any: for memory estimates before a load.
  static size_t packed_bytes(WeightFormat format, uint64_t out, uint64_t in);
  // The kernel family picked at construction (active_isa() then).
  Isa isa() const;
  // e.g. "bf16/avx512-bf16", "int8/avx2", for logs and benchmarks.
  std::string kernel_name() const;
  bool empty() const { return packed_ == nullptr; }

  // The batch-invariant kernels for any m (the server's decode and prefill,
  // benchmarks, tests): row i of y is bit for bit what forward_gemv gives x
  // row i alone. Above kGemvMaxRows the AVX2 GEMM, or the decode kernel in
  // groups of four inputs over a few cached rows at a time.
  void forward_gemv(const float* x, int m, float* y, ThreadPool& pool) const;
  // The oneDNN path alone for any m >= 1 (benchmarks and tests).
  void forward_matmul(const float* x, int m, float* y, ThreadPool& pool) const;
  // Whether forward() sends m > kGemvMaxRows to forward_gemv (else oneDNN).
  bool prefill_batch_invariant() const;

  const PackedWeight& packed() const { return *packed_; }
  // Bytes of the packed weight's main block (rows of elements or nibbles; a
  // multiple of 64), what move_data_into copies.
  size_t data_bytes() const;
  // Copies that block to `into` (64-byte aligned, data_bytes() long, alive
  // as long as this Linear), reads it from there and frees its own: the
  // experts of a layer, each a few MB, share one arena on huge pages.
  void move_data_into(unsigned char* into);
  // Row r of the weight as used (dequantized for int8/int4), [in] floats in
  // input order: the embedding lookup of a tied int4 head, and tests.
  void dequantize_row(int r, float* out) const;

 private:
  std::unique_ptr<PackedWeight> packed_;
};

// One projection of forward_gemv_grouped: y[m][out] = x[m][in] · Wᵀ + b.
struct GroupedProjection {
  const Linear* linear = nullptr;
  const float* x = nullptr;
  int m = 0;
  float* y = nullptr;
};

// Runs several projections through the batch-invariant kernels in one
// parallel region, the row panels of all of them shared out to the threads
// together: the chosen experts of a mixture-of-experts layer, each of which
// alone is too little work to pay for a fork/join of the pool. Each row's
// result is bit for bit what forward_gemv gives it alone. The thread-local
// staging makes it one call at a time per calling thread, like forward_gemv.
void forward_gemv_grouped(std::span<const GroupedProjection> projections, ThreadPool& pool);

}  // namespace xft::engine
