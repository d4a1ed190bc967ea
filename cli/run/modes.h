// The modes of `run qwen` (one file each), the rank worker and the control
// node that starts ranks; run_command.cpp picks one.
#pragma once

#include <string>
#include <utility>

#include "cli/command.h"
#include "cli/run/options.h"
#include "cli/run/rank_context.h"
#include "common/expected.h"

namespace xft::cli::run_qwen {

void run_prompt(Context& ctx, const RunOptions& o, Communicator* comm);
void run_chat(Context& ctx, const RunOptions& o, Communicator* comm);
void run_dump_logits(Context& ctx, const RunOptions& o, Communicator* comm);
void run_bench(Context& ctx, const RunOptions& o, Communicator* comm);
void run_serve(Context& ctx, const RunOptions& o, Communicator* comm);
// The mode the flags ask for, on this process's rank (comm null: one rank).
void run_mode(Context& ctx, const RunOptions& o, Communicator* comm);

// A rank under mpirun: the model slice of this rank, collectives over MPI or
// shared memory. An error on any rank aborts the job, so no rank waits forever
// in a collective for a peer that is gone.
int run_worker(Context& ctx, const RunOptions& o);
// The control node: plans the ranks and starts them under mpirun.
void run_control(Context& ctx, const RunOptions& o);
// oneCCL users set CCL_ALLREDUCE; without --comm it is the ranks' selection.
// Every oneCCL-only name in it is said once, with what runs instead.
Expected<void> adopt_oneccl_selection(RunOptions& o);

// --serve's pieces the control node checks before anything starts.
constexpr const char* kApiKeyVariable = "XFTCTL_API_KEY";
// How a URL writes a host: IPv6 addresses in brackets.
std::string url_host(const std::string& host);
// --serve's address, checked and resolved before any model is loaded or rank started.
Expected<void> check_listen_address(const std::string& serve);
// "[HOST:]PORT" -> (host, port); HOST defaults to 127.0.0.1, IPv6 without brackets.
Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text);
// The key the server requires (empty: none). The control node resolves it
// (--api-key, --api-key-file, or XFTCTL_API_KEY) and hands it to the ranks in
// their environment only; a rank takes it from there and nowhere else.
Expected<std::string> api_key(const RunOptions& o);

}  // namespace xft::cli::run_qwen
