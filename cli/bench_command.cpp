// xftctl bench allreduce: the allreduce algorithms of engine/comm measured
// across the ranks of the inventory's plan (or --local N on this host). This
// file is the glue: it starts the ranks through the launcher, and each rank
// runs the hidden `--rank-worker` mode of this same command under mpirun.
#include <fcntl.h>
#include "engine/comm/mpi_c.h"
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/allreduce_selection.h"
#include "cli/command.h"
#include "cli/rank_launch.h"
#include "cli/reach_options.h"
#include "engine/comm/allreduce_bench.h"
#include "engine/comm/mpi_communicator.h"
#include "launcher/launch.h"
#include "remote/ssh_transport.h"
#include "common/log.h"

namespace xft::cli {
namespace {

namespace comm = xft::engine::comm;

struct BenchFlags {
  int local = 0;
  std::string begin = "8";
  std::string end = "64M";
  double factor = 2;
  std::vector<std::string> dtypes;  // empty: float32 (bench), both (check)
  std::vector<std::string> algos;
  int iters = 0;
  int warmup = -1;
  std::string format = "oneccl";
  bool compare = false;
  bool tune = false;
  std::string tune_file;
  bool check = false;
  std::vector<std::string> check_counts;
  double timeout_s = 60;
  bool dry_run = false;
  int cores_per_rank = 0;
  std::string ranks;  // per-host ranks override for the inventory plan
  std::string hostfile;
  std::vector<std::string> env;  // -x
  ReachFlags reach;
  // Hidden: the rank side, and failure injection for the tests.
  bool rank_worker = false;
  int fail_rank = -1;
  std::string fail_at = "0";
  std::string fail_mode = "kill";
};

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Everything the ranks need, re-spelled as arguments of the worker command.
std::vector<std::string> worker_arguments(const BenchFlags& f) {
  std::vector<std::string> args{"bench", "allreduce", "--rank-worker", "-b", f.begin, "-e", f.end,
                                "-f", number(f.factor), "--format", f.format,
                                "--stall-timeout", number(f.timeout_s)};
  for (const auto& d : f.dtypes) args.insert(args.end(), {"--dtype", d});
  for (const auto& a : f.algos) args.insert(args.end(), {"--algo", a});
  if (f.iters > 0) args.insert(args.end(), {"-n", std::to_string(f.iters)});
  if (f.warmup >= 0) args.insert(args.end(), {"-w", std::to_string(f.warmup)});
  if (f.compare) args.push_back("--compare");
  // Not "--tune": Open MPI's mpirun takes that word anywhere on its command
  // line as its own --tune FILE, even after the program name.
  if (f.tune) args.push_back("--rank-tune");
  if (!f.tune_file.empty()) args.insert(args.end(), {"--tune-file", f.tune_file});
  if (f.check) args.push_back("--check");
  for (const auto& c : f.check_counts) args.insert(args.end(), {"--check-counts", c});
  if (f.fail_rank >= 0)
    args.insert(args.end(), {"--fail-rank", std::to_string(f.fail_rank), "--fail-at", f.fail_at,
                             "--fail-mode", f.fail_mode});
  return args;
}

// Checks that need no ranks, so a typo fails here and not in N ranks at once.
Expected<void> validate(const BenchFlags& f) {
  for (const auto& text : {f.begin, f.end, f.fail_at})
    if (auto b = comm::parse_byte_size(text); !b) return b.error();
  if (*comm::parse_byte_size(f.begin) > *comm::parse_byte_size(f.end))
    return make_error("-b " + f.begin + " is larger than -e " + f.end);
  if (f.factor <= 1.0) return make_error("-f must be greater than 1 (got " + std::to_string(f.factor) + ")");
  for (const auto& d : f.dtypes)
    if (!comm::parse_dtype(d)) return make_error("--dtype " + d + ": use float32 or bfloat16");
  if (!comm::is_bench_format(f.format))
    return make_error("--format " + f.format + ": use oneccl, nccl, json or csv");
  for (const auto& c : f.check_counts)
    if (auto b = comm::parse_byte_size(c); !b) return make_error("--check-counts " + c + ": " + b.error().message);
  if (f.timeout_s <= 0) return make_error("--stall-timeout must be positive");
  return {};
}

// ---- rank side --------------------------------------------------------------

int run_worker(const BenchFlags& f) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto fail = [&](const std::string& message) {
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    // "xftctl: rank N (host): why" is what run_ranks_oversubscribed looks for.
    log::error(fmt::format("rank {} ({}): {}", rank, host, message), {{"rank", rank}, {"host", host}});
    MPI_Abort(MPI_COMM_WORLD, exit_error);
    return exit_error;
  };
  if (auto ok = validate(f); !ok) return fail(ok.error().message);

