// `run qwen --local N` or with an inventory: the control node plans the
// ranks and starts every one as `run qwen --rank-worker` under mpirun.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/allreduce_selection.h"
#include "cli/rank_launch.h"
#include "cli/run/loader.h"
#include "cli/run/memory_plan.h"
#include "cli/run/modes.h"
#include "common/log.h"
#include "engine/comm/selection.h"
#include "engine/model/architectures.h"

namespace xft::cli::run_qwen {

namespace fs = std::filesystem;
using namespace xft::engine;

namespace {

std::string absolute(const std::string& path) {
  return path.empty() ? path : fs::absolute(path).lexically_normal().string();
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// Everything a rank needs, re-spelled as the worker's command line.
std::vector<std::string> worker_arguments(const RunOptions& o) {
  std::vector<std::string> a{"run", "qwen", "--rank-worker", "--dtype", o.dtype, "--kv-dtype", o.kv_dtype,
                             "--comm", o.comm};
  auto add = [&a](const std::string& flag, const std::string& value) { a.insert(a.end(), {flag, value}); };
  if (!o.model_dir.empty()) add("--model", absolute(o.model_dir));
  if (!o.fake_model.empty()) add("--fake-model", o.fake_model);
  if (o.layers > 0) add("--layers", std::to_string(o.layers));
  if (!o.tokenizer_dir.empty()) add("--tokenizer", absolute(o.tokenizer_dir));
  if (o.threads > 0) add("--threads", std::to_string(o.threads));
  if (!o.cpus.empty()) add("--cpus", o.cpus);
  if (o.max_context > 0) add("--max-context", std::to_string(o.max_context));
  if (o.prompt) add("--prompt", *o.prompt);
  if (o.raw) a.push_back("--raw");
  if (!o.system.empty()) add("--system", o.system);
  if (o.chat) a.push_back("--chat");
  if (!o.prompt_ids.empty()) add("--prompt-ids", o.prompt_ids);
  if (!o.dump_logits.empty()) add("--dump-logits", absolute(o.dump_logits));
  if (o.token_by_token) a.push_back("--token-by-token");
  add("--max-new-tokens", std::to_string(o.max_new_tokens));
  add("--temperature", number(o.temperature));
  add("--top-k", std::to_string(o.top_k));
  add("--top-p", number(o.top_p));
  add("--repetition-penalty", number(o.repetition_penalty));
  add("--seed", std::to_string(o.seed));
  if (o.greedy) a.push_back("--greedy");
  if (o.bench) {
    a.push_back("--bench");
    add("--input-tokens", std::to_string(o.input_tokens));
    add("--output-tokens", std::to_string(o.output_tokens));
    add("--batch-size", std::to_string(o.batch_size));
    add("--iters", std::to_string(o.iters));
    add("--warmup", std::to_string(o.warmup));
  }
  if (o.json) a.push_back("--json");
  if (o.batch_invariant) a.push_back("--batch-invariant");
  if (o.no_batch_invariant) a.push_back("--no-batch-invariant");
  if (!o.serve.empty()) {
    add("--serve", o.serve);
    if (!o.served_model_name.empty()) add("--served-model-name", o.served_model_name);
    if (!o.chat_template.empty()) add("--chat-template", o.chat_template);
    if (!o.chat_template_kwargs.empty()) add("--chat-template-kwargs", o.chat_template_kwargs);
    add("--reasoning-format", o.reasoning_format);
    add("--max-batch", std::to_string(o.max_batch));
    add("--max-queue", std::to_string(o.max_queue));
    add("--kv-cache-mib", std::to_string(o.kv_cache_mib));
    add("--prefill-chunk", std::to_string(o.prefill_chunk));
    if (!o.allowed_hosts.empty()) add("--allowed-hosts", o.allowed_hosts);
    if (!o.cors_origins.empty()) add("--cors-origin", o.cors_origins);
    if (!o.scripted_answer.empty()) add("--scripted-answer", o.scripted_answer);
  }
  if (o.comm_bf16) a.push_back("--comm-bf16");
  if (o.profile) a.push_back("--profile");
  if (o.fail_rank >= 0) {
    add("--fail-rank", std::to_string(o.fail_rank));
    add("--fail-at-token", std::to_string(o.fail_at_token));
  }
  return a;
}

// Under the rank map: what each rank's share of the model will take and
// whether each host has the memory for its ranks. A checkpoint that only the
// rank hosts hold cannot be estimated here; that is said and the run goes on.
void print_memory_plan(const RunOptions& o, const launcher::RankPlan& plan) {
  auto opened = open_model_weights(o);
  if (!opened) {
    spdlog::info("run qwen: no memory estimate ({})", opened.error().message);
    return;
  }
  MemoryPlanInput input;
  input.model_name = opened->name;
  input.config = opened->weights->config();
  if (auto embed = opened->weights->meta(architecture_layout(input.config.arch).embed)) {
    input.checkpoint_dtype = embed->dtype;
  }
  input.dtype = weight_format(o.dtype);
  input.kv = kv_format(o.kv_dtype);
  input.max_context = o.max_context;
  auto memory = plan_memory(plan, input);
  if (!memory) {
    spdlog::warn("run qwen: no memory estimate ({})", memory.error().message);
    return;
  }
  log::info(memory->table);
  for (const std::string& warning : memory->warnings) spdlog::warn("run qwen: {}", warning);
}

}  // namespace

// oneCCL users set CCL_ALLREDUCE; without --comm it is the ranks' selection.
// Every oneCCL-only name in it is said once, with what runs instead.
Expected<void> adopt_oneccl_selection(RunOptions& o) {
  const char* env = std::getenv("CCL_ALLREDUCE");
  if (!env || !*env) return {};
  if (auto ok = check_allreduce_selection("CCL_ALLREDUCE", env); !ok) return ok;
  o.comm = env;
  spdlog::info("run qwen: --comm from CCL_ALLREDUCE={}", env);
  for (const auto& note : engine::comm::oneccl_alias_notes(o.comm)) spdlog::info("run qwen: {}", note);
  return {};
}

// The server runs on rank 0, on the first host behind the bastion: say where
// it listens and the ssh command that forwards a local port to it.
void say_how_to_reach_server(const RunOptions& o, const launcher::LaunchSite& site) {
  auto address = parse_listen_address(o.serve);
  if (!address) return;  // checked before the launch
  auto [host, port] = *address;
  // A wildcard listens on loopback too; the forward ends there on the first host.
  std::string target = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host;
  log::info(fmt::format("run qwen: the server listens on {}:{} of {} ({}), behind the bastion; reach it from here "
                        "with: {}",
                        host.find(':') == std::string::npos ? host : "[" + host + "]", port, site.host, site.address,
                        launcher::shell_join(launcher::ssh_forward_command(site, target, port))),
            {{"host", site.host}});
}

void run_control(Context& ctx, const RunOptions& o) {
  std::vector<std::string> command{self_path()};
  auto args = worker_arguments(o);
  command.insert(command.end(), args.begin(), args.end());
  RankRun run;
  if (!o.serve.empty()) {
    auto key = api_key(o);  // already checked before the launch
    if (key && !key->empty()) {
      // Only in mpirun's environment, forwarded with -x: never on any command line.
      run.secret_env.emplace_back(kApiKeyVariable, *key);
      command.push_back("--require-api-key");
    }
  }
  run.what = "run qwen";
  run.dry_run = o.dry_run;
  run.pass_stdin = o.chat;
  run.signal_is_normal_stop = !o.serve.empty();
  int failure_code = exit_error;
  auto planned = plan_for(ctx, o.plan, o.reach, failure_code);
  if (!planned && o.plan.local_ranks > 0) {
    // More ranks than cores: correct but slow; worth it for tests and debugging.
    spdlog::info("{}; running {} unbound ranks instead", planned.error().message, o.plan.local_ranks);
    ctx.exit_code = run_ranks_oversubscribed(o.plan.local_ranks, command, run);
    return;
  }
  if (!planned) {
    spdlog::error("run qwen: {}", planned.error().message);
    ctx.exit_code = failure_code;
    return;
  }
  if (!o.dry_run) log::info(launcher::format_rank_map(planned->plan));
  print_memory_plan(o, planned->plan);
  set_launch_site(run, *planned, o.reach);
  auto mpirun = mpirun_for(*planned, o.reach, command);
  if (!mpirun) return fail(ctx, mpirun.error().message);
  if (!o.serve.empty() && run.site.on_first_host) say_how_to_reach_server(o, run.site);
  ctx.exit_code = run_ranks(planned->plan, *mpirun, run);
}

}  // namespace xft::cli::run_qwen
