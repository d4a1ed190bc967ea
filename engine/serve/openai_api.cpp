#include "engine/serve/openai_api.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/serve/structured_output.h"

namespace xft::engine::serve {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Model output may end in the middle of a UTF-8 sequence only through U+FFFD
// replacement upstream; still, never let dump() throw on bytes.
std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

// A value quoted in an error message, cut short: a tool list can be kilobytes.
std::string quoted(const json& value) {
  std::string text = dump(value);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

ApiError bad(std::string message, std::string param = "", std::string code = "") {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

// Fields OpenAI defines that this server accepts only at their neutral value:
// what clients (the openai SDKs, LangChain, LiteLLM) send by default, which
// changes nothing about a greedy or sampled answer here.
bool neutral_value(const std::string& name, const json& value) {
  if (value.is_null()) return true;
  if (name == "best_of") return value.is_number_integer() && value.get<int64_t>() == 1;
  if (name == "frequency_penalty" || name == "presence_penalty") return value.is_number() && value.get<double>() == 0.0;
  if (name == "echo") return value.is_boolean() && !value.get<bool>();
  if (name == "suffix") return value.is_string() && value.get<std::string>().empty();
  if (name == "functions") return value.is_array() && value.empty();
  if (name == "logit_bias") return value.is_object() && value.empty();
  return false;
}

bool neutral_field(const std::string& key, bool chat) {
  static const std::set<std::string> both = {"frequency_penalty", "presence_penalty", "logit_bias"};
  static const std::set<std::string> chat_only = {"functions"};
  static const std::set<std::string> completions_only = {"best_of", "echo", "suffix"};
  return both.count(key) || (chat ? chat_only : completions_only).count(key);
}

// field = value when it is a number in [low, high] (low excluded when low_open); null keeps the default.
Expected<void, ApiError> set_number(const json& value, const std::string& name, double low, double high,
                                    bool low_open, float& field) {
  if (value.is_null()) return {};
  if (!value.is_number()) return bad("'" + name + "' must be a number", name);
  double v = value.get<double>();
  if (!std::isfinite(v) || v > high || v < low || (low_open && v == low)) {
    return bad("'" + name + "' must be " + (low_open ? "> " : ">= ") + json(low).dump() + " and <= " +
                   json(high).dump() + ", got " + value.dump(),
               name);
  }
  field = static_cast<float>(v);
  return {};
}

Expected<void, ApiError> set_flag(const json& value, const std::string& name, bool& field) {
  if (!value.is_boolean()) return bad("'" + name + "' must be true or false", name);
  field = value.get<bool>();
  return {};
}

// OpenAI's chat image part (image_url), the Responses API's (input_image) and
// the bare form some clients send (image): named so a client learns why, not
// just that only text parts pass.
bool is_image_part(const ojson& part) {
  if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return false;
  const std::string type = part["type"].get<std::string>();
  return type == "image_url" || type == "input_image" || type == "image";
}

Expected<std::string, ApiError> message_content(const ojson& content, const std::string& param) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return bad("'" + param + "' must be a string or an array of text parts", param);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    if (is_image_part(part)) {
      const std::string at = param + "[" + std::to_string(i) + "]";
      return bad("'" + at + "': images are not supported: only the text model is loaded (a vision tower, if the "
                     "checkpoint has one, is skipped); send text parts only",
                 at, "images_not_supported");
    }
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return bad("'" + param + "': only parts of type 'text' are supported", param);
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls, as the template reads them: arguments
// given as a JSON string (what OpenAI sends) become the object they spell.
Expected<ojson, ApiError> template_tool_calls(const ojson& calls, const std::string& at) {
  const std::string param = at + ".tool_calls";
  if (!calls.is_array()) return bad("'" + param + "' must be an array", param);
  ojson out = ojson::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string call_at = param + "[" + std::to_string(i) + "]";
    const ojson& call = calls[i];
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
      return bad("'" + call_at + "' must be an object with a 'function'", call_at);
    const ojson& function = call["function"];
    if (!function.contains("name") || !function["name"].is_string())
      return bad("'" + call_at + ".function.name' must be a string", call_at + ".function.name");
    ojson arguments = function.contains("arguments") ? function["arguments"] : ojson::object();
    if (arguments.is_string()) {
      ojson parsed = ojson::parse(arguments.get<std::string>(), nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) arguments = std::move(parsed);
    }
    ojson normalized = ojson::object();
    if (call.contains("id")) normalized["id"] = call["id"];
    normalized["type"] = "function";
    normalized["function"] = {{"name", function["name"]}, {"arguments", std::move(arguments)}};
    out.push_back(std::move(normalized));
  }
  return out;
}

Expected<void, ApiError> parse_messages(const ojson& value, CompletionRequest& request) {
  if (!value.is_array() || value.empty()) return bad("'messages' must be a non-empty array", "messages");
  static const std::set<std::string> fields = {"role", "content", "name", "tool_calls", "tool_call_id",
                                               "reasoning_content", "refusal"};
  for (size_t i = 0; i < value.size(); ++i) {
    const ojson& m = value[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad("'" + at + "' must be an object with 'role' and 'content'", at);
    for (const auto& [key, _] : m.items()) {
      if (!fields.count(key)) return bad("unknown field '" + at + "." + key + "'", at + "." + key);
    }
    if (!m.contains("role") || !m["role"].is_string()) return bad("'" + at + ".role' must be a string", at + ".role");
    std::string role = m["role"].get<std::string>();
    // OpenAI's newer name for the system message (the openai SDK sends it for o1-style models).
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return bad("'" + at + ".role' must be system, developer, user, assistant or tool, got '" + role + "'", at + ".role");
    }
    const bool has_calls = role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (!m.contains("content") && !has_calls) return bad("'" + at + ".content' is missing", at + ".content");
    if (m.contains("content") && m["content"].is_null() && !has_calls)
      return bad("'" + at + ".content' may be null only beside 'tool_calls'", at + ".content");
    auto content = message_content(m.contains("content") ? m["content"] : ojson(), at + ".content");
    if (!content) return content.error();
    ojson normalized = {{"role", role}, {"content", *content}};
    for (const char* key : {"name", "tool_call_id", "reasoning_content"}) {
      if (!m.contains(key) || m[key].is_null()) continue;
      if (!m[key].is_string()) return bad("'" + at + "." + key + "' must be a string", at + "." + key);
      normalized[key] = m[key];
    }
    if (has_calls) {
      auto calls = template_tool_calls(m["tool_calls"], at);
      if (!calls) return calls.error();
      normalized["tool_calls"] = std::move(*calls);
    }
    request.messages.emplace_back(role, *content);
    request.template_messages.push_back(std::move(normalized));
  }
  return {};
}

Expected<void, ApiError> parse_tools(const ojson& value, CompletionRequest& request) {
  if (value.is_null()) return {};
  if (!value.is_array()) return bad("'tools' must be an array of {\"type\": \"function\", \"function\": {...}}", "tools");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ojson& tool = value[i];
    if (!tool.is_object() || !tool.contains("type") || tool["type"] != "function" || !tool.contains("function") ||
        !tool["function"].is_object())
      return bad("'" + at + "' must be {\"type\": \"function\", \"function\": {\"name\": ...}}", at);
    const ojson& function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string() || function["name"].get<std::string>().empty())
      return bad("'" + at + ".function.name' must be a non-empty string", at + ".function.name");
    if (function.contains("parameters") && !function["parameters"].is_object() && !function["parameters"].is_null())
      return bad("'" + at + ".function.parameters' must be a JSON schema object", at + ".function.parameters");
  }
  if (!value.empty()) request.tools = value;
  return {};
}

