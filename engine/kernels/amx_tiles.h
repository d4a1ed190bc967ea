// AMX tiles: the 64-byte tile configuration (palette 1), a plain C++ tile
// emulator with the instructions' semantics, and the two "tile units" the
// AMX kernels are written against (amx_kernels.h):
//   * EmulatedTiles: the emulator of the calling thread (every machine);
//   * HardwareTiles: the real instructions (amx_hardware.cpp, the only file
//     compiled with -mamx-tile -mamx-bf16 -mamx-int8).
// Both expose the same static members with the tile numbers as template
// arguments, because the real instructions take them as immediates; the
// kernels are templates over the unit, so packing, blocking and edge
// handling are the same code on both.
//
// Semantics emulated (Intel SDM, AMX chapter and the instructions' pages):
//  * LDTILECFG: palette 1 = 8 tiles of at most 16 rows x 64 bytes; a tile with
//    rows == 0 or colsb == 0 is unconfigured and any use of it faults (#UD).
//  * TILELOADD/TILESTORED: rows x colsb bytes at base + row * stride; bytes
//    past colsb in a row and rows past `rows` read as zero.
//  * TILEZERO: all 1024 bytes zero.
//  * TDPBF16PS C += A.B: per row m of C, two fp32 sums per output n (the
//    even and the odd element of each bf16 pair) accumulate over the pairs k
//    in order, each step a fused multiply-add rounded to nearest even with
//    DAZ and FTZ (products of two bf16 are exact in fp32, so the FMA is the
//    product's sum rounded once); then C[m][n] += even + odd (RNE, FTZ).
//    MXCSR is neither read nor written.
//  * TDPBSSD C += A.B: signed int8 quads, int32 accumulation wrapping
//    modulo 2^32 (the sum of one instruction's 4*K products is exact).
//  * Shape rules (#UD otherwise): C.rows == A.rows, C.colsb == B.colsb,
//    A.colsb == 4 * B.rows, all three configured.
// A violation throws AmxTileFault: the emulator's purpose is to catch kernel
// bugs (a wrong config, a read past a tile) that real hardware would fault on
// or silently accept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace xft::engine {

constexpr int kAmxTiles = 8;
constexpr int kAmxMaxRows = 16;
constexpr int kAmxRowBytes = 64;

// The LDTILECFG memory operand, byte for byte.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved0[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t (only 0..7 exist in palette 1)
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads 64 bytes");

// Sets tile t to rows x colsb bytes.
inline void amx_set_tile(AmxTileConfig& config, int t, int rows, int colsb) {
  config.rows[t] = static_cast<uint8_t>(rows);
  config.colsb[t] = static_cast<uint16_t>(colsb);
}

class AmxTileFault : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The tile registers of one thread, in plain C++.
class AmxEmulator {
 public:
  void configure(const AmxTileConfig& config);
  void release();  // TILERELEASE: tiles unconfigured and zero
  void zero(int t);
  void load(int t, const void* base, size_t stride);
  void store(int t, void* base, size_t stride) const;
  void dpbf16ps(int c, int a, int b);
  void dpbssd(int c, int a, int b);

  // The calling thread's emulator (tile state is per thread, as on hardware).
  static AmxEmulator& of_this_thread();

 private:
  struct Tile {
    int rows = 0;
    int colsb = 0;
    alignas(64) uint8_t bytes[kAmxMaxRows][kAmxRowBytes] = {};
  };
  const Tile& configured(int t, const char* instruction) const;
  void check_dot_shapes(int c, int a, int b, const char* instruction) const;

  bool configured_ = false;
  Tile tiles_[kAmxTiles];
};

struct EmulatedTiles {
  static constexpr const char* kName = "emulated";
  static void configure(const AmxTileConfig& config) { AmxEmulator::of_this_thread().configure(config); }
  static void release() { AmxEmulator::of_this_thread().release(); }
  template <int T>
  static void zero() { AmxEmulator::of_this_thread().zero(T); }
  template <int T>
  static void load(const void* base, size_t stride) { AmxEmulator::of_this_thread().load(T, base, stride); }
  template <int T>
  static void store(void* base, size_t stride) { AmxEmulator::of_this_thread().store(T, base, stride); }
  template <int C, int A, int B>
  static void dpbf16ps() { AmxEmulator::of_this_thread().dpbf16ps(C, A, B); }
  template <int C, int A, int B>
  static void dpbssd() { AmxEmulator::of_this_thread().dpbssd(C, A, B); }
};

}  // namespace xft::engine
