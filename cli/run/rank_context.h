// What every mode of `run qwen` shares about where it runs: the rank's name
// in messages, failing with one message, and rank 0 handing ids to the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/command.h"
#include "engine/comm/communicator.h"

namespace xft::cli::run_qwen {

using engine::Communicator;

// "rank 1 (h02)" inside a rank worker, so every message names where it came from.
extern std::string g_rank_label;

void fail(Context& ctx, const std::string& message);
bool is_leader(const Communicator* comm);
// Rank 0 decides (prompt ids, chat turns); the others receive the same
// vector so every rank runs the same forward passes and samples in lock step.
void share_ids(Communicator* comm, std::vector<int32_t>& ids);

}  // namespace xft::cli::run_qwen
