#include "engine/serve/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <set>

#include "engine/serve/api_key.h"
#include "engine/serve/chat_page.h"
#include "engine/serve/openai_api.h"
#include "engine/serve/prefix_cache.h"
#include "engine/serve/stop_text.h"
#include "engine/serve/structured_output.h"

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

void send_wrong_method(HttpResponder& responder, const std::string& path, const char* allowed) {
  responder.send(405, kJson,
                 error_body(ApiError{405, "use " + std::string(allowed) + " for " + path, "invalid_request_error",
                                     "", "method_not_allowed"}),
                 {{"Allow", allowed}});
}

}  // namespace

std::string access_line(const AccessRecord& record) {
  // The path was checked for control bytes by the HTTP layer; cut it so a scanner cannot flood the log.
  constexpr size_t kMaxPath = 200;
  std::string path = record.path.size() > kMaxPath ? record.path.substr(0, kMaxPath) + "..." : record.path;
  for (char& c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return record.method + " " + path + " " + std::to_string(record.status) + " prompt=" +
         std::to_string(record.prompt_tokens) + " completion=" + std::to_string(record.completion_tokens) + " " +
         std::to_string(record.ms) + "ms";
}

Expected<ChatPrompt, ApiError> build_chat_prompt(const Tokenizer& tokenizer, const chat_template::ChatFormat& format,
                                                 const CompletionRequest& request, bool add_generation_prompt) {
  static const nlohmann::ordered_json no_tools;
  auto rendered = format.render(request.template_messages, request.tool_choice_none ? no_tools : request.tools,
                                request.chat_template_kwargs, add_generation_prompt);
  if (!rendered) return ApiError{400, rendered.error().message, "invalid_request_error", "messages", ""};
  std::vector<std::pair<size_t, size_t>> plain;
  for (const chat_template::Span& span : rendered->untrusted) plain.emplace_back(span.begin, span.end);
  ChatPrompt prompt;
  prompt.ids = tokenizer.encode_with_plain_ranges(rendered->bytes, plain);
  std::string_view text = rendered->bytes;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  prompt.opens_thinking = text.size() >= 7 && text.substr(text.size() - 7) == "<think>";
  return prompt;
}

Server::Server(Scheduler& scheduler, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids, ServerOptions options)
    : scheduler_(scheduler), tokenizer_(tokenizer), stop_ids_(std::move(stop_ids)), options_(std::move(options)),
      chat_format_(options_.chat_format ? options_.chat_format
                                        : std::make_shared<const chat_template::ChatFormat>(chat_template::ChatFormat::chatml())) {
  if (scheduler_.can_constrain()) scheduler_.set_token_table(token_table(tokenizer_));
}

Expected<std::shared_ptr<const constrain::Constraint>, ApiError> Server::request_constraint(
    const CompletionRequest& request, int max_tokens) const {
  auto grammar = request_grammar(request);
  if (!grammar) return grammar.error();
  if (!*grammar) return std::shared_ptr<const constrain::Constraint>();
  if (!scheduler_.can_constrain())
    return ApiError{400,
                    "structured output (response_format json_object/json_schema, tool_choice required or a named "
                    "function) runs on one-rank servers only, not yet across ranks",
                    "invalid_request_error", request.tool_choice_required ? "tool_choice" : "response_format",
                    "unsupported_parameter"};
  auto constraint = std::make_shared<constrain::Constraint>();
  constraint->grammar = std::move(*grammar);
  constraint->stop_ids = stop_ids_;
  constraint->max_tokens = max_tokens;
  return std::shared_ptr<const constrain::Constraint>(std::move(constraint));
}

bool Server::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  return keys_equal(bearer_token(request.header("authorization")), options_.api_key);
}

void Server::screen(const HttpRequest& head, HttpResponder& responder) {
  const bool completion = head.path == "/v1/completions" || head.path == "/v1/chat/completions" ||
                          head.path == "/tokenize" || head.path == "/detokenize";
  if (completion && head.method == "POST" && authorized(head)) return;
  handle(head, responder);
}

void Server::log_answered(const HttpRequest& head, int status) const {
  if (options_.access_log) options_.access_log(AccessRecord{head.method, head.path, status, 0, 0, 0});
}

