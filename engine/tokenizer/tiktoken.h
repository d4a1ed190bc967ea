// Qwen1's vocabulary format, qwen.tiktoken: one line per ordinary token,
// "base64(token bytes) rank". Qwen2/2.5/3 ship the same ranks as a Hugging Face
// tokenizer.json, so a qwen.tiktoken can be derived from one.
#pragma once

#include <string>

#include "common/expected.h"

namespace xft::engine {

// Converts tokenizer.json text to qwen.tiktoken text: the ordinary (model)
// vocabulary only, ordered by rank, one "base64 rank\n" line per token. Added
// and special tokens are not part of the format (Qwen1 fixes them in code).
Expected<std::string> tiktoken_from_tokenizer_json(const std::string& json);

}  // namespace xft::engine
