// `run qwen`'s options: every flag of every mode, and their registration.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "cli/rank_launch.h"
#include "cli/reach_options.h"

namespace xft::cli::run_qwen {

struct RunOptions {
  std::string model_dir;
  std::string fake_model;
  int layers = 0;  // --fake-model: keep the first N decoder layers (0: all)
  std::string tokenizer_dir;
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  int threads = 0;
  std::string cpus;
  int max_context = 0;

  std::optional<std::string> prompt;
  bool raw = false;
  std::string system;
  bool chat = false;
  int max_new_tokens = 256;
  // Qwen2.5's generation_config.json defaults.
  float temperature = 0.7f;
  int top_k = 20;
  float top_p = 0.8f;
  float repetition_penalty = 1.05f;
  uint64_t seed = 0;
  bool greedy = false;

  std::string prompt_ids;
  std::string dump_logits;
  bool token_by_token = false;  // --dump-logits: one forward step per token (decode) instead of one prefill

  bool bench = false;
  // --serve [HOST:]PORT: the OpenAI-compatible server (engine/serve/); --port [--host] say the same.
  std::string serve;
  int port = -1;
  std::string host = "127.0.0.1";
  std::string served_model_name;
  std::string chat_template;         // serve: a Jinja file instead of the checkpoint's template
  std::string chat_template_kwargs;  // serve: a JSON object every request's chat_template_kwargs extend
  std::string reasoning_format = "auto";  // serve: "none" keeps <think> text in content
  int max_batch = 16;
  int max_queue = 64;
  int kv_cache_mib = 0;
  std::string api_key;
  std::string api_key_file;
  bool require_api_key = false;  // a rank: the control node sent XFTCTL_API_KEY, refuse to serve without it
  std::string allowed_hosts;     // --allowed-hosts a,b
  std::string cors_origins;      // --cors-origin a,b
  bool batch_invariant = false;  // bench the server's decode path
  bool no_batch_invariant = false;  // serve, prompt, chat: oneDNN prefill (answers may depend on the batch)
  int prefill_chunk = 64;

  int input_tokens = 32;
  int output_tokens = 32;
  int batch_size = 1;
  int iters = 3;
  int warmup = 1;
  bool json = false;

  // Several ranks: --local N or the inventory's plan; each rank runs --rank-worker.
  PlanFlags plan;
  ReachFlags reach;
  bool use_inventory = false;  // --hosts or -i given
  std::string comm = "auto";
  bool comm_bf16 = false;
  bool dry_run = false;
  bool rank_worker = false;
  // Hidden, for the failure tests: this rank kills itself after that many tokens.
  int fail_rank = -1;
  int fail_at_token = 0;
  // Hidden, for the client tests: serve answers with this file's text as the
  // generated tokens (serve::ServerOptions::scripted_answer).
  std::string scripted_answer;
  bool profile = false;
};

// Every flag of `run qwen` on the qwen subcommand, into o.
void add_qwen_options(CLI::App& qwen, RunOptions& o);

}  // namespace xft::cli::run_qwen