void Server::handle(const HttpRequest& request, HttpResponder& responder) {
  const auto start = std::chrono::steady_clock::now();
  const Tokens tokens = route(request, responder);
  if (options_.access_log) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    options_.access_log(AccessRecord{request.method, request.path, responder.status(), tokens.prompt,
                                     tokens.completion, ms.count()});
  }
  // Any other path counts as "other", so scanners cannot grow the label set.
  static const std::set<std::string> known = {"/", "/index.html", "/health", "/metrics", "/v1/models",
                                              "/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"};
  metrics_.count_request(known.count(request.path) ? request.path : "other", responder.status());
}

Server::Tokens Server::route(const HttpRequest& request, HttpResponder& responder) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  // HEAD is answered wherever GET is; the library leaves its body out.
  auto wrong_method = [&](const char* allowed) {
    send_wrong_method(responder, path, allowed);
    return Tokens{};
  };
  auto sent = [](bool) { return Tokens{}; };
  if (path == "/" || path == "/index.html") {
    if (!get) return wrong_method("GET, HEAD");
    return sent(responder.send(200, "text/html; charset=utf-8", chat_page_html()));
  }
  if (path == "/health") {
    if (!get) return wrong_method("GET, HEAD");
    return sent(responder.send(200, kJson, R"({"status":"ok"})"));
  }
  if (path == "/metrics") {
    if (!get) return wrong_method("GET, HEAD");
    return sent(responder.send(200, "text/plain; version=0.0.4", metrics_.render(scheduler_.take_counters())));
  }
  const bool api = path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize";
  if (api && !authorized(request)) {
    return sent(responder.send(401, kJson,
                               error_body(ApiError{401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                                                   "invalid_request_error", "", "invalid_api_key"}),
                               {{"WWW-Authenticate", "Bearer"}}));
  }
  if (path == "/v1/models") {
    if (!get) return wrong_method("GET, HEAD");
    const ModelCard card{options_.model_name,       options_.created,
                         scheduler_.max_context(),  chat_format_->origin(),
                         options_.split_reasoning && chat_format_->thinks(), scheduler_.can_constrain()};
    return sent(responder.send(200, kJson, models_body(card)));
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return wrong_method("POST");
    return completions(request, responder, path == "/v1/chat/completions");
  }
  if (path == "/tokenize" || path == "/detokenize") {
    if (!post) return wrong_method("POST");
    path == "/tokenize" ? tokenize(request, responder) : detokenize(request, responder);
    return {};
  }
  send_error(responder, ApiError{404, "no such endpoint: " + request.method + " " + path, "invalid_request_error",
                                 "", "not_found"});
  return {};
}

// The ids a completion would be given for the same text or messages.
void Server::tokenize(const HttpRequest& http, HttpResponder& responder) {
  auto parsed = parse_tokenize_request(http.body);
  if (!parsed) return send_error(responder, parsed.error());
  std::vector<int32_t> ids;
  if (parsed->chat) {
    auto built = build_chat_prompt(tokenizer_, *chat_format_, parsed->chat_request, parsed->add_generation_prompt);
    if (!built) return send_error(responder, built.error());
    ids = std::move(built->ids);
  } else {
    ids = tokenizer_.encode_ordinary(parsed->text);
  }
  std::vector<std::string> pieces;
  if (parsed->with_pieces)
    for (int32_t id : ids) pieces.push_back(tokenizer_.decode(std::span<const int32_t>(&id, 1)));
  responder.send(200, kJson, tokenize_body(ids, scheduler_.max_context(), parsed->with_pieces ? &pieces : nullptr));
}

void Server::detokenize(const HttpRequest& http, HttpResponder& responder) {
  auto ids = parse_detokenize_request(http.body, tokenizer_.vocab_size());
  if (!ids) return send_error(responder, ids.error());
  responder.send(200, kJson, detokenize_body(tokenizer_.decode(*ids)));
}

namespace {

// Choices of one request sample with seeds this far apart, so n > 1 with a
// seed gives distinct, reproducible answers.
constexpr uint64_t kChoiceSeedStride = 0x9e3779b97f4a7c15ULL;

// One choice of an answer: its token stream and what turns the tokens into
// text, the parsed message and logprobs.
struct Choice {
  Choice(const Tokenizer& tokenizer, const CompletionRequest& request, const AssistantOutputOptions& parsing)
      : decoder(tokenizer), stop_text(request.stop), answer(parsing) {}
  bool stopped() const { return stop_text.stopped() || answer.ended(); }

