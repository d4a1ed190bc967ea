#include "engine/serve/server.h"

#include <atomic>
#include <chrono>
#include <random>
#include <set>

#include "engine/serve/api_key.h"
#include "engine/serve/chat_page.h"
#include "engine/serve/openai_api.h"
#include "engine/serve/stop_text.h"

namespace xft::engine::serve {

namespace {

constexpr const char* kJson = "application/json";

void send_error(HttpResponder& responder, const ApiError& error) {
  responder.send(error.status, kJson, error_body(error));
}

std::string request_id(bool chat) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t boot = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  char text[48];
  std::snprintf(text, sizeof text, "%s-%012llx%06llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(boot & 0xffffffffffffULL),
                static_cast<unsigned long long>(++counter));
  return text;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// OpenAI knows "stop" and "length"; a sequence that reached the context is "length".
std::string openai_finish(const std::string& reason) {
  if (reason == "stop") return "stop";
  return "length";
}

std::string sse(const std::string& data) { return "data: " + data + "\n\n"; }

}  // namespace

std::vector<int32_t> chat_prompt_ids(const Tokenizer& tokenizer,
                                     const std::vector<std::pair<std::string, std::string>>& messages) {
  std::vector<int32_t> ids;
  auto append = [&ids](const std::vector<int32_t>& more) { ids.insert(ids.end(), more.begin(), more.end()); };
  if (messages.empty() || messages.front().first != "system") append(tokenizer.encode(tokenizer.chat_prompt({}, false)));
  for (const auto& [role, content] : messages) {
    ids.push_back(tokenizer.im_start());
    append(tokenizer.encode_ordinary(role + "\n" + content));
    ids.push_back(tokenizer.im_end());
    append(tokenizer.encode_ordinary("\n"));
  }
  ids.push_back(tokenizer.im_start());
  append(tokenizer.encode_ordinary("assistant\n"));
  return ids;
}

Server::Server(Scheduler& scheduler, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids, ServerOptions options)
    : scheduler_(scheduler), tokenizer_(tokenizer), stop_ids_(std::move(stop_ids)), options_(std::move(options)) {}

bool Server::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  return keys_equal(bearer_token(request.header("authorization")), options_.api_key);
}

void Server::screen(const HttpRequest& head, HttpResponder& responder) {
  const bool completion = head.path == "/v1/completions" || head.path == "/v1/chat/completions";
  if (completion && head.method == "POST" && authorized(head)) return;
  handle(head, responder);
}

void Server::handle(const HttpRequest& request, HttpResponder& responder) {
  route(request, responder);
  // Any other path counts as "other", so scanners cannot grow the label set.
  static const std::set<std::string> known = {"/", "/index.html", "/health", "/metrics", "/v1/models",
                                              "/v1/completions", "/v1/chat/completions"};
  metrics_.count_request(known.count(request.path) ? request.path : "other", responder.status());
}

void Server::route(const HttpRequest& request, HttpResponder& responder) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  auto wrong_method = [&](const char* allowed) {
    send_error(responder, ApiError{405, "use " + std::string(allowed) + " for " + path, "invalid_request_error", "", ""});
  };
  if (path == "/" || path == "/index.html") {
    if (!get) return wrong_method("GET");
    return (void)responder.send(200, "text/html; charset=utf-8", chat_page_html());
  }
  if (path == "/health") {
    if (!get) return wrong_method("GET");
    return (void)responder.send(200, kJson, R"({"status":"ok"})");
  }
  if (path == "/metrics") {
    if (!get) return wrong_method("GET");
    return (void)responder.send(200, "text/plain; version=0.0.4", metrics_.render(scheduler_.take_counters()));
  }
  const bool api = path.rfind("/v1/", 0) == 0;
  if (api && !authorized(request)) {
    return (void)responder.send(401, kJson,
                                error_body(ApiError{401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                                                    "invalid_request_error", "", "invalid_api_key"}),
                                {{"WWW-Authenticate", "Bearer"}});
  }
  if (path == "/v1/models") {
    if (!get) return wrong_method("GET");
    return (void)responder.send(200, kJson, models_body(options_.model_name, options_.created));
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return wrong_method("POST");
    return completions(request, responder, path == "/v1/chat/completions");
  }
  send_error(responder, ApiError{404, "no such endpoint: " + request.method + " " + path, "invalid_request_error",
                                 "", "not_found"});
}

