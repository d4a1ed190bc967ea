// AMX projections: bf16, int8 and int4 weights through the tile units, for
// every row count (decode included), so a row's bits never depend on how
// many rows share a step. Linear (linear.cpp) packs a weight for AMX at load
// when amx_mode() is not off and the format has an AMX kernel, and then sends
// every forward_gemv call here.
//
// Formats:
//  * bf16: weights packed at load into the VNNI tile layout: per block of 16
//    output rows and tile of 32 inputs, tile row k holds the 16 rows' pairs
//    (2k, 2k+1) interleaved (1 KB, one TILELOADD). x rounded to bf16 once.
//    TDPBF16PS sums in fp32.
//  * int8: AMX-INT8 (TDPBSSD) on the int8 weights as quantized at load
//    (per output row scale), in the same layout with quads (4k..4k+3) of
//    inputs per tile row; x quantized per row (XFT's w8a8):
//    t = round(x / sx), sx = max|x_row| / 127. The integer dot product is
//    exact; y = float(acc) * sx * s_row (+ bias). Chosen over dequantizing to
//    bf16 tiles because the weight bytes go into the tiles as stored: no
//    per-call conversion of every weight (the work that made the AVX-512
//    int4 decode compute-bound), and TDPBSSD does twice TDPBF16PS's
//    products per instruction. The cost is x's rounding per row, not per 64
//    inputs: |error| <= sx / 2 * sum |q s| on top of the weight rounding.
//  * int4: the packed nibbles stay the only copy; each call dequantizes the
//    panels of 16 rows it needs into bf16 tiles (w = (q - z) s rounded to
//    bf16), x in slot order rounded to bf16, then as bf16. That dequantization
//    is plain C++, so int4 runs on the tiles only when emulated (auto keeps
//    the AVX-512 int4 kernel until it is vectorized and measured on AMX).
//
// Modes (amx_mode()): env XFT_AMX = auto (default) | off | emulate, or
// set_amx_mode() (tests):
//  * auto: the real instructions where CPUID reports amx_tile + amx_bf16
//    (and amx_int8 for int8), the kernel grants the tile state
//    (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once) and
//    the active ISA is avx512 (XFT_ISA=avx2 lowers AMX away too); else off.
//  * emulate: the same kernels on the C++ tile emulator (amx_tiles.h), on
//    every machine and ISA: slow, for tests and serve_batching runs.
//  * off: the AVX-512/AVX2/scalar kernels.
#pragma once

#include <memory>
#include <string>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/amx_kernels.h"
#include "engine/kernels/linear_internal.h"
#include "engine/kernels/thread_pool.h"

namespace xft::engine {

enum class AmxMode { off, hardware, emulated };

// What the CPU and the kernel allow: the instructions present (CPUID, XCR0)
// and the tile state granted to this process (requested on first call).
struct AmxSupport {
  bool bf16 = false;  // amx_tile + amx_bf16, state granted
  bool int8 = false;  // amx_tile + amx_int8, state granted
  std::string note;   // "not present", "refused by the kernel (errno ...)", or the features
};
const AmxSupport& amx_support();

// The mode new Linears pack for (XFT_AMX read on first use).
AmxMode amx_mode();
void set_amx_mode(AmxMode mode);
// "auto" | "off" | "emulate"; false when the text is none of them.
bool parse_amx_mode(const std::string& text, AmxMode* mode);
const char* amx_mode_name(AmxMode mode);

// One line for setup logs and benchmarks: "AMX: not present",
// "AMX: amx_bf16 amx_int8 (tile state granted)", ...
std::string amx_status_line();

struct AmxPackedWeight {
  AmxMode unit = AmxMode::emulated;  // hardware or emulated
  AmxDot dot = AmxDot::bf16;
  int blocks = 0;   // ceil(out / 16)
  int k_tiles = 0;  // ld / 32 (bf16, int4) or ld / 64 (int8)
  AlignedBuffer tiles;  // [blocks][k_tiles][1024 bytes]; empty for int4
};

// The AMX packing of an already packed weight, or null when the current mode
// has no AMX kernel for it (mode off, format f32/f16/fp8, int8 without
// amx_int8, or hardware below the avx512 ISA).
std::shared_ptr<const AmxPackedWeight> pack_amx(const PackedWeight& w);

// y[m][out] = x[m][in] . W^T + b on the tiles, for any m >= 1.
void amx_forward(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool);

// "bf16/amx", "int8/amx-emulated", ...
std::string amx_kernel_name(const PackedWeight& w);

// Tile panels a GEMM task reads: panel(block, slot) is block's
// [k_tiles][1024 bytes]; slot 0 / 1 names the buffer a builder may fill.
struct AmxPanels {
  const uint8_t* (*fn)(const void* ctx, int block, int slot) = nullptr;
  const void* ctx = nullptr;
  const uint8_t* operator()(int block, int slot) const { return fn(ctx, block, slot); }
};

// The GEMM on each unit (amx_kernels.h). The hardware one needs
// amx_support() true for its format; it faults (SIGILL) otherwise.
void amx_gemm_emulated(AmxDot dot, const AmxGemmTask& task, const AmxPanels& panels);
void amx_gemm_hardware(AmxDot dot, const AmxGemmTask& task, const AmxPanels& panels);

// Register-only throughput loops for bench_kernels / bench_roofline: four
// TDPBF16PS (TDPBSSD) per iteration on tiles already loaded; returns the
// flops (int8 ops) done. Need amx_support().bf16 (.int8).
double amx_bf16_peak_flops(long iterations);
double amx_int8_peak_ops(long iterations);

}  // namespace xft::engine