  std::shared_ptr<RequestStream> stream;  // null: not submitted yet
  bool more = true;                       // the scheduler may still send tokens
  StreamDecoder decoder;
  StopText stop_text;
  AssistantOutputParser answer;
  std::string text;  // completions' whole answer
  // Logprobs of the tokens taken so far: all of them for a whole answer; for
  // a stream, those not yet sent, which ride on the next chunk written.
  std::vector<LogprobEntry> logprobs;
  int logprobs_offset = 0;  // completions' text_offset of the next entry
  // The tokens up to and including the one that completed a stop string: whatever
  // the scheduler drew after it, before the cancel reached it, depends on timing.
  int completion_tokens = 0;
};

}  // namespace

Server::Tokens Server::completions(const HttpRequest& http, HttpResponder& responder, bool chat) {
  auto parsed = parse_completion_request(http.body, chat);
  if (!parsed) {
    send_error(responder, parsed.error());
    return {};
  }
  const CompletionRequest& req = *parsed;
  // An absent model means the one served (clients of a single-model server often leave it out).
  if (!req.model.empty() && req.model != options_.model_name) {
    send_error(responder, ApiError{404,
                                   "The model '" + req.model + "' does not exist: this server serves '" +
                                       options_.model_name + "' (GET /v1/models; rename it with --served-model-name)",
                                   "invalid_request_error", "model", "model_not_found"});
    return {};
  }

  GenerationRequest gen;
  bool opens_thinking = false;
  if (chat) {
    auto built = build_chat_prompt(tokenizer_, *chat_format_, req);
    if (!built) {
      send_error(responder, built.error());
      return {};
    }
    gen.prompt = std::move(built->ids);
    opens_thinking = built->opens_thinking;
  } else {
    gen.prompt = tokenizer_.encode_ordinary(req.prompt);
  }
  const int prompt = static_cast<int>(gen.prompt.size());
  const int room = std::max(0, scheduler_.max_context() - prompt);
  if (req.max_tokens && prompt < scheduler_.max_context() && *req.max_tokens > room) {
    send_error(responder,
                      ApiError{400,
                               "max_tokens " + std::to_string(*req.max_tokens) + " + the prompt's " +
                                   std::to_string(prompt) + " tokens exceed this server's context of " +
                                   std::to_string(scheduler_.max_context()) + " (lower max_tokens, or start the server with a larger --max-context)",
                               "invalid_request_error", "max_tokens", "context_length_exceeded"});
    return {prompt, 0};
  }
  gen.max_tokens = req.max_tokens.value_or(std::min(options_.default_max_tokens, std::max(room, 1)));
  gen.sampling.temperature = req.temperature;
  gen.sampling.greedy = req.temperature <= 0.0f;
  gen.sampling.top_p = req.top_p;
  gen.sampling.top_k = req.top_k;
  gen.sampling.repetition_penalty = req.repetition_penalty;
  gen.sampling.logprobs = req.logprobs;
  if (!req.ignore_eos) gen.stop_ids = stop_ids_;
  // The test seam: the model still runs, but the answer's tokens are the script's.
  const std::vector<int32_t> script = options_.scripted_answer.empty() ? std::vector<int32_t>()
                                                                        : tokenizer_.encode(options_.scripted_answer);
  if (!script.empty()) {
    gen.max_tokens = std::min(gen.max_tokens, static_cast<int>(script.size()));
    gen.stop_ids.clear();
  }
  if (chat) {
    auto constraint = request_constraint(req, gen.max_tokens);
    if (!constraint) {
      send_error(responder, constraint.error());
      return {prompt, 0};
    }
    gen.constraint = std::move(*constraint);
  }
  const uint64_t seed = req.seed.value_or(std::random_device{}());

  const ResponseIds ids{request_id(chat), unix_now(), options_.model_name};
  AssistantOutputOptions parsing;
  parsing.split_reasoning = chat && options_.split_reasoning && chat_format_->thinks();
  parsing.starts_in_reasoning = opens_thinking;
  parsing.parse_tool_calls = chat && !req.tools.is_null() && !req.tool_choice_none;
  parsing.single_tool_call = !req.parallel_tool_calls;
  const std::string call_ids = "call_" + ids.id.substr(ids.id.find('-') + 1) + "_";
  std::vector<std::unique_ptr<Choice>> choices;
  for (int i = 0; i < req.n; ++i) {
    parsing.call_id_prefix = call_ids + (req.n > 1 ? std::to_string(i) + "_" : "");
    choices.push_back(std::make_unique<Choice>(tokenizer_, req, parsing));
  }
  auto cancel_all = [&] {
    for (auto& c : choices)
      if (c->stream) c->stream->cancel();
  };
  bool stream_started = false;
  auto submit = [&](int i) -> bool {
    GenerationRequest one = gen;
    one.sampling.seed = seed + static_cast<uint64_t>(i) * kChoiceSeedStride;
    auto submitted = scheduler_.submit(std::move(one));
    if (!submitted) {
      cancel_all();
      const SubmitError& e = submitted.error();
      const ApiError error{e.status, e.message, e.status == 429 ? "rate_limit_error" : "invalid_request_error",
                           e.status == 400 ? (chat ? "messages" : "prompt") : "", e.code};
      if (!stream_started) {
        send_error(responder, error);
      } else {
        responder.write(sse(error_body(error)));
        responder.write("data: [DONE]\n\n");
        responder.end_stream();
      }
      return false;
    }
    choices[i]->stream = *submitted;
    return true;
  };
  // The other choices wait for the first one's prompt to be prefilled, so they
  // copy its KV from the prefix cache instead of computing it again.
  const bool share_prefill = req.n > 1 && scheduler_.options().prefix_cache && prompt > kPrefixBlockTokens;
  if (!submit(0)) return {prompt, 0};
  for (int i = 1; i < req.n && !share_prefill; ++i)
    if (!submit(i)) return {prompt, 0};
  bool others_submitted = !share_prefill;

  const bool wants_logprobs = req.logprobs >= 0;
  auto token_text = [&](int32_t id) { return TokenLogprobText{std::string(tokenizer_.token_bytes(id)), 0.0f}; };
  auto logprob_entry = [&](const DrawLogprobs& drawn, int32_t shown) {
    LogprobEntry entry{token_text(shown), {}};
    entry.chosen.logprob = drawn.chosen.logprob;
    for (const TokenLogprob& t : drawn.top) {
      entry.top.push_back(token_text(t.id));
      entry.top.back().logprob = t.logprob;
    }
    return entry;
  };
  auto take_logprobs = [&](Choice& c) -> nlohmann::json {
    if (!wants_logprobs) return nullptr;
    nlohmann::json out = chat ? chat_logprobs_json(c.logprobs) : completion_logprobs_json(c.logprobs, c.logprobs_offset);
    for (const LogprobEntry& e : c.logprobs) c.logprobs_offset += static_cast<int>(e.chosen.token.size());
    c.logprobs.clear();
    return out;
  };
  auto send_events = [&](Choice& c, int index, const std::vector<OutputEvent>& events) -> bool {
    if (!req.stream) return true;
    for (const OutputEvent& event : events)
      if (!responder.write(sse(chat_event_chunk_body(ids, event, take_logprobs(c), index)))) return false;
    return true;
  };
  auto on_text = [&](Choice& c, int index, const std::string& piece) -> bool {  // false: the client is gone
    if (piece.empty()) return true;
    if (chat) return send_events(c, index, c.answer.push(piece));
    if (!req.stream) {
      c.text += piece;
      return true;
    }
    return responder.write(sse(chunk_body(ids, chat, piece, "", "", take_logprobs(c), index)));
  };

  if (req.stream) {
    responder.start_stream(200, "text/event-stream");
    stream_started = true;
    if (chat)
      for (int i = 0; i < req.n; ++i) responder.write(sse(chunk_body(ids, chat, "", "assistant", "", nullptr, i)));
  }
  std::vector<int32_t> tokens;
  std::vector<DrawLogprobs> drawn_logprobs;
  bool client_left = false;
  auto running = [&] {
    return std::any_of(choices.begin(), choices.end(), [](const auto& c) { return c->stream && c->more; });
  };
  while (running()) {
    // Every running choice gets its tokens in the same step: wait on one, take the others' at once.
    auto wait = std::chrono::milliseconds(250);
    for (int i = 0; i < req.n; ++i) {
      Choice& c = *choices[i];
      if (!c.stream || !c.more) continue;
      tokens.clear();
      drawn_logprobs.clear();
      c.more = c.stream->next(tokens, wait, wants_logprobs ? &drawn_logprobs : nullptr);
      wait = std::chrono::milliseconds(0);
      for (size_t t = 0; t < tokens.size(); ++t) {
        if (c.stopped()) break;
        const int32_t id = script.empty() ? tokens[t] : script[static_cast<size_t>(c.completion_tokens)];
        ++c.completion_tokens;
        if (t < drawn_logprobs.size()) c.logprobs.push_back(logprob_entry(drawn_logprobs[t], id));
        if (req.skip_special_tokens && tokenizer_.is_special(id)) continue;  // counted, not shown
        if (!on_text(c, i, c.stop_text.push(c.decoder.push(id)))) client_left = true;
      }
      if (c.stopped()) c.stream->cancel();  // the rest would be cut anyway
    }
    if (!others_submitted && (choices[0]->completion_tokens > 0 || !choices[0]->more)) {
      others_submitted = true;
      for (int i = 1; i < req.n; ++i)
        if (!submit(i)) return {prompt, choices[0]->completion_tokens};
    }
    // Also while no token comes (queued, or the server stopping): a stream learns it only here.
    if (responder.client_gone()) client_left = true;
    if (client_left) {
      cancel_all();
      int taken = 0;
      for (const auto& c : choices) taken += c->completion_tokens;
      return {prompt, taken};  // nobody to answer; the connection closes
    }
  }
  int completion_tokens = 0;
  for (const auto& c : choices) completion_tokens += c->completion_tokens;
  std::vector<ChoiceResult> results;
  for (int i = 0; i < req.n; ++i) {
    Choice& c = *choices[i];
    if (!c.stopped()) {
      if (!on_text(c, i, c.stop_text.push(c.decoder.flush())) || !on_text(c, i, c.stop_text.flush()))
        return {prompt, completion_tokens};
    }
    if (chat && !send_events(c, i, c.answer.finish())) return {prompt, completion_tokens};
    const std::string reason = c.stream->finish_reason();
    if (reason == "error" || (reason == "cancelled" && !c.stopped())) {
      cancel_all();
      ApiError error{reason == "error" ? 500 : 503, c.stream->error().empty() ? "generation was cancelled" : c.stream->error(),
                     "server_error", "", ""};
      if (!req.stream) {
        send_error(responder, error);
      } else {
        responder.write(sse(error_body(error)));
        responder.write("data: [DONE]\n\n");
        responder.end_stream();
      }
      return {prompt, completion_tokens};
    }
    // A script that ran out is the model's end of answer.
    const bool script_done = !script.empty() && c.completion_tokens == static_cast<int>(script.size());
    std::string finish = c.stopped() || script_done ? "stop" : openai_finish(reason);
    if (chat && finish == "stop" && !c.answer.message().tool_calls.empty()) finish = "tool_calls";
    if (req.stream) {
      // Tokens that produced no text of their own (a held-back stop prefix, a skipped control token) end here.
      nlohmann::json rest = c.logprobs.empty() ? nlohmann::json(nullptr) : take_logprobs(c);
      responder.write(sse(chunk_body(ids, chat, "", "", finish, rest, i)));
    } else {
      results.push_back(ChoiceResult{c.text, c.answer.message(), finish, take_logprobs(c)});
    }
  }
  const Usage usage{choices[0]->stream->prompt_tokens(), completion_tokens};
  if (!req.stream) {
    responder.send(200, kJson, choices_body(ids, chat, results, usage));
  } else {
    if (req.include_usage) responder.write(sse(usage_chunk_body(ids, chat, usage)));
    responder.write("data: [DONE]\n\n");
    responder.end_stream();
  }
  return {prompt, completion_tokens};
}

}  // namespace xft::engine::serve
