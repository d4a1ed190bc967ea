// JSON schemas (OpenAI's response_format json_schema, a tool's parameters)
// compiled into a Grammar. Supported: type (one or a list), properties,
// required, additionalProperties (true or false), enum, const, items, anyOf
// (alternatives of different JSON types), minItems/maxItems,
// minLength/maxLength, $ref to $defs (or definitions), and the annotations
// title, description, default, examples, $schema, $id, $comment. Any other
// keyword is an error naming it and where it is.
//
// An object with properties yields only its declared properties, whatever
// additionalProperties says: a subset of what the schema accepts.
//
// Bounded, each overrun an error: nesting depth, enum size, literal length,
// properties per object, nodes after $ref expansion; recursion through $ref
// is refused.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "engine/constrain/grammar.h"

namespace xft::engine::constrain {

struct SchemaLimits {
  int max_depth = 16;             // schemas nested in schemas
  size_t max_enum = 256;          // values of one enum
  size_t max_literal_bytes = 1024;  // one enum or const value, serialized
  size_t max_properties = 64;     // per object
  size_t max_any_of = 16;
  size_t max_nodes = 4096;        // grammar nodes, $ref expanded
  uint32_t max_bound = 65536;     // minItems, maxItems, minLength, maxLength
  size_t max_tools = 128;
};

Expected<Grammar> compile_json_schema(const nlohmann::json& schema, const SchemaLimits& limits = {});
// response_format json_object: any JSON object.
Grammar json_object_grammar();

struct ToolSpec {
  std::string name;
  nlohmann::json parameters;  // null: any object
};
// Qwen's (Hermes) tool call: <tool_call>\n{"name": N, "arguments": A}\n</tool_call>
// with N one of the tools and A an object per that tool's parameters.
Expected<Grammar> compile_tool_call(const std::vector<ToolSpec>& tools, const SchemaLimits& limits = {});

}  // namespace xft::engine::constrain
