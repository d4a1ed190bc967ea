#include "engine/serve/structured_output.h"

#include "engine/constrain/json_schema.h"

namespace xft::engine::serve {

namespace {

using json = nlohmann::json;

ApiError bad(std::string message, std::string param, std::string code = "") {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

Expected<void, ApiError> parse_json_schema(const json& value, CompletionRequest& request) {
  if (!value.is_object()) return bad("'response_format.json_schema' must be an object with a 'schema'", "response_format");
  for (const auto& [key, field] : value.items()) {
    if (key == "name" || key == "description") {
      if (!field.is_string() && !field.is_null())
        return bad("'response_format.json_schema." + key + "' must be a string", "response_format");
    } else if (key == "strict") {
      if (!field.is_boolean() && !field.is_null())
        return bad("'response_format.json_schema.strict' must be true or false", "response_format");
    } else if (key != "schema") {
      return bad("unknown field 'response_format.json_schema." + key + "'", "response_format");
    }
  }
  // No schema: any JSON value, as OpenAI's SDKs send for a bare json_schema.
  request.response_schema = value.contains("schema") && !value["schema"].is_null() ? value["schema"] : json(true);
  return {};
}

}  // namespace

Expected<void, ApiError> parse_response_format(const json& value, CompletionRequest& request) {
  if (value.is_null()) return {};
  if (!value.is_object() || !value.contains("type") || !value["type"].is_string())
    return bad("'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}", "response_format");
  const std::string type = value["type"].get<std::string>();
  for (const auto& [key, field] : value.items()) {
    if (key != "type" && !(key == "json_schema" && type == "json_schema"))
      return bad("unknown field 'response_format." + key + "' for type \"" + type + "\"", "response_format");
  }
  if (type == "text" || type == "json_object") {
    request.response_format = type;
    return {};
  }
  if (type != "json_schema")
    return bad("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"" + type + "\"",
               "response_format");
  if (!value.contains("json_schema"))
    return bad("'response_format' of type json_schema needs 'json_schema': {\"name\", \"schema\"}", "response_format");
  request.response_format = type;
  return parse_json_schema(value["json_schema"], request);
}

Expected<void, ApiError> parse_tool_choice(const json& value, CompletionRequest& request) {
  if (value.is_null() || value == "auto") return {};
  if (value == "none") {
    request.tool_choice_none = true;
    return {};
  }
  if (value == "required") {
    request.tool_choice_required = true;
    return {};
  }
  if (value.is_object() && value.size() == 2 && value.contains("type") && value["type"] == "function" &&
      value.contains("function") && value["function"].is_object() && value["function"].contains("name") &&
      value["function"]["name"].is_string()) {
    request.tool_choice_required = true;
    request.tool_choice_function = value["function"]["name"].get<std::string>();
    return {};
  }
  return bad("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
             "{\"name\": ...}}",
             "tool_choice");
}

Expected<std::shared_ptr<const constrain::Grammar>, ApiError> request_grammar(const CompletionRequest& request) {
  if (request.tool_choice_required) {
    if (request.tools.is_null()) return bad("'tool_choice' asks for a call but the request has no 'tools'", "tool_choice");
    std::vector<constrain::ToolSpec> tools;
    for (const auto& tool : request.tools) {
      const auto& function = tool["function"];
      const std::string name = function["name"].get<std::string>();
      if (!request.tool_choice_function.empty() && name != request.tool_choice_function) continue;
      json parameters = function.contains("parameters") ? json::parse(function["parameters"].dump()) : json(nullptr);
      tools.push_back({name, std::move(parameters)});
    }
    if (tools.empty())
      return bad("'tool_choice' names function \"" + request.tool_choice_function + "\", which is not among 'tools'",
                 "tool_choice");
    auto grammar = constrain::compile_tool_call(tools);
    if (!grammar) return bad("'tools': " + grammar.error().message, "tools");
    return std::make_shared<const constrain::Grammar>(std::move(*grammar));
  }
  if (request.response_format == "json_object")
    return std::make_shared<const constrain::Grammar>(constrain::json_object_grammar());
  if (request.response_format == "json_schema") {
    auto grammar = constrain::compile_json_schema(request.response_schema);
    if (!grammar) return bad("'response_format.json_schema.schema': " + grammar.error().message, "response_format");
    return std::make_shared<const constrain::Grammar>(std::move(*grammar));
  }
  return std::shared_ptr<const constrain::Grammar>();
}

std::shared_ptr<const constrain::TokenTable> token_table(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> text(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    bytes[id] = std::string(tokenizer.token_bytes(id));
    text[id] = !tokenizer.is_special(id);
  }
  return std::make_shared<const constrain::TokenTable>(std::move(bytes), std::move(text));
}

}  // namespace xft::engine::serve