  comm::ShmOptions shm = comm::shm_options_from_env();
  shm.timeout_s = f.timeout_s;
  auto allreducer = comm::Allreducer::create(MPI_COMM_WORLD, shm);
  if (!allreducer) return fail(allreducer.error().message);
  const auto& layout = (*allreducer)->layout();
  comm::Watchdog watchdog(
      f.timeout_s + 5, "rank " + std::to_string(rank) + " (" + layout.hostnames[size_t(rank)] + ")",
      [hosts = layout.hostnames](int peer) {
        return "rank " + std::to_string(peer) + " (" + hosts[size_t(peer)] + ")";
      });

  std::vector<comm::DType> dtypes;
  for (const auto& d : f.dtypes) dtypes.push_back(*comm::parse_dtype(d));
  int code = exit_ok;
  if (f.check) {
    comm::CheckConfig config;
    config.algos = f.algos;
    config.tune_file = f.tune_file;
    if (!dtypes.empty()) config.dtypes = dtypes;  // default: both
    for (const auto& c : f.check_counts) config.counts.push_back(*comm::parse_byte_size(c));
    auto outcome = comm::run_allreduce_check(**allreducer, config, std::cout, &watchdog);
    if (!outcome) return fail(outcome.error().message);
    code = outcome->failures ? exit_error : exit_ok;
  } else {
    comm::BenchConfig config;
    config.algos = f.algos;
    config.sizes = comm::size_sweep(*comm::parse_byte_size(f.begin), *comm::parse_byte_size(f.end), f.factor);
    if (!dtypes.empty()) config.dtypes = dtypes;
    config.iters = f.iters;
    config.warmup = f.warmup;
    config.compare = f.compare;
    config.tune = f.tune;
    config.tune_file = f.tune_file;
    config.format = f.format;
    config.fail_rank = f.fail_rank;
    config.fail_at_bytes = *comm::parse_byte_size(f.fail_at);
    config.fail_mode = f.fail_mode;
    auto outcome = comm::run_allreduce_bench(**allreducer, config, std::cout, &watchdog);
    if (!outcome) return fail(outcome.error().message);
    if (outcome->wrong > 0) {
      if (rank == 0)
        spdlog::error("bench allreduce: {} elements differ from the fp32 reference (#wrong)", outcome->wrong);
      code = exit_error;
    }
  }
  std::cout.flush();
  allreducer->reset();
  MPI_Finalize();
  return code;
}

// ---- control side ------------------------------------------------------------

int run_ranks_for(const Context& ctx, const BenchFlags& f, const std::vector<std::string>& command) {
  PlanFlags plan_flags;
  plan_flags.local_ranks = f.local;
  plan_flags.ranks = f.ranks;
  plan_flags.hostfile = f.hostfile;
  plan_flags.cores_per_rank = f.cores_per_rank;
  plan_flags.env = f.env;
  RankRun run;
  run.what = "bench allreduce";
  run.dry_run = f.dry_run;
  int failure_code = exit_error;
  auto planned = plan_for(ctx, plan_flags, f.reach, failure_code);
  if (!planned && f.local > 0) {
    // More local ranks than cores: still worth a correctness run.
    spdlog::info("{}; running {} unbound ranks instead", planned.error().message, f.local);
    return run_ranks_oversubscribed(f.local, command, run);
  }
  if (!planned) {
    log::error(planned.error().message);
    return failure_code;
  }
  auto mpirun = mpirun_for(*planned, f.reach, command);
  if (!mpirun) {
    spdlog::error("bench allreduce: {}", mpirun.error().message);
    return exit_error;
  }
  set_launch_site(run, *planned, f.reach);
  return run_ranks(planned->plan, *mpirun, run);
}

// oneCCL users set CCL_ALLREDUCE; with no --algo it is the selection to run.
// Every oneCCL-only name in it is said once, with what runs instead.
Expected<void> adopt_oneccl_selection(BenchFlags& f) {
  if (f.algos.empty() && !f.check)
    if (const char* env = std::getenv("CCL_ALLREDUCE"); env && *env) {
      if (auto ok = check_allreduce_selection("CCL_ALLREDUCE", env); !ok) return ok;
      f.algos = {env};
      spdlog::info("bench allreduce: --algo from CCL_ALLREDUCE={}", env);
    }
  for (const auto& a : f.algos) {
    if (auto ok = check_allreduce_selection("--algo", a, true); !ok) return ok;
    for (const auto& note : comm::oneccl_alias_notes(a)) spdlog::info("bench allreduce: {}", note);
  }
  return {};
}

int run_control(const Context& ctx, BenchFlags& f) {
  if (auto adopted = adopt_oneccl_selection(f); !adopted) {
    spdlog::error("bench allreduce: {}", adopted.error().message);
    return exit_error;
  }
  if (auto ok = validate(f); !ok) {
    spdlog::error("bench allreduce: {}", ok.error().message);
    return exit_error;
  }
  std::vector<std::string> command{self_path()};
  auto args = worker_arguments(f);
  command.insert(command.end(), args.begin(), args.end());
  return run_ranks_for(ctx, f, command);
}

}  // namespace

