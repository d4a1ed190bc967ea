#include <cmath>
#include <cstring>

#include "engine/kernels/amx_tiles.h"

namespace xft::engine {
namespace {

// Denormal bf16 inputs count as zero (DAZ); the sign stays.
float bf16_daz(uint16_t bits) {
  if ((bits & 0x7f80u) == 0) bits &= 0x8000u;
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

// Denormal results become a zero of the same sign (FTZ).
float ftz(float value) { return std::fpclassify(value) == FP_SUBNORMAL ? std::copysign(0.0f, value) : value; }

float read_f32(const uint8_t* row, int n) {
  float value;
  std::memcpy(&value, row + 4 * n, 4);
  return value;
}

uint16_t read_u16(const uint8_t* row, int i) {
  uint16_t value;
  std::memcpy(&value, row + 2 * i, 2);
  return value;
}

}  // namespace

AmxEmulator& AmxEmulator::of_this_thread() {
  thread_local AmxEmulator emulator;
  return emulator;
}

void AmxEmulator::configure(const AmxTileConfig& config) {
  if (config.palette != 1) throw AmxTileFault("LDTILECFG: only palette 1 is emulated");
  if (config.start_row != 0) throw AmxTileFault("LDTILECFG: start_row must be 0");
  for (int t = 0; t < 16; ++t) {
    const bool exists = t < kAmxTiles;
    if (!exists && (config.rows[t] != 0 || config.colsb[t] != 0)) {
      throw AmxTileFault("LDTILECFG: palette 1 has 8 tiles; tile " + std::to_string(t) + " configured");
    }
    if (!exists) continue;
    if (config.rows[t] > kAmxMaxRows || config.colsb[t] > kAmxRowBytes || (config.colsb[t] % 4) != 0) {
      throw AmxTileFault("LDTILECFG: tile " + std::to_string(t) + " exceeds 16 rows x 64 bytes or colsb % 4 != 0");
    }
  }
  for (int t = 0; t < kAmxTiles; ++t) {
    tiles_[t] = Tile{};
    tiles_[t].rows = config.rows[t];
    tiles_[t].colsb = config.colsb[t];
  }
  configured_ = true;
}

void AmxEmulator::release() {
  for (Tile& tile : tiles_) tile = Tile{};
  configured_ = false;
}

const AmxEmulator::Tile& AmxEmulator::configured(int t, const char* instruction) const {
  if (!configured_) throw AmxTileFault(std::string(instruction) + ": no tile configuration loaded");
  if (t < 0 || t >= kAmxTiles) throw AmxTileFault(std::string(instruction) + ": no tile " + std::to_string(t));
  const Tile& tile = tiles_[t];
  if (tile.rows == 0 || tile.colsb == 0) {
    throw AmxTileFault(std::string(instruction) + ": tile " + std::to_string(t) + " is not configured");
  }
  return tile;
}

void AmxEmulator::zero(int t) {
  configured(t, "TILEZERO");
  std::memset(tiles_[t].bytes, 0, sizeof(tiles_[t].bytes));
}

void AmxEmulator::load(int t, const void* base, size_t stride) {
  configured(t, "TILELOADD");
  Tile& tile = tiles_[t];
  std::memset(tile.bytes, 0, sizeof(tile.bytes));
  const auto* src = static_cast<const uint8_t*>(base);
  for (int r = 0; r < tile.rows; ++r) std::memcpy(tile.bytes[r], src + r * stride, tile.colsb);
}

void AmxEmulator::store(int t, void* base, size_t stride) const {
  const Tile& tile = configured(t, "TILESTORED");
  auto* dst = static_cast<uint8_t*>(base);
  for (int r = 0; r < tile.rows; ++r) std::memcpy(dst + r * stride, tile.bytes[r], tile.colsb);
}

void AmxEmulator::check_dot_shapes(int c, int a, int b, const char* instruction) const {
  const Tile& tc = configured(c, instruction);
  const Tile& ta = configured(a, instruction);
  const Tile& tb = configured(b, instruction);
  if (c == a || c == b || a == b) throw AmxTileFault(std::string(instruction) + ": operands must be distinct tiles");
  if (tc.rows != ta.rows || tc.colsb != tb.colsb || ta.colsb != 4 * tb.rows) {
    throw AmxTileFault(std::string(instruction) + ": shapes do not chain (C " + std::to_string(tc.rows) + "x" +
                       std::to_string(tc.colsb) + ", A " + std::to_string(ta.rows) + "x" + std::to_string(ta.colsb) +
                       ", B " + std::to_string(tb.rows) + "x" + std::to_string(tb.colsb) + ")");
  }
}

void AmxEmulator::dpbf16ps(int c, int a, int b) {
  check_dot_shapes(c, a, b, "TDPBF16PS");
  Tile& tc = tiles_[c];
  const Tile& ta = tiles_[a];
  const Tile& tb = tiles_[b];
  const int pairs = ta.colsb / 4, outputs = tc.colsb / 4;
  // B widened once per instruction, not once per row of A.
  float b_wide[kAmxMaxRows][32];
  for (int k = 0; k < pairs; ++k) {
    for (int e = 0; e < 2 * outputs; ++e) b_wide[k][e] = bf16_daz(read_u16(tb.bytes[k], e));
  }
  for (int m = 0; m < tc.rows; ++m) {
    float even[16] = {}, odd[16] = {};
    for (int k = 0; k < pairs; ++k) {
      const float a0 = bf16_daz(read_u16(ta.bytes[m], 2 * k)), a1 = bf16_daz(read_u16(ta.bytes[m], 2 * k + 1));
      for (int n = 0; n < outputs; ++n) {
        even[n] = ftz(std::fmaf(a0, b_wide[k][2 * n], even[n]));
        odd[n] = ftz(std::fmaf(a1, b_wide[k][2 * n + 1], odd[n]));
      }
    }
    for (int n = 0; n < outputs; ++n) {
      const float sum = ftz(read_f32(tc.bytes[m], n) + ftz(even[n] + odd[n]));
      std::memcpy(tc.bytes[m] + 4 * n, &sum, 4);
    }
  }
}

void AmxEmulator::dpbssd(int c, int a, int b) {
  check_dot_shapes(c, a, b, "TDPBSSD");
  Tile& tc = tiles_[c];
  const Tile& ta = tiles_[a];
  const Tile& tb = tiles_[b];
  const int quads = ta.colsb / 4, outputs = tc.colsb / 4;
  for (int m = 0; m < tc.rows; ++m) {
    for (int n = 0; n < outputs; ++n) {
      int32_t acc_signed;
      std::memcpy(&acc_signed, tc.bytes[m] + 4 * n, 4);
      uint32_t acc = static_cast<uint32_t>(acc_signed);  // wraps like the hardware adder
      for (int k = 0; k < quads; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int32_t product = static_cast<int32_t>(static_cast<int8_t>(ta.bytes[m][4 * k + i])) *
                                  static_cast<int32_t>(static_cast<int8_t>(tb.bytes[k][4 * n + i]));
          acc += static_cast<uint32_t>(product);
        }
      }
      std::memcpy(tc.bytes[m] + 4 * n, &acc, 4);
    }
  }
}

}  // namespace xft::engine
