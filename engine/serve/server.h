// The OpenAI-compatible endpoints on top of the scheduler: GET / (chat page),
// /health, /v1/models, /metrics; POST /v1/completions and
// /v1/chat/completions, whole or streamed as server-sent events.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/serve/http_server.h"
#include "engine/serve/metrics.h"
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
};

// Chat messages as Qwen ChatML token ids. Message content is tokenized as
// plain text, so "<|im_end|>" typed by a user is text, not a control token;
// otherwise equal to tokenizer.encode(tokenizer.chat_prompt(messages, true)).
std::vector<int32_t> chat_prompt_ids(const Tokenizer& tokenizer,
                                     const std::vector<std::pair<std::string, std::string>>& messages);

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
  bool authorized(const HttpRequest& request) const;

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> stop_ids_;
  ServerOptions options_;
  Metrics metrics_;
};

}  // namespace xft::engine::serve