void add_bench_commands(CLI::App& app, Context& ctx) {
  auto* bench = app.add_subcommand("bench", "measure the cluster: allreduce algorithms");
  bench->require_subcommand(1);
  auto flags = std::make_shared<BenchFlags>();
  auto* cmd = bench->add_subcommand(
      "allreduce",
      "allreduce algorithms (mpi, ring, recursive_doubling, rabenseifner, direct, shm, hier) over a size sweep, "
      "checked against an fp32 reference; oneCCL/nccl-tests tables, JSON or CSV");
  cmd->add_option("--local", flags->local, "N ranks on this host (no inventory)")->check(CLI::PositiveNumber);
  cmd->add_option("-b,--minbytes", flags->begin, "smallest message, bytes (K/M/G suffixes)")->capture_default_str();
  cmd->add_option("-e,--maxbytes", flags->end, "largest message, bytes")->capture_default_str();
  cmd->add_option("-f,--stepfactor", flags->factor, "size multiplier between steps")->capture_default_str();
  cmd->add_option("--dtype", flags->dtypes, "float32 and/or bfloat16 (comma list; default float32, --check: both)")->delimiter(',');
  cmd->add_option("--algo", flags->algos,
                  "algorithms to run (comma list; default all that fit the layout): names, 'auto', or a "
                  "oneCCL selection like 'recursive_doubling:0-16384;ring:16385-max'")
      ->delimiter(',');
  cmd->add_option("-n,--iters", flags->iters, "timed repetitions per size (default: about 50 ms worth)");
  cmd->add_option("-w,--warmup_iters", flags->warmup, "warm-up repetitions per size (default: by size)");
  cmd->add_option("--format", flags->format, "oneccl | nccl | json | csv")->capture_default_str();
  cmd->add_flag("--compare", flags->compare, "also show each algorithm's time relative to MPI_Allreduce");
  cmd->add_flag("--tune", flags->tune, "measure every algorithm and save the fastest per size for --algo auto");
  cmd->add_option("--tune-file", flags->tune_file, "tune table (default ~/.cache/xftctl/allreduce-tune.json on rank 0's host)");
  cmd->add_flag("--check", flags->check,
                "correctness only: every algorithm at many awkward element counts, float32 and bfloat16");
  cmd->add_option("--check-counts", flags->check_counts, "element counts for --check (comma list)")->delimiter(',');
  cmd->add_option("--stall-timeout", flags->timeout_s, "seconds without progress before a rank gives up, naming the peer it waits for")
      ->capture_default_str();
  cmd->add_option("--cores-per-rank", flags->cores_per_rank, "cap on cores per rank in the plan");
  cmd->add_option("--ranks-per-host", flags->ranks, "override the inventory's ranks: N, per-socket or per-numa");
  add_hostfile_flag(*cmd, flags->hostfile);
  cmd->add_flag("--dry-run", flags->dry_run, "print the mpirun command and exit");
  cmd->add_option("-x,--env", flags->env,
                  "VAR=VALUE for every rank (PSM3_*, FI_*), or VAR: its value from xftctl's environment, which "
                  "never appears on a command line (repeatable)")
      ->allow_extra_args(false);
  add_reach_flags(*cmd, flags->reach);
  cmd->add_flag("--rank-worker", flags->rank_worker)->group("");
  cmd->add_flag("--rank-tune", flags->tune)->group("");
  cmd->add_option("--fail-rank", flags->fail_rank)->group("");
  cmd->add_option("--fail-at", flags->fail_at)->group("");
  cmd->add_option("--fail-mode", flags->fail_mode)->group("");
  cmd->callback([&ctx, flags] {
    ctx.exit_code = flags->rank_worker ? run_worker(*flags) : run_control(ctx, *flags);
  });
}

}  // namespace xft::cli
