#include "cli/run/options.h"

namespace xft::cli::run_qwen {

void add_qwen_options(CLI::App& qwen_app, RunOptions& o) {
  CLI::App* qwen = &qwen_app;
  auto* source = qwen->add_option_group("model source");
  source->add_option("-m,--model", o.model_dir, "Hugging Face checkpoint directory");
  source->add_option("--fake-model", o.fake_model,
                     "preset (qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, qwen2.5-72b, qwen3-0.6b, "
                     "qwen3-30b-a3b, qwen3-235b-a22b, qwen2-57b-a14b, qwen1.5-moe-a2.7b, qwen-72b) or a "
                     "config.json, filled with deterministic weights");
  source->require_option(1);
  qwen->add_option("--layers", o.layers, "--fake-model: only the first N decoder layers (to fit a test machine)")
      ->check(CLI::PositiveNumber);
  qwen->add_option("--tokenizer", o.tokenizer_dir,
                   "directory with tokenizer.json or qwen.tiktoken (default: the model's)");
  qwen->add_option("--dtype", o.dtype, "weight format (fp8: the projections in e4m3 blocks of 128x128, head bf16)")
      ->check(CLI::IsMember({"bf16", "fp16", "int8", "int4", "fp8", "fp32"}))
      ->capture_default_str();
  qwen->add_option("--kv-dtype", o.kv_dtype, "KV cache format")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  qwen->add_option("-t,--threads", o.threads, "worker threads (default: the cpus allowed)")
      ->check(CLI::PositiveNumber);
  qwen->add_option("--cpus", o.cpus, "pin threads to these cpus, e.g. 0-3,8");
  qwen->add_option("-c,--max-context", o.max_context,
                   "KV cache positions per sequence (default min(max_position_embeddings, 8192))")
      ->check(CLI::PositiveNumber);

  auto* mode = qwen->add_option_group("mode");
  mode->add_option("-p,--prompt", o.prompt, "answer this prompt, streaming");
  mode->add_flag("--chat", o.chat, "interactive chat on stdin (/reset, /exit)");
  mode->add_option("--prompt-ids", o.prompt_ids,
                   "token ids 1,2,3 for --dump-logits (no sampling)");
  mode->add_flag("--bench", o.bench, "measure first-token and next-token latency");
  auto* serve_flag = mode->add_option("--serve", o.serve,
                                      "[HOST:]PORT: OpenAI-compatible API and chat page (8000 = 127.0.0.1:8000; "
                                      "localhost:8000, 0.0.0.0:8000, [::1]:8000)");
  auto* port_flag = mode->add_option("--port", o.port, "serve on this port (of --host); instead of --serve")
                        ->check(CLI::Range(0, 65535))->excludes(serve_flag);
  mode->require_option(1);
  qwen->add_option("--host", o.host, "serve with --port: the address or name to listen on")
      ->capture_default_str()->needs(port_flag);
  qwen->add_option("--served-model-name", o.served_model_name,
                   "serve: the model's name in /v1/models and answers; requests naming another get 404 (default: "
                   "the model directory's name)");
  qwen->add_option("--chat-template", o.chat_template,
                   "serve: a Jinja chat template file instead of the checkpoint's (chat_template.jinja or "
                   "tokenizer_config.json; ChatML when it has none)");
  qwen->add_option("--chat-template-kwargs", o.chat_template_kwargs,
                   "serve: a JSON object of template variables for every request, e.g. '{\"enable_thinking\": false}' "
                   "(a request's chat_template_kwargs override them)");
  qwen->add_option("--reasoning-format", o.reasoning_format,
                   "serve: auto puts a thinking template's <think> text in reasoning_content; none leaves it in content")
      ->capture_default_str()->check(CLI::IsMember({"auto", "none"}));
  qwen->add_option("--max-batch", o.max_batch, "serve: sequences decoded together")
      ->capture_default_str()->check(CLI::Range(1, 1024));
  qwen->add_option("--max-queue", o.max_queue, "serve: waiting requests before 429")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  qwen->add_option("--prefill-chunk", o.prefill_chunk,
                   "serve: prompt tokens fed per step beside the decodes (long prompts over several steps; 0: whole prompts)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  qwen->add_flag("--no-batch-invariant", o.no_batch_invariant,
                 "serve, prompt, chat: oneDNN prefill (faster; the last bits, and so a token now and then, may depend on "
                 "what shares a step)");
  qwen->add_option("--kv-cache-mib", o.kv_cache_mib,
                   "serve: KV cache per rank, running requests and reusable prompt prefixes together (0: no budget; the prefixes keep up to --max-batch full contexts)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  qwen->add_option("--api-key", o.api_key,
                   "serve: require 'Authorization: Bearer KEY' (visible in ps: prefer XFTCTL_API_KEY or --api-key-file)");
  qwen->add_option("--api-key-file", o.api_key_file,
                   "serve: the key is this file's first line (the file must be chmod 600; read on this machine)");
  qwen->add_option("--allowed-hosts", o.allowed_hosts,
                   "serve without a key: Host names served besides localhost, 127.0.0.1 and [::1] (a,b)");
  qwen->add_option("--cors-origin", o.cors_origins,
                   "serve: pages of these origins may call the API (CORS), e.g. https://app.example.com (a,b)");

  qwen->add_flag("--raw", o.raw, "use the prompt as is, without the ChatML template");
  qwen->add_option("--system", o.system, "system message (default: Qwen's)");
  qwen->add_option("--dump-logits", o.dump_logits,
                   "with --prompt-ids: write int32 n_tokens, int32 n_vocab, float32 logits");
  qwen->add_flag("--token-by-token", o.token_by_token,
                 "with --dump-logits: feed the ids one step each (the decode path) instead of one prefill");
  qwen->add_option("-n,--max-new-tokens", o.max_new_tokens)->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--temperature", o.temperature)->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--top-k", o.top_k, "0: no limit")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  qwen->add_option("--top-p", o.top_p)->capture_default_str()->check(CLI::Range(0.0, 1.0));
  qwen->add_option("--repetition-penalty", o.repetition_penalty)->capture_default_str()
      ->check(CLI::PositiveNumber);
  qwen->add_option("--seed", o.seed, "sampling seed (and fake-model weights seed)")
      ->capture_default_str();
  qwen->add_flag("--greedy", o.greedy, "always the most likely token");

