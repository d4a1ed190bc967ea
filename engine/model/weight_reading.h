// Reading one rank's slice of a projection, vector or norm from a weight
// source, in the form Linear packs: shared by the blocks' loaders.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/linear.h"
#include "engine/model/partition.h"
#include "engine/model/quantized_weights.h"

namespace xft::engine {

// A weight block as read from the checkpoint: kept in bf16 when stored so
// (exact and half the memory), else float32; 4-bit checkpoints' projections
// in the plain int4 form, FP8 checkpoints' as stored.
struct HostMatrix {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::vector<float> bias;
  Int4Matrix int4;
  Int4Rows int4_view;
  Fp8Matrix fp8;
  Fp8Rows fp8_view;
  int rows = 0;
  int cols = 0;

  LinearBlock block() const;
};

Slice slice_of(Range r);

Expected<HostMatrix> read_matrix(const WeightSource& weights, const std::string& name, Slice rows, Slice cols);

// A projection "<base>.weight" restricted to outputs `rows` and inputs
// `cols` of its full [full_rows, full_cols]: as stored, or from the 4-bit tensors.
Expected<HostMatrix> read_projection(const WeightSource& weights, const std::string& base, Range rows, Range cols,
                                     int full_rows, int full_cols);

// Fused int4 blocks share one input order; GPTQ stores a g_idx per projection.
Expected<void> same_input_groups(const std::vector<const HostMatrix*>& blocks, const std::string& what);

Expected<std::vector<float>> read_vector(const WeightSource& weights, const std::string& name, Slice range = {});

Expected<void> attach_bias(const WeightSource& weights, const std::string& name, Slice rows, HostMatrix& m);

// The whole vector `name` into `out` (norm weights).
Expected<void> read_norm(const WeightSource& weights, const std::string& name, std::vector<float>& out);

// y = x · Wᵀ through the batch-invariant kernels when rows must not depend on
// what shares the pass, else the fastest for m.
inline void project(const Linear& linear, const float* x, int m, float* y, ThreadPool& pool, bool rows_independent) {
  if (rows_independent) linear.forward_gemv(x, m, y, pool);
  else linear.forward(x, m, y, pool);
}

}  // namespace xft::engine