Expected<void, ApiError> parse_stop(const json& value, CompletionRequest& request) {
  if (value.is_null()) return {};
  if (value.is_string()) {
    if (!value.get<std::string>().empty()) request.stop.push_back(value.get<std::string>());
    return {};
  }
  if (!value.is_array() || value.size() > 4) return bad("'stop' must be a string or an array of up to 4 strings", "stop");
  for (const auto& s : value) {
    if (!s.is_string()) return bad("'stop' must be a string or an array of up to 4 strings", "stop");
    if (!s.get<std::string>().empty()) request.stop.push_back(s.get<std::string>());
  }
  return {};
}

Expected<void, ApiError> parse_prompt(const json& value, CompletionRequest& request) {
  if (value.is_string()) {
    request.prompt = value.get<std::string>();
    return {};
  }
  if (value.is_array() && value.size() == 1 && value[0].is_string()) {
    request.prompt = value[0].get<std::string>();
    return {};
  }
  return bad("'prompt' must be a string (one prompt per request)", "prompt");
}

bool integer_in(const json& value, int64_t low, int64_t high) {
  return value.is_number_integer() && value.get<int64_t>() >= low && value.get<int64_t>() <= high;
}

// Chat: `logprobs` true/false and `top_logprobs` (which needs `logprobs`: true).
Expected<void, ApiError> parse_chat_logprobs(const json& document, CompletionRequest& request) {
  bool wanted = false;
  if (document.contains("logprobs") && !document["logprobs"].is_null()) {
    if (auto set = set_flag(document["logprobs"], "logprobs", wanted); !set) return set;
  }
  if (!document.contains("top_logprobs") || document["top_logprobs"].is_null()) {
    request.logprobs = wanted ? 0 : -1;
    return {};
  }
  const json& top = document["top_logprobs"];
  if (!integer_in(top, 0, kMaxChatTopLogprobs)) {
    return bad("'top_logprobs' must be an integer from 0 to " + std::to_string(kMaxChatTopLogprobs) + ", got " +
                   quoted(top),
               "top_logprobs");
  }
  request.logprobs = wanted ? static_cast<int>(top.get<int64_t>()) : -1;
  // 0 without logprobs is what some clients send by default: it asks for nothing.
  if (!wanted && top.get<int64_t>() > 0) return bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  return {};
}

