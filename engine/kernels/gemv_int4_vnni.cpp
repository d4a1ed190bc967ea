// AVX512-VNNI int4 decode kernel on int8 activations, staged as for the AVX2
// kernel (stage_x_int4, Int4X::int8: t = round(x / sx) per group). The
// weights are packed interleaved (quant_int4.h): a 64-byte load holds four
// slots of 16 rows in its low nibbles and the next four in its high ones,
// so per 64 bytes two masks and two vpdpbusd against four broadcast x bytes
// leave each row's dot in its own lane. Nothing is reduced across lanes:
// a group's float work (one vector of 16 rows) costs less than its loads,
// and the kernel streams the half-size rows at the memory's speed instead of
// waiting on unpacking and horizontal sums.
// The integer dot of a group is exact in any order, and the float work per
// group and row is the AVX2 kernel's, so each output is bit for bit
// gemv_int4_avx2's: a row's result depends on the row and its input alone,
// whatever m. Groups of up to 128 slots (GPTQ/AWQ's 32, 64, 128 and the
// load-time quantizer's) are packed for this kernel; larger ones stay
// row-major and go to the AVX2 kernel.
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
