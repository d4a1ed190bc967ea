// One projection of a 4-bit checkpoint read into the plain form the int4
// Linear packs (Int4Matrix: q, zero and scale per row and group, each
// input's group). A tensor-parallel rank reads only its rows and columns.
//
// GPTQ (quant_method gptq), W [out, in], G = group_size:
//   qweight int32 [in/8, out]     nibble i (bits 4i..4i+3) of word (r, c) is q of input 8r+i, output c
//   qzeros  int32 [groups, out/8] nibble i of word (g, c) is output 8c+i's zero of group g, stored
//                                 as zero - 1 (checkpoint_format gptq; GPTQ's kernels add 1 back,
//                                 so a stored 15 means 16) or as the zero itself (gptq_v2)
//   scales  f16   [groups, out]
//   g_idx   int32 [in]            group of each input row (r / G, or any order with desc_act)
// AWQ (quant_method awq, version gemm), group of input r = r / G:
//   qweight int32 [in, out/8]     nibble i of word (r, c) is q of input r, output 8c + [0,2,4,6,1,3,5,7][i]
//   qzeros  int32 [groups, out/8] packed the same way, the zero itself
//   scales  f16   [groups, out]
// weight = (q - zero) * scale.
// FP8 (quant_method fp8, fmt e4m3, weight_block_size [BR, BC]):
//   weight           F8_E4M3 [out, in]
//   weight_scale_inv F32     [ceil(out/BR), ceil(in/BC)]   weight = e4m3 * scale_inv of the block
#pragma once

#include <string>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/quant_int4.h"
#include "engine/model/partition.h"

namespace xft::engine {

// Outputs [out.begin, out.end) and inputs [in.begin, in.end) of the
// projection "<base>.weight" of `full_out` x `full_in`. Column (output)
// bounds must be multiples of 8, and so must GPTQ's input bounds (eight
// inputs share an int32); the caller checks the partition first.
Expected<Int4Matrix> read_int4_projection(const WeightSource& weights, const QuantConfig& quant,
                                          const std::string& base, Range out, Range in, int full_out,
                                          int full_in);

// Owning storage behind an Fp8Rows view: the stored bytes and the scales of
// the blocks a slice covers.
struct Fp8Matrix {
  int rows = 0;
  int in = 0;
  int block_rows = 0;
  int block_cols = 0;
  std::vector<uint8_t> q;     // [rows][in] e4m3 bits
  std::vector<float> scale;   // [ceil(rows / block_rows)][ceil(in / block_cols)]
  Fp8Rows view() const { return Fp8Rows{q.data(), scale.data(), block_rows, block_cols}; }
};

// The same slice of an FP8 projection. Slice bounds must fall on block
// bounds (or the matrix's end), so the slice's blocks are whole blocks of the
// checkpoint; the partition refuses rank counts that would cut one.
Expected<Fp8Matrix> read_fp8_projection(const WeightSource& weights, const QuantConfig& quant, const std::string& base,
                                        Range out, Range in, int full_out, int full_in);

}  // namespace xft::engine
