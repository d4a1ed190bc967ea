#include "cli/run/rank_context.h"

#include "common/log.h"

namespace xft::cli::run_qwen {

std::string g_rank_label;

void fail(Context& ctx, const std::string& message) {
  if (g_rank_label.empty())
    spdlog::error("run qwen: {}", message);
  else
    spdlog::error("{}: run qwen: {}", g_rank_label, message);
  ctx.exit_code = exit_error;
}

bool is_leader(const Communicator* comm) { return comm == nullptr || comm->rank() == 0; }

// Rank 0 decides (prompt ids, chat turns); the others receive the same
// vector so every rank runs the same forward passes and samples in lock step.
void share_ids(Communicator* comm, std::vector<int32_t>& ids) {
  if (comm == nullptr || comm->size() == 1) return;
  int64_t count = static_cast<int64_t>(ids.size());
  comm->broadcast(&count, sizeof count, 0);
  ids.resize(static_cast<size_t>(count));
  if (count > 0) comm->broadcast(ids.data(), ids.size() * sizeof(int32_t), 0);
}

}  // namespace xft::cli::run_qwen
