// The AMX kernels on the real instructions: the only file compiled with
// -mamx-tile -mamx-bf16 -mamx-int8 (engine/CMakeLists.txt); everything here
// runs only after amx_support() granted the tile state.
#include <immintrin.h>

#include "engine/kernels/amx_linear.h"

namespace xft::engine {
namespace {

// GCC 12's tile intrinsics under-declare their memory: _tile_loadconfig's
// operand covers 8 of the 64 bytes it reads, and tileloadd/tilestored name
// no memory at all. With a local configuration the compiler then drops the
// stores of the tile shapes (ldtilecfg faults on the stack garbage: SIGSEGV,
// or SIGILL at the first tile use), and it may move buffer writes across a
// tile load or reads across a tile store. So the configuration is loaded
// through an operand of its whole size, and every tile load and store is
// also a compiler barrier for memory.
inline void load_tile_config(const AmxTileConfig& config) {
  __asm__ volatile("ldtilecfg %0" ::"m"(config));
}
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

// GCC's tile intrinsics paste their tile numbers into the assembly text, so
// they take literals only: each template argument is mapped to its literal.
#define XFT_TILE_SWITCH(T, OP) \
  if constexpr (T == 0) OP(0);    \
  else if constexpr (T == 1) OP(1); \
  else if constexpr (T == 2) OP(2); \
  else if constexpr (T == 3) OP(3); \
  else if constexpr (T == 4) OP(4); \
  else if constexpr (T == 5) OP(5); \
  else if constexpr (T == 6) OP(6); \
  else OP(7)
// The (C, A, B) triples amx_gemm uses (amx_kernels.h).
#define XFT_DOT_SWITCH(C, A, B, INSTRUCTION)                                     \
  static_assert((C == 0 && A == 4 && B == 6) || (C == 1 && A == 4 && B == 7) ||   \
                (C == 2 && A == 5 && B == 6) || (C == 3 && A == 5 && B == 7));    \
  if constexpr (C == 0) INSTRUCTION(0, 4, 6);                                     \
  else if constexpr (C == 1) INSTRUCTION(1, 4, 7);                                \
  else if constexpr (C == 2) INSTRUCTION(2, 5, 6);                                \
  else INSTRUCTION(3, 5, 7)

struct HardwareTiles {
  static void configure(const AmxTileConfig& config) { load_tile_config(config); }
  static void release() { _tile_release(); }
  template <int T>
  static void zero() {
#define XFT_OP(t) _tile_zero(t)
    XFT_TILE_SWITCH(T, XFT_OP);
#undef XFT_OP
  }
  template <int T>
  static void load(const void* base, size_t stride) {
    memory_barrier();
#define XFT_OP(t) _tile_loadd(t, base, stride)
    XFT_TILE_SWITCH(T, XFT_OP);
#undef XFT_OP
  }
  template <int T>
  static void store(void* base, size_t stride) {
#define XFT_OP(t) _tile_stored(t, base, stride)
    XFT_TILE_SWITCH(T, XFT_OP);
#undef XFT_OP
    memory_barrier();
  }
  template <int C, int A, int B>
  static void dpbf16ps() {
    XFT_DOT_SWITCH(C, A, B, _tile_dpbf16ps);
  }
  template <int C, int A, int B>
  static void dpbssd() {
    XFT_DOT_SWITCH(C, A, B, _tile_dpbssd);
  }
};

// Tiles 0..3 as accumulators, 4..7 as operands, all 16 x 64 bytes, loaded
// from a zero buffer (the units' speed does not depend on the values).
void load_full_tiles() {
  AmxTileConfig config;
  for (int t = 0; t < kAmxTiles; ++t) amx_set_tile(config, t, kAmxMaxRows, kAmxRowBytes);
  load_tile_config(config);
  alignas(64) static const uint8_t zeros[kAmxTileBytes] = {};
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, zeros, kAmxRowBytes);
  _tile_loadd(5, zeros, kAmxRowBytes);
  _tile_loadd(6, zeros, kAmxRowBytes);
  _tile_loadd(7, zeros, kAmxRowBytes);
}

}  // namespace

void amx_gemm_hardware(AmxDot dot, const AmxGemmTask& task, const AmxPanels& panels) {
  if (dot == AmxDot::bf16) amx_gemm<HardwareTiles, AmxDot::bf16>(task, panels);
  else amx_gemm<HardwareTiles, AmxDot::int8>(task, panels);
}

double amx_bf16_peak_flops(long iterations) {
  load_full_tiles();
  for (long i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return 4.0 * 2.0 * 16 * 16 * 32 * iterations;  // 16 x 16 outputs x 32 products x (mul + add)
}

double amx_int8_peak_ops(long iterations) {
  load_full_tiles();
  for (long i = 0; i < iterations; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_release();
  return 4.0 * 2.0 * 16 * 16 * 64 * iterations;
}

}  // namespace xft::engine
