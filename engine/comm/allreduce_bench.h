// The rank side of `xftctl bench allreduce`: a size sweep per algorithm with
// a correctness check against an fp32 reference at every size, per-rank
// timing (slowest rank named), optional comparison with MPI_Allreduce, and
// the tune run that writes the `auto` table. Also the `--check` mode the
// integration tests use: every algorithm at many awkward element counts.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/comm/allreducer.h"
#include "engine/comm/bench_report.h"
#include "engine/comm/watchdog.h"

namespace xft::engine::comm {

struct BenchConfig {
  // Algorithm names, "auto", or selection strings; empty: every algorithm this layout runs.
  std::vector<std::string> algos;
  std::vector<size_t> sizes;  // message bytes
  std::vector<DType> dtypes{DType::f32};
  int iters = 0;    // 0: adapt to the measured time (about 50 ms per size)
  int warmup = -1;  // -1: adapt to the size
  bool compare = false;
  bool tune = false;
  std::string tune_file;  // empty: default_tune_path()
  std::string format = "oneccl";
  // Failure injection for the tests: rank `fail_rank` kills (`kill`) or
  // stops (`hang`) itself when the sweep reaches `fail_at_bytes`.
  int fail_rank = -1;
  size_t fail_at_bytes = 0;
  std::string fail_mode;
};

struct BenchOutcome {
  long wrong = 0;    // elements off the reference, over all rows
  int rows = 0;
};

// Collective. Rank 0 writes the report to `out`. `watchdog` (may be null) is told what runs.
Expected<BenchOutcome> run_allreduce_bench(Allreducer& allreducer, const BenchConfig& config,
                                           std::ostream& out, Watchdog* watchdog);

struct CheckConfig {
  std::vector<std::string> algos;  // as in BenchConfig
  std::vector<size_t> counts;      // element counts; empty: the built-in awkward list
  std::vector<DType> dtypes{DType::f32, DType::bf16};
  int repeats = 3;                 // consecutive calls per case (exercises buffer reuse)
  bool backends = true;            // also the engine Communicator backends
  std::string tune_file;
};

struct CheckOutcome {
  int cases = 0;
  int failures = 0;
};

// Collective. Rank 0 prints one line per (algorithm, dtype) and a summary.
Expected<CheckOutcome> run_allreduce_check(Allreducer& allreducer, const CheckConfig& config,
                                           std::ostream& out, Watchdog* watchdog);

// The default sweep: min, min*factor, ... up to max (bytes).
std::vector<size_t> size_sweep(size_t min_bytes, size_t max_bytes, double factor);

// Deterministic test input of `rank` at element `index` in [-1, 1).
float check_value(int rank, size_t index, uint64_t salt);

}  // namespace xft::engine::comm
