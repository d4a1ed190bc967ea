// `run qwen --prompt`: answer one prompt, streaming.
#include <string>
#include <utility>
#include <vector>

#include "cli/run/generation.h"
#include "cli/run/loader.h"
#include "cli/run/modes.h"

namespace xft::cli::run_qwen {

using namespace xft::engine;

void run_prompt(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);  // the server's answers
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  std::vector<int32_t> ids;
  if (*tok && o.raw) {
    ids = (*tok)->encode(*o.prompt);
  } else if (*tok) {
    std::vector<std::pair<std::string, std::string>> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", *o.prompt});
    ids = (*tok)->encode((*tok)->chat_prompt(messages, true));
  }
  share_ids(comm, ids);
  auto stop_ids = shared_stop_ids(model, *tok, comm);
  auto seq = model.new_sequence();
  if (o.profile) model.enable_profile(true);
  auto result = stream_answer(model, *seq, tok->has_value() ? &**tok : nullptr, ids, o, stop_ids, nullptr);
  if (!result) return fail(ctx, result.error().message);
  if (is_leader(comm)) print_stats(*result);
  if (o.profile) report_profile(model, comm);
}

}  // namespace xft::cli::run_qwen
