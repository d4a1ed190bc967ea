// `run qwen --serve`: the OpenAI-compatible server over the model; rank 0
// listens, the other ranks follow its scheduler's steps.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "cli/run/generation.h"
#include "cli/run/loader.h"
#include "cli/run/modes.h"
#include "common/log.h"
#include "engine/serve/api_key.h"
#include "engine/serve/http_server.h"
#include "engine/serve/scheduler.h"
#include "engine/serve/server.h"

namespace xft::cli::run_qwen {

namespace fs = std::filesystem;
using namespace xft::engine;

// --serve ----------------------------------------------------------------

std::atomic<bool> g_serve_stop{false};

void on_stop_signal(int) { g_serve_stop = true; }

// SIGINT/SIGTERM/SIGUSR1 end the server cleanly; under mpirun every rank gets them,
// and the other ranks wait for rank 0's shutdown step instead of dying mid-collective.
void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);  // what xftctl sends through mpirun (RankRun::signal_is_normal_stop)
}

// --served-model-name, else the checkpoint directory's name ("Qwen2.5-7B-Instruct", also for "DIR/"), or the preset.
std::string served_model_name(const RunOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  if (o.model_dir.empty()) return o.fake_model;
  fs::path dir = fs::path(o.model_dir).lexically_normal();
  return (dir.has_filename() ? dir : dir.parent_path()).filename().string();
}

// "[HOST:]PORT" -> (host, port): HOST a name, an IPv4 address or a bracketed
// IPv6 one ("[::1]:8000", returned without brackets); it defaults to 127.0.0.1.
Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text) {
  const std::string usage = "--serve " + text + ": expected [HOST:]PORT, e.g. 8000, localhost:8000, 0.0.0.0:8000 or [::1]:8000";
  const size_t colon = text.rfind(':');
  std::string host = colon == std::string::npos ? "127.0.0.1" : text.substr(0, colon);
  std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of(":[]") != std::string::npos) {
    return make_error(usage + " (an IPv6 address goes in brackets)");
  }
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535 || host.empty()) return make_error(usage);
  return std::make_pair(host, static_cast<int>(port));
}

// How a URL writes a host: IPv6 addresses in brackets.
std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// --serve's address, checked and resolved before any model is loaded or rank started.
Expected<void> check_listen_address(const std::string& serve) {
  auto address = parse_listen_address(serve);
  if (!address) return address.error();
  auto resolved = serve::resolve_listen_host(address->first);
  if (!resolved) return make_error("--serve " + serve + ": " + resolved.error().message);
  return {};
}

// One line per answered request at info ("xftctl: serve: POST /v1/completions
// 200 prompt=5 completion=16 80ms"; -q hides it): never a body, query or key.
void log_access(const serve::AccessRecord& record) {
  log::info("serve: " + serve::access_line(record),
            {{"method", record.method}, {"path", record.path}, {"status", record.status},
             {"prompt_tokens", record.prompt_tokens}, {"completion_tokens", record.completion_tokens},
             {"ms", static_cast<long long>(record.ms)}});
}

// The key the server requires (empty: none). The control node resolves it
// (--api-key, --api-key-file, or XFTCTL_API_KEY) and hands it to the ranks in
// their environment only; a rank takes it from there and nowhere else.
Expected<std::string> api_key(const RunOptions& o) {
  const char* env = std::getenv(kApiKeyVariable);
  const std::string from_env = env ? env : "";
  if (o.rank_worker) {
    if (o.require_api_key && from_env.empty()) {
      return make_error(std::string("an API key is required but ") + kApiKeyVariable +
                        " is not in this rank's environment (mpirun did not forward it); not serving without it");
    }
    return from_env;
  }
  if (!o.api_key.empty()) return o.api_key;
  if (!o.api_key_file.empty()) return serve::read_api_key_file(o.api_key_file);
  return from_env;
}

bool loopback_address(const std::string& numeric) { return numeric.rfind("127.", 0) == 0 || numeric == "::1"; }

serve::AccessPolicy access_policy(const RunOptions& o, bool keyed) {
  serve::AccessPolicy policy;
  policy.any_host = keyed;
  policy.allowed_hosts = serve::split_list(o.allowed_hosts);
  policy.cors_origins = serve::split_list(o.cors_origins);
  return policy;
}

