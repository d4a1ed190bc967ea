// `run qwen --chat`: an interactive chat on stdin; rank 0 reads, every rank generates.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/run/generation.h"
#include "cli/run/loader.h"
#include "cli/run/modes.h"
#include "common/log.h"

namespace xft::cli::run_qwen {

using namespace xft::engine;

namespace {

// One chat turn as rank 0 sends it: keep `common` cached positions, then feed `ids`.
// common < 0 ends the chat.
struct ChatTurn {
  int32_t common = -1;
  std::vector<int32_t> ids;
};

void share_turn(Communicator* comm, ChatTurn& turn) {
  if (comm == nullptr || comm->size() == 1) return;
  comm->broadcast(&turn.common, sizeof turn.common, 0);
  if (turn.common >= 0) share_ids(comm, turn.ids);
}

void run_chat_follower(Context& ctx, const RunOptions& o, Model& model, Communicator* comm) {
  auto stop_ids = shared_stop_ids(model, std::nullopt, comm);
  auto seq = model.new_sequence();
  while (true) {
    ChatTurn turn;
    share_turn(comm, turn);
    if (turn.common < 0) return;
    seq->truncate(turn.common);
    auto result = stream_answer(model, *seq, nullptr, turn.ids, o, stop_ids, nullptr);
    if (!result) return fail(ctx, result.error().message);
  }
}

}  // namespace

void run_chat(Context& ctx, const RunOptions& o, Communicator* comm) {
  auto tok = leader_tokenizer(o, comm);
  if (!tok) return fail(ctx, tok.error().message);
  auto loaded = load_model(o, comm, /*batch_invariant=*/!o.no_batch_invariant);  // the server's answers
  if (!loaded) return fail(ctx, loaded.error().message);
  Model& model = *loaded->model;
  if (!is_leader(comm)) return run_chat_follower(ctx, o, model, comm);
  const Tokenizer& tk = **tok;
  auto stop_ids = shared_stop_ids(model, *tok, comm);
  const bool interactive = isatty(STDIN_FILENO);
  std::vector<std::pair<std::string, std::string>> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  const size_t kept = messages.size();
  auto seq = model.new_sequence();
  if (interactive) {
    std::fprintf(stderr, "%s loaded; /reset starts over, /exit (or Ctrl-D) quits\n",
                 loaded->name.c_str());
  }
  std::string line;
  while (true) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit") break;
    if (line == "/reset") {
      messages.resize(kept);
      seq->truncate(0);
      std::fputs("(conversation reset)\n", stdout);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    ChatTurn turn;
    turn.ids = tk.encode(tk.chat_prompt(messages, true));
    // The cache already holds the earlier turns: feed only what differs.
    const auto& cached = seq->tokens();
    size_t common = 0;
    while (common < cached.size() && common + 1 < turn.ids.size() && cached[common] == turn.ids[common]) {
      ++common;
    }
    // A linear-attention state cannot step back: unless the cache is a prefix, prefill it all.
    if (seq->has_linear_state() && common < cached.size()) common = 0;
    turn.common = static_cast<int32_t>(common);
    turn.ids.erase(turn.ids.begin(), turn.ids.begin() + static_cast<std::ptrdiff_t>(common));
    share_turn(comm, turn);
    seq->truncate(turn.common);
    std::string answer;
    auto result = stream_answer(model, *seq, &tk, turn.ids, o, stop_ids, &answer);
    if (!result) return fail(ctx, result.error().message);
    messages.push_back({"assistant", answer});
    if (result->finish_reason == "context") {
      spdlog::info("the context is full; /reset to start over");
    }
    if (ctx.verbosity > 0) print_stats(*result);
  }
  ChatTurn end;
  share_turn(comm, end);
}

}  // namespace xft::cli::run_qwen
