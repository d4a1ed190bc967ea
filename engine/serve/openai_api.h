// OpenAI's wire format for /v1/completions and /v1/chat/completions: strict
// parsing of request bodies (unknown fields and out-of-range values are 400s
// that name the field, in OpenAI's error shape) and the response, chunk and
// error bodies. Pure functions of their inputs, so the format is unit-tested
// without a server.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "engine/serve/assistant_output.h"

namespace xft::engine::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field, empty: null
  std::string code;   // empty: null
};

struct CompletionRequest {
  bool chat = false;
  std::string model;
  std::vector<std::pair<std::string, std::string>> messages;  // chat: (role, content)
  // chat: the messages as the chat template reads them, key order kept:
  // developer as system, text parts joined, null content as "", tool-call
  // argument strings parsed into objects (templates print them with tojson).
  nlohmann::ordered_json template_messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: none (an empty list too)
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool tool_choice_none = false;  // "none": tools are not offered and no call is parsed
  bool parallel_tool_calls = true;  // false: the answer ends with its first call
  int n = 1;  // choices, each its own sample of the same prompt (<= kMaxChoices)
  // "required" or a named function: a call is forced by constrained decoding (structured_output.h).
  bool tool_choice_required = false;
  std::string tool_choice_function;  // the named function; empty: any of the tools
  // response_format: "text", "json_object" or "json_schema" (response_schema holds the schema).
  std::string response_format = "text";
  nlohmann::json response_schema;
  std::string prompt;                                          // completions
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<int> max_tokens;
  float temperature = 1.0f;  // OpenAI's default; 0 is greedy
  float top_p = 1.0f;
  int top_k = 0;                    // extension (vLLM): 0 no limit
  float repetition_penalty = 1.0f;  // extension (vLLM)
  std::vector<std::string> stop;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;  // extension (vLLM): generate max_tokens whatever comes (benchmarks)
  bool skip_special_tokens = true;  // extension (vLLM, same default): no <|…|> control tokens in the text
  // -1: no logprobs; k >= 0: each token's and the k most likely alternatives'
  // (chat: `logprobs: true` with `top_logprobs` <= kMaxChatTopLogprobs;
  // completions: `logprobs` <= kMaxCompletionLogprobs).
  int logprobs = -1;
};

inline constexpr int kMaxChoices = 8;
inline constexpr int kMaxChatTopLogprobs = 20;
inline constexpr int kMaxCompletionLogprobs = 5;

// One generated token's log-probability as the response reports it; token
// texts are the tokens' raw bytes (JSON output replaces invalid UTF-8).
struct TokenLogprobText {
  std::string token;
  float logprob = 0.0f;
};
struct LogprobEntry {
  TokenLogprobText chosen;
  std::vector<TokenLogprobText> top;
};
// Chat's shape: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
nlohmann::json chat_logprobs_json(const std::vector<LogprobEntry>& entries);
// Completions' shape: {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset};
// text_offset counts bytes of the completion text from `offset`.
nlohmann::json completion_logprobs_json(const std::vector<LogprobEntry>& entries, int offset);

// POST /tokenize as vLLM spells it ({"prompt": text} or {"messages": [...],
// "add_generation_prompt", "tools", "chat_template_kwargs"}) and as
// llama-server does ({"content": text, "with_pieces"}).
struct TokenizeRequest {
  bool chat = false;
  std::string text;
  CompletionRequest chat_request;  // chat: messages, tools, chat_template_kwargs
  bool add_generation_prompt = true;
  bool with_pieces = false;  // also each token's text
};
Expected<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body);
// POST /detokenize: {"tokens": [ids]}.
Expected<std::vector<int32_t>, ApiError> parse_detokenize_request(std::string_view body, int32_t vocab_size);
std::string tokenize_body(const std::vector<int32_t>& ids, int max_model_len, const std::vector<std::string>* pieces);
// Both spellings of the answer: vLLM's "prompt" and llama-server's "content".
std::string detokenize_body(const std::string& text);

// Bodies nested deeper are refused (400) before they are parsed.
inline constexpr int kMaxJsonDepth = 64;
Expected<CompletionRequest, ApiError> parse_completion_request(std::string_view body, bool chat);

// The deepest nesting of arrays and objects in JSON text (strings skipped);
// the scan stops as soon as it passes stop_above.
int json_nesting_depth(std::string_view text, int stop_above);

// What every response and chunk of one request repeats.
struct ResponseIds {
  std::string id;  // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

std::string error_body(const ApiError& error);
// One choice of a whole answer: completions' text, or chat's parsed message.
struct ChoiceResult {
  std::string text;
  AssistantMessage message;
  std::string finish_reason;
  nlohmann::json logprobs;  // null when not asked for
};
// A whole answer with its choices, indexed in order.
std::string choices_body(const ResponseIds& ids, bool chat, const std::vector<ChoiceResult>& choices,
                         const Usage& usage);
// logprobs: null when not asked for.
std::string completion_body(const ResponseIds& ids, bool chat, const std::string& text,
                            const std::string& finish_reason, const Usage& usage,
                            const nlohmann::json& logprobs = nullptr);
// One streamed chunk (the JSON after "data: "). chat: `role` goes in the
// first chunk's delta; finish_reason empty: null. A usage chunk has no choices.
// `index`: the choice the chunk belongs to (n > 1 interleaves them).
std::string chunk_body(const ResponseIds& ids, bool chat, const std::string& text, const std::string& role,
                       const std::string& finish_reason, const nlohmann::json& logprobs = nullptr, int index = 0);
// A chat answer parsed into content, reasoning_content and tool_calls
// (content null when only tools were called; empty fields left out).
std::string chat_completion_body(const ResponseIds& ids, const AssistantMessage& message,
                                 const std::string& finish_reason, const Usage& usage,
                                 const nlohmann::json& logprobs = nullptr);
// One parsed delta as a chat chunk: content, reasoning_content, or
// delta.tool_calls[i] (id, type and name first, then the arguments).
std::string chat_event_chunk_body(const ResponseIds& ids, const OutputEvent& event,
                                  const nlohmann::json& logprobs = nullptr, int index = 0);
std::string usage_chunk_body(const ResponseIds& ids, bool chat, const Usage& usage);
// What GET /v1/models says of the served model: OpenAI's fields, vLLM's
// max_model_len, and what this server accepts (so a client can tell a
// one-rank server, which holds answers to schemas, from a tensor-parallel one).
struct ModelCard {
  std::string id;
  int64_t created = 0;
  int max_model_len = 0;
  std::string chat_template;      // where it came from: "tokenizer_config.json", a path, "built-in ChatML"
  bool reasoning_content = false;  // <think> text is split off
  bool structured_output = false;  // response_format json_object/json_schema, tool_choice required/named
};
std::string models_body(const ModelCard& card);

}  // namespace xft::engine::serve
