// The deterministic test-model rule (see shared/README.md): element i of
// tensor NAME under seed S is a function of (S, NAME, i) only, so any rank
// can generate exactly the rows it owns of any model size.
#pragma once

#include <cstdint>
#include <string>

#include "engine/checkpoint/layout.h"

namespace xft::engine {

// fnv1a64 of "S:NAME".
uint64_t test_tensor_hash(uint64_t seed, const std::string& name);
// The float32 value before bfloat16 rounding; `fan_in` is used for linear weights.
float test_value_f32(uint64_t tensor_hash, uint64_t index, TensorRole role, int64_t fan_in);
// What the checkpoint stores.
uint16_t test_value_bf16(uint64_t tensor_hash, uint64_t index, TensorRole role, int64_t fan_in);

}  // namespace xft::engine