// Completions: `logprobs` is the number of alternatives (0 .. 5), null none.
Expected<void, ApiError> parse_completion_logprobs(const json& value, CompletionRequest& request) {
  if (value.is_null()) return {};
  if (!integer_in(value, 0, kMaxCompletionLogprobs)) {
    return bad("'logprobs' must be an integer from 0 to " + std::to_string(kMaxCompletionLogprobs) + ", got " +
                   quoted(value),
               "logprobs");
  }
  request.logprobs = static_cast<int>(value.get<int64_t>());
  return {};
}

Expected<void, ApiError> parse_field(const std::string& key, const json& value, CompletionRequest& request) {
  if (key == "model") {
    if (!value.is_string()) return bad("'model' must be a string", key);
    request.model = value.get<std::string>();
  } else if ((key == "messages" || key == "tools" || key == "chat_template_kwargs") && request.chat) {
    return {};  // read from the order-keeping parse (parse_chat_fields)
  } else if (key == "tool_choice" && request.chat) {
    return parse_tool_choice(value, request);
  } else if (key == "response_format" && request.chat) {
    return parse_response_format(value, request);
  } else if (key == "parallel_tool_calls" && request.chat) {
    if (value.is_null()) return {};
    return set_flag(value, key, request.parallel_tool_calls);
  } else if (key == "n") {
    if (value.is_null()) return {};
    if (!integer_in(value, 1, kMaxChoices))
      return bad("'n' must be an integer from 1 to " + std::to_string(kMaxChoices) + ", got " + quoted(value), key);
    request.n = static_cast<int>(value.get<int64_t>());
  } else if (key == "prompt" && !request.chat) {
    return parse_prompt(value, request);
  } else if ((key == "logprobs" || key == "top_logprobs") && request.chat) {
    return {};  // read together (parse_chat_logprobs): one depends on the other
  } else if (key == "logprobs") {
    return parse_completion_logprobs(value, request);
  } else if (key == "stream") {
    if (!value.is_null()) return set_flag(value, key, request.stream);
  } else if (key == "stream_options") {
    if (value.is_null()) return {};
    if (!value.is_object()) return bad("'stream_options' must be an object", key);
    for (const auto& [k, v] : value.items()) {
      if (k != "include_usage") return bad("unknown field 'stream_options." + k + "'", "stream_options." + k);
      if (auto set = set_flag(v, "stream_options.include_usage", request.include_usage); !set) return set;
    }
  } else if (key == "max_tokens" || (key == "max_completion_tokens" && request.chat)) {
    if (value.is_null()) return {};
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > (1 << 30)) {
      return bad("'" + key + "' must be a positive integer, got " + value.dump(), key);
    }
    request.max_tokens = static_cast<int>(value.get<int64_t>());
  } else if (key == "temperature") {
    return set_number(value, key, 0.0, 2.0, false, request.temperature);
  } else if (key == "top_p") {
    return set_number(value, key, 0.0, 1.0, true, request.top_p);
  } else if (key == "top_k") {
    if (value.is_null()) return {};
    if (!value.is_number_integer() || value.get<int64_t>() < -1 || value.get<int64_t>() > (1 << 30)) {
      return bad("'top_k' must be an integer >= 0 (0 or -1: no limit)", key);
    }
    request.top_k = std::max<int>(0, static_cast<int>(value.get<int64_t>()));
  } else if (key == "repetition_penalty") {
    return set_number(value, key, 0.0, 10.0, true, request.repetition_penalty);
  } else if (key == "stop") {
    return parse_stop(value, request);
  } else if (key == "seed") {
    if (value.is_null()) return {};
    if (!value.is_number_integer()) return bad("'seed' must be an integer", key);
    request.seed = value.is_number_unsigned() ? value.get<uint64_t>() : static_cast<uint64_t>(value.get<int64_t>());
  } else if (key == "ignore_eos") {
    return set_flag(value, key, request.ignore_eos);
  } else if (key == "skip_special_tokens") {
    return set_flag(value, key, request.skip_special_tokens);
  } else if (key == "user") {
    if (!value.is_string() && !value.is_null()) return bad("'user' must be a string", key);
  } else if (neutral_field(key, request.chat)) {
    if (!neutral_value(key, value)) {
      return bad("'" + key + "' is not supported by this server (only its default value), got " + quoted(value), key,
                 "unsupported_parameter");
    }
  } else {
    return bad("unknown field '" + key + "'", key, "unknown_field");
  }
  return {};
}

