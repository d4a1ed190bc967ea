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
enum class TensorRole { embedding, linear, bias, norm };

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::linear;
};

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// "[151936,64]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace xft::engine