  qwen->add_option("--input-tokens", o.input_tokens, "bench: prompt length")
      ->capture_default_str();
  qwen->add_option("--output-tokens", o.output_tokens, "bench: tokens generated")
      ->capture_default_str();
  qwen->add_option("--batch-size", o.batch_size, "bench: sequences decoded together")
      ->capture_default_str();
  qwen->add_option("--iters", o.iters, "bench: measured iterations")->capture_default_str();
  qwen->add_option("--warmup", o.warmup, "bench: unmeasured iterations first")
      ->capture_default_str();
  qwen->add_flag("--json", o.json, "bench: print JSON");
  qwen->add_flag("--batch-invariant", o.batch_invariant,
                 "decode batches as the server does: every row as if alone (GEMV, no oneDNN)");

  auto* ranks = qwen->add_option_group("ranks (tensor parallelism)");
  ranks->add_option("--local", o.plan.local_ranks, "N ranks on this machine (default with no inventory: one, in this process)")
      ->check(CLI::Range(1, 4096));
  ranks->add_option("--comm", o.comm, "allreduce between ranks: mpi, shm (one host), hier (shm inside hosts, MPI across), auto, or a selection")
      ->capture_default_str();
  ranks->add_flag("--comm-bf16", o.comm_bf16, "send activations as bf16 in the allreduce");
  ranks->add_flag("--profile", o.profile, "per-layer compute and allreduce time of every rank, and the communication share");
  ranks->add_flag("--dry-run", o.dry_run, "print the mpirun command instead of running it");
  add_plan_flags(*qwen, o.plan);
  add_env_flag(*qwen, o.plan);
  add_reach_flags(*qwen, o.reach);
  qwen->add_flag("--rank-worker", o.rank_worker)->group("");
  qwen->add_flag("--require-api-key", o.require_api_key)->group("");
  qwen->add_option("--fail-rank", o.fail_rank)->group("");
  qwen->add_option("--fail-at-token", o.fail_at_token)->group("");
  qwen->add_option("--scripted-answer", o.scripted_answer)->group("");
}

}  // namespace xft::cli::run_qwen