json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json nullable(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

json header(const ResponseIds& ids, const char* object) {
  return {{"id", ids.id}, {"object", object}, {"created", ids.created}, {"model", ids.model}};
}

// messages, tools and chat_template_kwargs reach the template: key order
// matters there (tojson prints objects in the order the client wrote them).
Expected<void, ApiError> parse_chat_fields(std::string_view body, CompletionRequest& request) {
  ojson document = ojson::parse(body.begin(), body.end(), nullptr, false);
  if (document.contains("messages")) {
    if (auto parsed = parse_messages(document["messages"], request); !parsed) return parsed;
  }
  if (document.contains("tools")) {
    if (auto parsed = parse_tools(document["tools"], request); !parsed) return parsed;
  }
  if (document.contains("chat_template_kwargs") && !document["chat_template_kwargs"].is_null()) {
    if (!document["chat_template_kwargs"].is_object())
      return bad("'chat_template_kwargs' must be an object, e.g. {\"enable_thinking\": false}", "chat_template_kwargs");
    request.chat_template_kwargs = document["chat_template_kwargs"];
  }
  return {};
}

}  // namespace

int json_nesting_depth(std::string_view text, int stop_above) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_above) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Expected<CompletionRequest, ApiError> parse_completion_request(std::string_view body, bool chat) {
  CompletionRequest request;
  request.chat = chat;
  // Parsing builds every level as a value: 8 MiB of '[' took 600 MB before failing.
  if (json_nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return bad("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
               "invalid_json");
  }
  json document = json::parse(body.begin(), body.end(), nullptr, false);
  if (document.is_discarded()) return bad("the request body is not valid JSON", "", "invalid_json");
  if (!document.is_object()) return bad("the request body must be a JSON object");
  for (const auto& [key, value] : document.items()) {
    auto parsed = parse_field(key, value, request);
    if (!parsed) return parsed.error();
  }
  if (chat) {
    if (auto parsed = parse_chat_fields(body, request); !parsed) return parsed.error();
    if (auto parsed = parse_chat_logprobs(document, request); !parsed) return parsed.error();
  }
  if (chat && request.messages.empty()) return bad("'messages' is required", "messages");
  if (!chat && !document.contains("prompt")) return bad("'prompt' is required", "prompt");
  if (request.include_usage && !request.stream) {
    return bad("'stream_options' is only allowed with 'stream': true", "stream_options");
  }
  return request;
}

namespace {

Expected<json, ApiError> parse_object(std::string_view body) {
  if (json_nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return bad("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
               "invalid_json");
  }
  json document = json::parse(body.begin(), body.end(), nullptr, false);
  if (document.is_discarded()) return bad("the request body is not valid JSON", "", "invalid_json");
  if (!document.is_object()) return bad("the request body must be a JSON object");
  return document;
}

}  // namespace

