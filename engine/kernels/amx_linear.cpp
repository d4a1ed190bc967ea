#include "engine/kernels/amx_linear.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/kernels/ops.h"
#include "engine/kernels/quant_int4.h"

namespace xft::engine {
namespace {

// arch_prctl codes (asm/prctl.h): without this grant the first tile
// instruction of the process dies of SIGILL, even where CPUID lists AMX.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

AmxSupport detect_support() {
  AmxSupport support;
  const CpuFeatures& f = cpu_features();
  if (!f.amx_tile || (!f.amx_bf16 && !f.amx_int8)) {
    support.note = "not present";
    return support;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    support.note = std::string("refused by the kernel (arch_prctl XTILEDATA: ") + std::strerror(errno) + ")";
    return support;
  }
  support.bf16 = f.amx_bf16;
  support.int8 = f.amx_int8;
  support.note = std::string(f.amx_bf16 ? "amx_bf16 " : "") + (f.amx_int8 ? "amx_int8 " : "") + "(tile state granted)";
  return support;
}

// Stored as the requested mode: auto resolves per weight (amx_mode()).
enum class Requested { automatic, off, emulate };

std::atomic<int>& requested_slot() {
  static std::atomic<int> slot{[] {
    AmxMode mode = AmxMode::hardware;
    if (const char* env = std::getenv("XFT_AMX"); env && !parse_amx_mode(env, &mode)) {
      std::fprintf(stderr, "XFT_AMX=%s: expected auto, off or emulate; using auto\n", env);
    }
    return static_cast<int>(mode);
  }()};
  return slot;
}

// ---- packing ----

// Tile (block, kt) of a bf16 weight: row k holds, for each of the block's 16
// output rows n, inputs (kt * 32 + 2k, +1) at halfwords (2n, 2n + 1).
void pack_bf16_tiles(const PackedWeight& w, AmxPackedWeight& packed) {
  uint16_t* dst = packed.tiles.as<uint16_t>();
  for (int block = 0; block < packed.blocks; ++block) {
    for (int n = 0; n < kAmxBlockRows; ++n) {
      const int r = block * kAmxBlockRows + n;
      if (r >= w.out) break;  // padding rows stay zero
      const uint16_t* row = w.row<uint16_t>(r);
      for (int kt = 0; kt < packed.k_tiles; ++kt) {
        uint16_t* tile = dst + (static_cast<size_t>(block) * packed.k_tiles + kt) * (kAmxTileBytes / 2);
        for (int k = 0; k < kAmxMaxRows; ++k) {
          tile[k * 32 + 2 * n] = row[kt * 32 + 2 * k];
          tile[k * 32 + 2 * n + 1] = row[kt * 32 + 2 * k + 1];
        }
      }
    }
  }
}

// The int8 layout: row k holds inputs (kt * 64 + 4k .. +3) of output n at bytes 4n .. 4n + 3.
void pack_int8_tiles(const PackedWeight& w, AmxPackedWeight& packed) {
  int8_t* dst = packed.tiles.as<int8_t>();
  std::vector<int8_t> row(w.ld);
  for (int block = 0; block < packed.blocks; ++block) {
    for (int n = 0; n < kAmxBlockRows; ++n) {
      const int r = block * kAmxBlockRows + n;
      if (r >= w.out) break;
      int8_unpack_rows(w, r, 1, row.data());
      for (int kt = 0; kt < packed.k_tiles; ++kt) {
        int8_t* tile = dst + (static_cast<size_t>(block) * packed.k_tiles + kt) * kAmxTileBytes;
        for (int k = 0; k < kAmxMaxRows; ++k) std::memcpy(tile + k * 64 + 4 * n, row.data() + kt * 64 + 4 * k, 4);
      }
    }
  }
}

bool format_has_amx(WeightFormat format) {
  return format == WeightFormat::bf16 || format == WeightFormat::int8 || format == WeightFormat::int4;
}

// Which unit a weight of this format runs on now, or off.
AmxMode unit_for(const PackedWeight& w) {
  if (!format_has_amx(w.format)) return AmxMode::off;
  const AmxMode mode = amx_mode();
  if (mode != AmxMode::hardware) return mode;
  // int4's per-call dequantization into tiles is plain C++ (int4_panel): on
  // real AMX it would make decode slower than the AVX-512 nibble kernel, so
  // int4 takes the tiles only on the emulator until that step is vectorized
  // and measured on an AMX host.
  if (w.format == WeightFormat::int4) return AmxMode::off;
  const bool granted = w.format == WeightFormat::int8 ? amx_support().int8 : amx_support().bf16;
  return granted && w.isa >= Isa::avx512 ? AmxMode::hardware : AmxMode::off;
}

// ---- staging x ----

struct StagedX {
  const uint8_t* rows = nullptr;
  size_t stride = 0;
  const float* scale = nullptr;  // int8
};

// Rows of x rounded to bf16 (in slot order for int4), zero padded to ld.
StagedX stage_bf16(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer) {
  buffer.resize(static_cast<size_t>(m) * w.ld * 2);
  thread_local std::vector<float> slots;
  slots.assign(w.ld, 0.0f);
  for (int r = 0; r < m; ++r) {
    const float* src = x + static_cast<size_t>(r) * w.in;
    uint16_t* dst = buffer.as<uint16_t>() + static_cast<size_t>(r) * w.ld;
    if (w.format == WeightFormat::int4) {
      int4_gather_x(w, src, slots.data());
      f32_to_bf16(slots.data(), dst, w.ld);
    } else {
      f32_to_bf16(src, dst, w.in);
      std::memset(dst + w.in, 0, sizeof(uint16_t) * (w.ld - w.in));
    }
  }
  return {buffer.as<uint8_t>(), static_cast<size_t>(w.ld) * 2, nullptr};
}

// Rows of x quantized to int8 with one scale per row, zero padded to ld.
StagedX stage_int8(const PackedWeight& w, const float* x, int m, AlignedBuffer& buffer,
                   std::vector<float>& scales) {
  buffer.resize(static_cast<size_t>(m) * w.ld);
  scales.resize(m);
  for (int r = 0; r < m; ++r) {
    const float* src = x + static_cast<size_t>(r) * w.in;
    int8_t* dst = buffer.as<int8_t>() + static_cast<size_t>(r) * w.ld;
    float max_abs = 0.0f;
    for (int c = 0; c < w.in; ++c) max_abs = std::max(max_abs, std::fabs(src[c]));
    const float scale = max_abs > 0.0f ? max_abs / 127.0f : 1.0f;
    for (int c = 0; c < w.in; ++c) {
      dst[c] = static_cast<int8_t>(std::clamp(std::nearbyint(src[c] / scale), -127.0f, 127.0f));
    }
    std::memset(dst + w.in, 0, w.ld - w.in);
    scales[r] = scale;
  }
  return {buffer.as<uint8_t>(), static_cast<size_t>(w.ld), scales.data()};
}

// ---- panels ----

struct PackedPanels {
  const AmxPackedWeight* packed;
};

const uint8_t* packed_panel(const void* ctx, int block, int /*slot*/) {
  const AmxPackedWeight& packed = *static_cast<const PackedPanels*>(ctx)->packed;
  return packed.tiles.as<uint8_t>() + static_cast<size_t>(block) * packed.k_tiles * kAmxTileBytes;
}

// int4: block's 16 rows dequantized in slot order and laid out as bf16 tiles
// in this thread's buffer `slot`.
const uint8_t* int4_panel(const void* ctx, int block, int slot) {
  const PackedWeight& w = *static_cast<const PackedWeight*>(ctx);
  const int k_tiles = w.ld / 32;
  thread_local AlignedBuffer panels[2];
  thread_local std::vector<float> row;
  AlignedBuffer& panel = panels[slot];
  const size_t bytes = static_cast<size_t>(k_tiles) * kAmxTileBytes;
  panel.resize(bytes);
  std::memset(panel.as<void>(), 0, bytes);
  row.resize(w.ld);
  uint16_t* tiles = panel.as<uint16_t>();
  for (int n = 0; n < kAmxBlockRows; ++n) {
    const int r = block * kAmxBlockRows + n;
    if (r >= w.out) break;
    int4_dequantize_slots(w, r, row.data());
    for (int s = 0; s < w.ld; ++s) {
      const int kt = s / 32, k = (s % 32) / 2, j = s % 2;
      tiles[static_cast<size_t>(kt) * (kAmxTileBytes / 2) + k * 32 + 2 * n + j] = f32_to_bf16(row[s]);
    }
  }
  return panel.as<uint8_t>();
}

// Blocks per pool task: two (one pass of amx_gemm) keeps the split fine
// enough to balance the threads at decode.
constexpr int kBlocksPerTask = 2;

}  // namespace

const AmxSupport& amx_support() {
  static const AmxSupport support = detect_support();
  return support;
}

AmxMode amx_mode() { return static_cast<AmxMode>(requested_slot().load(std::memory_order_relaxed)); }

void set_amx_mode(AmxMode mode) { requested_slot().store(static_cast<int>(mode), std::memory_order_relaxed); }

bool parse_amx_mode(const std::string& text, AmxMode* mode) {
  if (text == "auto") *mode = AmxMode::hardware;
  else if (text == "off") *mode = AmxMode::off;
  else if (text == "emulate") *mode = AmxMode::emulated;
  else return false;
  return true;
}

const char* amx_mode_name(AmxMode mode) {
  switch (mode) {
    case AmxMode::off: return "off";
    case AmxMode::hardware: return "auto";
    case AmxMode::emulated: return "emulate";
  }
  return "unknown";
}

std::string amx_status_line() { return "AMX: " + amx_support().note; }

std::shared_ptr<const AmxPackedWeight> pack_amx(const PackedWeight& w) {
  const AmxMode unit = unit_for(w);
  if (unit == AmxMode::off) return nullptr;
  auto packed = std::make_shared<AmxPackedWeight>();
  packed->unit = unit;
  packed->dot = w.format == WeightFormat::int8 ? AmxDot::int8 : AmxDot::bf16;
  packed->blocks = (w.out + kAmxBlockRows - 1) / kAmxBlockRows;
  // ld is a multiple of 64 (bf16, int8) or of 32 (int4 groups): whole tiles.
  packed->k_tiles = w.ld / (packed->dot == AmxDot::int8 ? 64 : 32);
  if (w.format == WeightFormat::int4) return packed;
  packed->tiles.resize(static_cast<size_t>(packed->blocks) * packed->k_tiles * kAmxTileBytes);
  if (w.format == WeightFormat::bf16) pack_bf16_tiles(w, *packed);
  else pack_int8_tiles(w, *packed);
  return packed;
}

void amx_gemm_emulated(AmxDot dot, const AmxGemmTask& task, const AmxPanels& panels) {
  if (dot == AmxDot::bf16) amx_gemm<EmulatedTiles, AmxDot::bf16>(task, panels);
  else amx_gemm<EmulatedTiles, AmxDot::int8>(task, panels);
}

void amx_forward(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool) {
  const AmxPackedWeight& packed = *w.amx;
  thread_local AlignedBuffer x_buffer;
  thread_local std::vector<float> x_scales;
  const StagedX staged = packed.dot == AmxDot::int8 ? stage_int8(w, x, m, x_buffer, x_scales)
                                                    : stage_bf16(w, x, m, x_buffer);
  AmxGemmTask base;
  base.x = staged.rows;
  base.x_stride = staged.stride;
  base.x_scale = staged.scale;
  base.m = m;
  base.k_tiles = packed.k_tiles;
  base.y = y;
  base.out = w.out;
  base.bias = w.bias.empty() ? nullptr : w.bias.data();
  base.row_scale = w.scales.empty() ? nullptr : w.scales.data();
  const PackedPanels packed_ctx{&packed};
  const AmxPanels panels = w.format == WeightFormat::int4 ? AmxPanels{int4_panel, &w}
                                                          : AmxPanels{packed_panel, &packed_ctx};
  const auto gemm = packed.unit == AmxMode::hardware ? amx_gemm_hardware : amx_gemm_emulated;
  const int tasks = (packed.blocks + kBlocksPerTask - 1) / kBlocksPerTask;
  pool.parallel_for_balanced(tasks, [&](int begin, int end) {
    AmxGemmTask task = base;
    task.block_begin = begin * kBlocksPerTask;
    task.block_end = std::min(packed.blocks, end * kBlocksPerTask);
    gemm(packed.dot, task, panels);
  });
}

std::string amx_kernel_name(const PackedWeight& w) {
  std::string name = weight_format_name(w.format);
  name += w.amx->unit == AmxMode::hardware ? "/amx" : "/amx-emulated";
  return name;
}

}  // namespace xft::engine
