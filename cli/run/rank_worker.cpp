// `run qwen --rank-worker`: one rank under mpirun.
#include <cstdio>
#include <exception>
#include <string>

#include "cli/rank_launch.h"
#include "cli/run/modes.h"
#include "engine/comm/mpi_c.h"
#include "engine/comm/mpi_communicator.h"

namespace xft::cli::run_qwen {

using namespace xft::engine;

int run_worker(Context& ctx, const RunOptions& o) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  g_rank_label = "rank " + std::to_string(rank) + " (" + this_hostname() + ")";
  engine::comm::CommBackendOptions backend;
  backend.backend = o.comm;
  backend.bf16_payload = o.comm_bf16;
  auto comm = engine::comm::MpiCommunicator::create(MPI_COMM_WORLD, backend);
  if (!comm) {
    fail(ctx, "--comm " + o.comm + ": " + comm.error().message);
  } else {
    try {
      run_mode(ctx, o, comm->get());
    } catch (const std::exception& e) {
      fail(ctx, e.what());
    }
  }
  std::fflush(stdout);
  if (ctx.exit_code != exit_ok) {
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, ctx.exit_code);
  }
  comm->reset();
  MPI_Finalize();
  return exit_ok;
}

}  // namespace xft::cli::run_qwen