Expected<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body) {
  auto document = parse_object(body);
  if (!document) return document.error();
  TokenizeRequest request;
  static const std::set<std::string> chat_fields = {"messages", "tools", "chat_template_kwargs"};
  for (const auto& [key, value] : document->items()) {
    if (key == "model" || key == "add_special_tokens" || key == "add_special") continue;  // Qwen adds no BOS either way
    if (key == "prompt" || key == "content") {
      if (!value.is_string()) return bad("'" + key + "' must be a string", key);
      request.text = value.get<std::string>();
    } else if (key == "with_pieces" || key == "return_token_strs") {
      if (!value.is_boolean()) return bad("'" + key + "' must be true or false", key);
      request.with_pieces = value.get<bool>();
    } else if (key == "add_generation_prompt") {
      if (!value.is_boolean()) return bad("'add_generation_prompt' must be true or false", key);
      request.add_generation_prompt = value.get<bool>();
    } else if (!chat_fields.count(key)) {
      return bad("unknown field '" + key + "'", key, "unknown_field");
    }
  }
  request.chat = document->contains("messages");
  const bool has_text = document->contains("prompt") || document->contains("content");
  if (request.chat == has_text) return bad("give either 'prompt' (or 'content') or 'messages'", "prompt");
  if (request.chat) {
    // The chat fields alone, through the chat completion parser (key order kept).
    ojson ordered = ojson::parse(body.begin(), body.end(), nullptr, false);
    ojson chat = ojson::object();
    for (const std::string& key : chat_fields)
      if (ordered.contains(key)) chat[key] = ordered[key];
    auto parsed = parse_completion_request(chat.dump(), true);
    if (!parsed) return parsed.error();
    request.chat_request = std::move(*parsed);
  }
  return request;
}

Expected<std::vector<int32_t>, ApiError> parse_detokenize_request(std::string_view body, int32_t vocab_size) {
  auto document = parse_object(body);
  if (!document) return document.error();
  std::vector<int32_t> ids;
  for (const auto& [key, value] : document->items()) {
    if (key == "model") continue;
    if (key != "tokens") return bad("unknown field '" + key + "'", key, "unknown_field");
    if (!value.is_array()) return bad("'tokens' must be an array of token ids", key);
    for (const json& id : value) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size)
        return bad("'tokens' must hold token ids from 0 to " + std::to_string(vocab_size - 1) + ", got " + quoted(id), key);
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  if (!document->contains("tokens")) return bad("'tokens' is required", "tokens");
  return ids;
}

std::string tokenize_body(const std::vector<int32_t>& ids, int max_model_len, const std::vector<std::string>* pieces) {
  json body = {{"count", ids.size()}, {"max_model_len", max_model_len}, {"tokens", ids}};
  if (pieces) body["token_strs"] = *pieces;
  return dump(body);
}

std::string detokenize_body(const std::string& text) { return dump({{"prompt", text}, {"content", text}}); }

std::string error_body(const ApiError& error) {
  return dump({{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", nullable(error.param)},
                 {"code", nullable(error.code)}}}});
}

namespace {

// vLLM's floor for a probability that underflowed to 0 (JSON has no -Infinity).
float reportable(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0f; }

json token_bytes_json(const std::string& token) {
  json bytes = json::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

json chat_token_json(const TokenLogprobText& t) {
  return {{"token", t.token}, {"logprob", reportable(t.logprob)}, {"bytes", token_bytes_json(t.token)}};
}

}  // namespace

json chat_logprobs_json(const std::vector<LogprobEntry>& entries) {
  json content = json::array();
  for (const LogprobEntry& e : entries) {
    json item = chat_token_json(e.chosen);
    json top = json::array();
    for (const TokenLogprobText& t : e.top) top.push_back(chat_token_json(t));
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs_json(const std::vector<LogprobEntry>& entries, int offset) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       text_offset = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(e.chosen.token);
    token_logprobs.push_back(reportable(e.chosen.logprob));
    json top = json::object();
    for (const TokenLogprobText& t : e.top) top[t.token] = reportable(t.logprob);
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(offset);
    offset += static_cast<int>(e.chosen.token.size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

namespace {

json message_json(const AssistantMessage& message) {
  json reply = {{"role", "assistant"}};
  reply["content"] = message.content.empty() && !message.tool_calls.empty() ? json(nullptr) : json(message.content);
  if (!message.reasoning.empty()) reply["reasoning_content"] = message.reasoning;
  if (!message.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& call : message.tool_calls)
      calls.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    reply["tool_calls"] = std::move(calls);
  }
  return reply;
}

}  // namespace

std::string choices_body(const ResponseIds& ids, bool chat, const std::vector<ChoiceResult>& choices,
                         const Usage& usage) {
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i}, {"finish_reason", nullable(c.finish_reason)}, {"logprobs", c.logprobs}};
    if (chat) choice["message"] = message_json(c.message);
    else choice["text"] = c.text;
    list.push_back(std::move(choice));
  }
  json body = header(ids, chat ? "chat.completion" : "text_completion");
  body["choices"] = std::move(list);
  body["usage"] = usage_json(usage);
  return dump(body);
}

