// The OpenAI-compatible endpoints on top of the scheduler: GET / (chat page),
// /health, /v1/models, /metrics; POST /v1/completions and
// /v1/chat/completions, whole or streamed as server-sent events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat_template/chat_format.h"
#include "engine/serve/http_server.h"
#include "engine/serve/metrics.h"
#include "engine/serve/openai_api.h"
#include "engine/serve/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::engine::serve {

// One answered request, for the access log. Never the body, the query or the key.
struct AccessRecord {
  std::string method;
  std::string path;
  int status = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int64_t ms = 0;  // from the handler's start (its body is in) to the end of the answer
};
// "POST /v1/chat/completions 200 prompt=17 completion=8 412ms"; a long or odd path is cut and escaped.
std::string access_line(const AccessRecord& record);

struct ServerOptions {
  std::string model_name;  // /v1/models, every answer's "model", and the one name a request may ask for
  std::string api_key;          // empty: no authentication
  int default_max_tokens = 256;  // for requests that give no max_tokens
  int64_t created = 0;           // the model's "created" timestamp
  std::function<void(const AccessRecord&)> access_log;  // empty: none
  std::shared_ptr<const chat_template::ChatFormat> chat_format;  // null: the built-in ChatML template
  bool split_reasoning = true;  // --reasoning-format none: <think> text stays in content
  // Tests only (the hidden --scripted-answer): every answer is this text's
  // tokens, in place of those the model draws (which still run, so batching,
  // streaming and usage are real; logprobs are the drawn tokens'). Empty: none.
  std::string scripted_answer;
};

struct ChatPrompt {
  std::vector<int32_t> ids;
  bool opens_thinking = false;  // the prompt ends inside <think>: the answer starts as reasoning
};
// A chat request rendered through the chat template and tokenized so that
// only the template's own text becomes control tokens: "<|im_end|>" or
// "<tool_call>" typed in a message, a tool description or a kwarg stays text.
// A template error (raise_exception, a limit) is a 400 naming messages.
Expected<ChatPrompt, ApiError> build_chat_prompt(const Tokenizer& tokenizer, const chat_template::ChatFormat& format,
                                                 const CompletionRequest& request, bool add_generation_prompt = true);

class Server {
 public:
  Server(Scheduler& scheduler, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids, ServerOptions options);
  // The HttpScreen: answers every request its head decides (pages, metrics,
  // 401, 404, 405) before any body is read; leaves authorized completions,
  // which need their body, to handle().
  void screen(const HttpRequest& head, HttpResponder& responder);
  void handle(const HttpRequest& request, HttpResponder& responder);
  // A request the HTTP layer answered itself (413, 403, a CORS preflight, ...).
  void log_answered(const HttpRequest& head, int status) const;

 private:
  // Both return the tokens the answer used (zero where none were).
  struct Tokens {
    int prompt = 0;
    int completion = 0;
  };
  Tokens route(const HttpRequest& request, HttpResponder& responder);
  Tokens completions(const HttpRequest& request, HttpResponder& responder, bool chat);
  void tokenize(const HttpRequest& request, HttpResponder& responder);
  void detokenize(const HttpRequest& request, HttpResponder& responder);
  bool authorized(const HttpRequest& request) const;
  // The grammar (response_format, a forced tool call) the answer is held to; null: free text.
  Expected<std::shared_ptr<const constrain::Constraint>, ApiError> request_constraint(const CompletionRequest& request,
                                                                                      int max_tokens) const;

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> stop_ids_;
  ServerOptions options_;
  std::shared_ptr<const chat_template::ChatFormat> chat_format_;
  Metrics metrics_;
};

}  // namespace xft::engine::serve
