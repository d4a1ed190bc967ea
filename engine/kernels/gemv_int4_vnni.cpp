// AVX512-VNNI int4 decode kernel on int8 activations, staged as for the AVX2
// kernel (stage_x_int4, Int4X::int8: t = round(x / sx) per x block). One
// vpdpbusd multiplies 32 unsigned nibbles (the u8 operand) by 32 int8 x (the
// s8 operand) and adds each 4 into an int32 lane, where the AVX2 kernel needs
// vpmaddubsw, vpaddw and vpmaddwd: the unpacking (one vpand, one vpsrlw +
// vpand per 64 weights) is all that is left beside the products, so the
// kernel streams the half-size rows instead of waiting on the multiplier
// (the AVX512-BF16 kernel widens every nibble to bf16 first).
// The integer dot of a group is exact either way and lands in the same lanes
// (bytes 4i..4i+3 of each 32-byte vector into lane i), and the float work per
// group is the AVX2 kernel's, so each output is bit for bit gemv_int4_avx2's:
// a row's result depends on the row and its input alone, whatever m.
// Groups of up to 128 slots (GPTQ/AWQ's 32, 64, 128 and the load-time
// quantizer's) run here; larger ones go to the AVX2 kernel.
#include "engine/kernels/gemv_int4_vnni_block.h"

namespace xft::engine {

using int4_vnni_block::run_rows;

void gemv_int4_vnni(const PackedWeight& w, const void* x, int m, float* y, int rb, int re) {
  const Int4StagedX& xs = *static_cast<const Int4StagedX*>(x);
  switch (m) {
    case 1: run_rows<1>(w, xs, y, rb, re); break;
    case 2: run_rows<2>(w, xs, y, rb, re); break;
    case 3: run_rows<3>(w, xs, y, rb, re); break;
    default: run_rows<4>(w, xs, y, rb, re); break;
  }
}

}  // namespace xft::engine