std::string completion_body(const ResponseIds& ids, bool chat, const std::string& text,
                            const std::string& finish_reason, const Usage& usage, const json& logprobs) {
  ChoiceResult choice{text, {}, finish_reason, logprobs};
  choice.message.content = text;
  return choices_body(ids, chat, {choice}, usage);
}

std::string chat_completion_body(const ResponseIds& ids, const AssistantMessage& message,
                                 const std::string& finish_reason, const Usage& usage, const json& logprobs) {
  return choices_body(ids, true, {ChoiceResult{"", message, finish_reason, logprobs}}, usage);
}

std::string chat_event_chunk_body(const ResponseIds& ids, const OutputEvent& event, const json& logprobs, int index) {
  json delta = json::object();
  switch (event.kind) {
    case OutputEvent::Kind::Content: delta["content"] = event.text; break;
    case OutputEvent::Kind::Reasoning: delta["reasoning_content"] = event.text; break;
    case OutputEvent::Kind::ToolCallStart:
      delta["tool_calls"] = json::array({{{"index", event.index},
                                          {"id", event.id},
                                          {"type", "function"},
                                          {"function", {{"name", event.name}, {"arguments", ""}}}}});
      break;
    case OutputEvent::Kind::ToolCallArguments:
      delta["tool_calls"] = json::array({{{"index", event.index}, {"function", {{"arguments", event.text}}}}});
      break;
  }
  json choice = {{"index", index}, {"finish_reason", nullptr}, {"logprobs", logprobs}, {"delta", delta}};
  json body = header(ids, "chat.completion.chunk");
  body["choices"] = json::array({choice});
  return dump(body);
}

std::string chunk_body(const ResponseIds& ids, bool chat, const std::string& text, const std::string& role,
                       const std::string& finish_reason, const json& logprobs, int index) {
  json choice = {{"index", index}, {"finish_reason", nullable(finish_reason)}, {"logprobs", logprobs}};
  if (chat) {
    json delta = json::object();
    if (!role.empty()) delta["role"] = role;
    if (!text.empty() || role.empty()) delta["content"] = text;
    if (!finish_reason.empty() && text.empty()) delta = json::object();
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  json body = header(ids, chat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = json::array({choice});
  return dump(body);
}

std::string usage_chunk_body(const ResponseIds& ids, bool chat, const Usage& usage) {
  json body = header(ids, chat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = json::array();
  body["usage"] = usage_json(usage);
  return dump(body);
}

std::string models_body(const ModelCard& card) {
  json response_format = json::array({"text"});
  json tool_choice = json::array({"auto", "none"});
  if (card.structured_output) {
    response_format.push_back("json_object");
    response_format.push_back("json_schema");
    tool_choice.push_back("required");
    tool_choice.push_back("function");
  }
  const json capabilities = {{"chat_template", card.chat_template},
                             {"tools", true},
                             {"tool_choice", tool_choice},
                             {"response_format", response_format},
                             {"reasoning_content", card.reasoning_content},
                             {"max_n", kMaxChoices},
                             {"max_top_logprobs", kMaxChatTopLogprobs}};
  return dump({{"object", "list"},
               {"data", json::array({{{"id", card.id},
                                      {"object", "model"},
                                      {"created", card.created},
                                      {"owned_by", "xftctl"},
                                      {"max_model_len", card.max_model_len},
                                      {"capabilities", capabilities}}})}});
}

}  // namespace xft::engine::serve
