// `xftctl run qwen`: load a Qwen checkpoint (or a --fake-model of any size)
// on this machine and answer a prompt, chat, dump logits for given token ids,
// or benchmark first-token and next-token latency. One file per mode in run/.
#include <memory>
#include <string>

#include "cli/allreduce_selection.h"
#include "cli/command.h"
#include "cli/run/modes.h"
#include "cli/run/options.h"
#include "cli/run/rank_context.h"

namespace xft::cli {

namespace run_qwen {

void run_mode(Context& ctx, const RunOptions& o, Communicator* comm) {
  if (!o.serve.empty()) return run_serve(ctx, o, comm);
  if (o.bench) return run_bench(ctx, o, comm);
  if (!o.prompt_ids.empty()) return run_dump_logits(ctx, o, comm);
  if (o.chat) return run_chat(ctx, o, comm);
  return run_prompt(ctx, o, comm);
}

}  // namespace run_qwen

void add_run_commands(CLI::App& app, Context& ctx) {
  using namespace run_qwen;
  auto* run = app.add_subcommand("run", "run a model on this machine");
  run->require_subcommand(1);
  auto options = std::make_shared<RunOptions>();
  auto* qwen = run->add_subcommand(
      "qwen", "Qwen1/2/2.5/3: answer a prompt, chat, dump logits or benchmark");
  add_qwen_options(*qwen, *options);

  qwen->callback([&ctx, options, qwen] {
    // The allreduce selection, checked once on the control node: --comm's, or CCL_ALLREDUCE's without it.
    if (!options->rank_worker) {
      auto checked = qwen->count("--comm") == 0 ? adopt_oneccl_selection(*options)
                                                : check_allreduce_selection("--comm", options->comm);
      if (!checked) return fail(ctx, checked.error().message);
    }
    const RunOptions& o = *options;
    if (!o.dump_logits.empty() && o.prompt_ids.empty()) {
      return fail(ctx, "--dump-logits needs --prompt-ids");
    }
    if (o.token_by_token && o.dump_logits.empty()) {
      return fail(ctx, "--token-by-token needs --dump-logits FILE and --prompt-ids");
    }
    if (!o.prompt_ids.empty() && o.dump_logits.empty()) {
      return fail(ctx, "--prompt-ids needs --dump-logits FILE");
    }
    if (o.port >= 0) {  // --host/--port say what --serve says; the ranks are given --serve
      if (o.host.find_first_of("[]") != std::string::npos) return fail(ctx, "--host " + o.host + ": give an IPv6 address without brackets");
      options->serve = url_host(o.host) + ":" + std::to_string(o.port);
    }
    if (!o.serve.empty()) {  // before any model is loaded or rank started
      if (auto checked = check_listen_address(o.serve); !checked) return fail(ctx, checked.error().message);
      if (!o.rank_worker) {
        if (auto key = api_key(o); !key) return fail(ctx, key.error().message);
      }
    }
    if (o.rank_worker) {
      ctx.exit_code = run_worker(ctx, o);
      return;
    }
    if (o.plan.local_ranks > 0 || !ctx.inventory_flag.empty() || !o.reach.hosts.empty()) return run_control(ctx, o);
    return run_mode(ctx, o, nullptr);
  });
}

}  // namespace xft::cli