void run_serve(Context& ctx, const RunOptions& o, Communicator* comm) {
  catch_stop_signals();
  auto key = api_key(o);
  if (is_leader(comm) && !key) return fail(ctx, key.error().message);  // before any rank loads a model
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  std::shared_ptr<const chat_template::ChatFormat> chat_format;
  if (is_leader(comm)) {  // before any rank loads a model: a bad template is the operator's to fix first
    auto format = chat_template::ChatFormat::load(o.model_dir, o.chat_template, o.chat_template_kwargs);
    if (!format) return fail(ctx, format.error().message);
    chat_format = std::make_shared<const chat_template::ChatFormat>(std::move(*format));
  }
  std::string scripted_answer;
  if (is_leader(comm) && !o.scripted_answer.empty()) {
    std::ifstream script(o.scripted_answer, std::ios::binary);
    if (!script) return fail(ctx, "--scripted-answer: cannot read " + o.scripted_answer);
    scripted_answer.assign(std::istreambuf_iterator<char>(script), {});
  }
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  if (!is_leader(comm)) {
    auto followed = serve::Scheduler::follow(model, o.max_batch);
    if (!followed) fail(ctx, followed.error().message);
    return;
  }
  // Only rank 0 stops generations, so the end tokens are not shared.
  const auto stop_ids = stop_ids_for(model.config(), tokenizer_stop_ids(**tok));
  const auto address = *parse_listen_address(o.serve);  // checked before anything started
  // Rank 0 must still take part in the shutdown step when it cannot serve.
  std::atomic<bool> stop_now{true};
  serve::SchedulerOptions scheduling;
  scheduling.max_batch = o.max_batch;
  scheduling.max_queue = o.max_queue;
  scheduling.kv_budget_bytes = static_cast<size_t>(o.kv_cache_mib) << 20;
  scheduling.prefill_chunk = o.prefill_chunk;
  serve::Scheduler scheduler(model, scheduling);
  serve::ServerOptions server_options;
  server_options.model_name = served_model_name(o);
  server_options.api_key = *key;
  server_options.default_max_tokens = o.max_new_tokens;
  server_options.created = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  server_options.access_log = log_access;
  server_options.chat_format = chat_format;
  server_options.split_reasoning = o.reasoning_format != "none";
  server_options.scripted_answer = scripted_answer;
  serve::Server server(scheduler, **tok, stop_ids, server_options);
  serve::HttpOptions http_options;
  http_options.access = access_policy(o, !key->empty());
  http_options.screen = [&server](const serve::HttpRequest& head, serve::HttpResponder& responder) {
    server.screen(head, responder);
  };
  http_options.answered = [&server](const serve::HttpRequest& head, int status) { server.log_answered(head, status); };
  auto http = serve::HttpServer::listen(address.first, address.second,
                                        [&server](const serve::HttpRequest& request, serve::HttpResponder& responder) {
                                          server.handle(request, responder);
                                        },
                                        std::move(http_options));
  if (!http) {
    scheduler.run(stop_now);
    return fail(ctx, http.error().message);
  }
  const double kv_mib_per_1k = scheduler.kv_bytes_per_position() * 1000.0 / (1 << 20);
  spdlog::info("serving {} on http://{}:{} (OpenAI API under /v1, chat page at /)", server_options.model_name,
               url_host(address.first), (*http)->port());
  spdlog::debug("chat template: {}", chat_format->origin());
  spdlog::info("{} rank{}, {}, batch up to {}, queue {}, context {}, KV {:.1f} MiB per 1000 positions{}{}",
               model.comm().size(), model.comm().size() == 1 ? "" : "s", model.kernel_name(), o.max_batch,
               o.max_queue, model.max_context(), kv_mib_per_1k,
               o.kv_cache_mib > 0 ? ", KV budget " + std::to_string(o.kv_cache_mib) + " MiB" : std::string(),
               key->empty() ? "" : ", API key required");
  const auto numeric = serve::resolve_listen_host(address.first);
  if (key->empty() && !(numeric && loopback_address(*numeric))) {
    spdlog::warn("serving on {} with no API key: anyone who can reach this port can use the model "
                 "(set {} or --api-key-file FILE)",
                 address.first, kApiKeyVariable);
  }
  std::fflush(stderr);
  auto ran = scheduler.run(g_serve_stop);
  (*http)->stop();
  if (!ran) return fail(ctx, ran.error().message);
  spdlog::info("server stopped");
}

}  // namespace xft::cli::run_qwen
