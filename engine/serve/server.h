// The OpenAI-compatible endpoints on top of the scheduler: GET / (chat page),
// /health, /v1/models, /metrics; POST /v1/completions and
// /v1/chat/completions, whole or streamed as server-sent events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/serve/http_server.h"
#include "engine/serve/metrics.h"
#include "engine/serve/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace xft::engine::serve {

struct ServerOptions {
  std::string model_name;
  std::string api_key;          // empty: no authentication
  int default_max_tokens = 256;  // for requests that give no max_tokens
  int64_t created = 0;           // the model's "created" timestamp
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

 private:
  void route(const HttpRequest& request, HttpResponder& responder);
  void completions(const HttpRequest& request, HttpResponder& responder, bool chat);
  bool authorized(const HttpRequest& request) const;

  Scheduler& scheduler_;
  const Tokenizer& tokenizer_;
  std::vector<int32_t> stop_ids_;
  ServerOptions options_;
  Metrics metrics_;
};

}  // namespace xft::engine::serve