void Server::completions(const HttpRequest& http, HttpResponder& responder, bool chat) {
  auto parsed = parse_completion_request(http.body, chat);
  if (!parsed) return send_error(responder, parsed.error());
  const CompletionRequest& req = *parsed;

  GenerationRequest gen;
  gen.prompt = chat ? chat_prompt_ids(tokenizer_, req.messages) : tokenizer_.encode_ordinary(req.prompt);
  const int prompt = static_cast<int>(gen.prompt.size());
  const int room = std::max(0, scheduler_.max_context() - prompt);
  if (req.max_tokens && prompt < scheduler_.max_context() && *req.max_tokens > room) {
    return send_error(responder,
                      ApiError{400,
                               "max_tokens " + std::to_string(*req.max_tokens) + " + the prompt's " +
                                   std::to_string(prompt) + " tokens exceed this server's context of " +
                                   std::to_string(scheduler_.max_context()) + " (lower max_tokens, or start the server with a larger --max-context)",
                               "invalid_request_error", "max_tokens", "context_length_exceeded"});
  }
  gen.max_tokens = req.max_tokens.value_or(std::min(options_.default_max_tokens, std::max(room, 1)));
  gen.sampling.temperature = req.temperature;
  gen.sampling.greedy = req.temperature <= 0.0f;
  gen.sampling.top_p = req.top_p;
  gen.sampling.top_k = req.top_k;
  gen.sampling.repetition_penalty = req.repetition_penalty;
  gen.sampling.seed = req.seed.value_or(std::random_device{}());
  if (!req.ignore_eos) gen.stop_ids = stop_ids_;

  auto submitted = scheduler_.submit(std::move(gen));
  if (!submitted) {
    const SubmitError& e = submitted.error();
    return send_error(responder, ApiError{e.status, e.message,
                                          e.status == 429 ? "rate_limit_error" : "invalid_request_error",
                                          e.status == 400 ? (chat ? "messages" : "prompt") : "", e.code});
  }
  std::shared_ptr<RequestStream> stream = *submitted;

  const ResponseIds ids{request_id(chat), unix_now(), options_.model_name};
  StreamDecoder decoder(tokenizer_);
  StopText stop_text(req.stop);
  std::string text;
  int completion_tokens = 0;
  auto on_text = [&](const std::string& piece) -> bool {  // false: the client is gone
    if (piece.empty()) return true;
    if (!req.stream) {
      text += piece;
      return true;
    }
    return responder.write(sse(chunk_body(ids, chat, piece, "", "")));
  };

  if (req.stream) {
    responder.start_stream(200, "text/event-stream");
    if (chat) responder.write(sse(chunk_body(ids, chat, "", "assistant", "")));
  }
  std::vector<int32_t> tokens;
  bool more = true;
  bool client_left = false;
  while (more) {
    tokens.clear();
    more = stream->next(tokens, std::chrono::milliseconds(250));
    completion_tokens += static_cast<int>(tokens.size());
    for (int32_t id : tokens) {
      if (stop_text.stopped()) break;
      if (req.skip_special_tokens && tokenizer_.is_special(id)) continue;  // counted, not shown
      if (!on_text(stop_text.push(decoder.push(id)))) client_left = true;
    }
    if (stop_text.stopped()) stream->cancel();  // the rest would be cut anyway
    // Also while no token comes (queued, or the server stopping): a stream learns it only here.
    if (responder.client_gone()) client_left = true;
    if (client_left) {
      stream->cancel();
      return;  // nobody to answer; the connection closes
    }
  }
  if (!stop_text.stopped()) {
    if (!on_text(stop_text.push(decoder.flush()))) return;
    if (!on_text(stop_text.flush())) return;
  }
  const std::string reason = stream->finish_reason();
  if (reason == "error" || (reason == "cancelled" && !stop_text.stopped())) {
    ApiError error{reason == "error" ? 500 : 503, stream->error().empty() ? "generation was cancelled" : stream->error(),
                   "server_error", "", ""};
    if (!req.stream) return send_error(responder, error);
    responder.write(sse(error_body(error)));
    responder.write("data: [DONE]\n\n");
    responder.end_stream();
    return;
  }
  const std::string finish = stop_text.stopped() ? "stop" : openai_finish(reason);
  const Usage usage{stream->prompt_tokens(), completion_tokens};
  if (!req.stream) return (void)responder.send(200, kJson, completion_body(ids, chat, text, finish, usage));
  responder.write(sse(chunk_body(ids, chat, "", "", finish)));
  if (req.include_usage) responder.write(sse(usage_chunk_body(ids, chat, usage)));
  responder.write("data: [DONE]\n\n");
  responder.end_stream();
}

}  // namespace xft::engine::serve
