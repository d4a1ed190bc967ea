// The tensors a Qwen checkpoint must contain, in the order Hugging Face
// writes them, derived from the config alone. The checkpoint reader checks
// files against this list and the test-model generator writes it.
#pragma once

#include <string>
#include <vector>

#include "engine/checkpoint/config.h"
#include "engine/checkpoint/weights.h"

namespace xft::engine {

// How the deterministic test-model rule scales a tensor's values.
// quantized: a 4-bit checkpoint's qweight/qzeros/scales/g_idx (written by
// the quantizing test-model writer, never generated).
// zero_centred_norm: Qwen3.5's norms applied as x * (1 + w); decay_log:
// Gated DeltaNet's A_log (see shared/README.md for each role's values).
enum class TensorRole { embedding, linear, bias, norm, quantized, zero_centred_norm, decay_log };

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::linear;
  DType dtype = DType::bf16;  // as stored: I32 / F16 for 4-bit tensors, F32 for Qwen3.5's A_log and gated norm
};

// The tensors of one projection "<base>.weight" [out, in] in the config's
// quantization layout (itself when unquantized).
std::vector<ExpectedTensor> projection_tensors(const ModelConfig& config, const std::string& base,
                                               int64_t out, int64_t in);

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// Parameters of the whole model (every rank's together), as Hugging Face
// counts them: every weight, bias and norm, the embedding once when tied.
// active: those one token uses, the top_k of a mixture's experts.
struct ParameterCount {
  uint64_t total = 0;
  uint64_t active = 0;
};
ParameterCount count_parameters(const ModelConfig& config);

// "[151936,64]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace xft::engine
