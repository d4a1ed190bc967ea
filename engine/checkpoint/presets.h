// Model shapes for --fake-model: the real Hugging Face config.json values of
// popular Qwen models, filled with the deterministic test-model weights, so a
// cluster can be sized and benchmarked at full scale without downloading.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/checkpoint/config.h"

namespace xft::engine {

// A preset name (qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, qwen2.5-72b,
// qwen3-0.6b, qwen3-30b-a3b, qwen3-235b-a22b, qwen2-57b-a14b,
// qwen1.5-moe-a2.7b, qwen3.5-0.8b, qwen3.5-27b, qwen3.5-35b-a3b, qwen3.5-122b-a10b,
// qwen3.5-397b-a17b, qwen-72b), a config.json file, or a directory holding one.
Expected<ModelConfig> fake_model_config(const std::string& name_or_config_json_path);

// The model cut to its first `layers` decoder layers (to fit a test
// machine); mlp_only_layers beyond them are dropped. layers must be in
// [1, config.layers].
Expected<ModelConfig> with_layers(ModelConfig config, int layers);

std::vector<std::string> fake_model_preset_names();

// The config.json text of a preset (what `model make-test` could write for it).
Expected<std::string> fake_model_preset_json(const std::string& name);

}  // namespace xft::engine
