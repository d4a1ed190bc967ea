// Structured output on the wire: response_format (json_object, json_schema)
// and a forced tool_choice ("required", a named function) parsed from a
// request, and turned into the grammar its answer is held to by constrained
// decoding (engine/constrain/).
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "engine/constrain/token_mask.h"
#include "engine/serve/openai_api.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::engine::serve {

// {"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
Expected<void, ApiError> parse_response_format(const nlohmann::json& value, CompletionRequest& request);
// "none" | "auto" | "required" | {"type": "function", "function": {"name": N}}
Expected<void, ApiError> parse_tool_choice(const nlohmann::json& value, CompletionRequest& request);

// The grammar a request's answer must follow; null when it is free text. A
// schema the compiler refuses (an unsupported keyword, a limit) is a 400
// naming the field.
Expected<std::shared_ptr<const constrain::Grammar>, ApiError> request_grammar(const CompletionRequest& request);

// The tokenizer's vocabulary as the matcher walks it: control tokens are never text.
std::shared_ptr<const constrain::TokenTable> token_table(const Tokenizer& tokenizer);

}  // namespace xft::engine::serve
