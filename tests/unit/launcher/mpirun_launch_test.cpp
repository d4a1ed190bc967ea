// launch(): mpirun output parsing, and real local Open MPI runs (2 ranks on
// this machine): binding, a failing rank, and the launch timeout.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "launcher/launch.h"

namespace xft::launcher {
namespace {

TEST(LaunchOutput, TaggedLines) {
  OutputLine line;
  ASSERT_TRUE(parse_tagged_line("[1,3]<stderr>:boom: it failed", 4, line));
  EXPECT_EQ(line.rank, 3);
  EXPECT_TRUE(line.is_stderr);
  EXPECT_EQ(line.text, "boom: it failed");
  ASSERT_TRUE(parse_tagged_line("[1,12]<stdout>: indented", 4, line));
  EXPECT_EQ(line.rank, 12);
  EXPECT_EQ(line.text, " indented");
  ASSERT_TRUE(parse_tagged_line("[1,12]<stdout>: text", 5, line));
  EXPECT_EQ(line.text, "text");
  EXPECT_FALSE(parse_tagged_line("Primary job  terminated normally, but 1 process returned", 4, line));
  // A long write forwarded in two chunks: Open MPI 4 tags the second one mid-line.
  ASSERT_TRUE(parse_tagged_line("[1,0]<stdout>:    \"t_max_us\": 0.5,[1,0]<stdout>:", 4, line));
  EXPECT_EQ(line.text, "    \"t_max_us\": 0.5,");
  ASSERT_TRUE(parse_tagged_line("[1,0]<stdout>:abc[1,0]<stdout>:def", 4, line));
  EXPECT_EQ(line.text, "abcdef");
}

TEST(LaunchOutput, FailedRankFromExitCodeMessage) {
  std::vector<std::string> messages = {
      "--------------------------------------------------------------------------",
      "mpirun detected that one or more processes exited with non-zero status, thus causing",
      "the job to be terminated. The first process to do so was:",
      "",
      "  Process name: [[22450,1],1]",
      "  Exit code:    3",
  };
  auto failure = find_failed_rank(messages);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->rank, 1);
  EXPECT_EQ(failure->exit_code, 3);
  EXPECT_EQ(failure->signal, 0);
}

TEST(LaunchOutput, FailedRankFromSignalMessage) {
  auto failure = find_failed_rank(
      {"mpirun noticed that process rank 2 with PID 0 on node h03 exited on signal 9 (Killed)."});
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->rank, 2);
  EXPECT_EQ(failure->signal, 9);
  EXPECT_FALSE(find_failed_rank({"all good"}));
}

TEST(LaunchOutput, SummaryNamesRankHostAndStderr) {
  LaunchResult r;
  r.exit_code = 3;
  r.failure = RankFailure{1, "h02", "10.0.0.12", 3, 0, {"loading weights", "error: file not found"}};
  EXPECT_EQ(r.summary(),
            "rank 1 (h02, 10.0.0.12) exited with code 3; mpirun stopped every other rank\n"
            "last stderr of rank 1:\n  loading weights\n  error: file not found");
}

struct LocalRun {
  RankPlan plan;
  LaunchSpec spec;
};

LocalRun local_run(std::vector<std::string> command) {
  PlanOptions o;
  o.cores_per_rank = 1;
  auto plan = plan_local(2, "/", o);
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().message);
  LocalRun run;
  run.plan = *plan;
  auto mpirun = mpirun_spec_for(run.plan, {}, "", std::move(command));
  EXPECT_TRUE(mpirun.ok());
  run.spec.plan = run.plan;
  run.spec.mpirun = *mpirun;
  run.spec.on_output = [](const OutputLine&) {};
  return run;
}

// Alive and not a zombie waiting for init to reap it.
bool running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  size_t close = stat.rfind(')');
  return close != std::string::npos && stat.substr(close + 2, 1) != "Z";
}

bool have_two_cpus() { return sysconf(_SC_NPROCESSORS_ONLN) >= 2; }

TEST(LaunchLocal, EachRankRunsOnItsPlannedCpus) {
  if (!have_two_cpus()) GTEST_SKIP() << "needs 2 CPUs";
  auto run = local_run({"sh", "-c", "grep Cpus_allowed_list /proc/self/status; echo omp=$OMP_NUM_THREADS"});
  auto result = launch(run.spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->exit_code, 0) << result->summary();
  for (const auto& r : run.plan.ranks) {
    std::vector<std::string> expected = {"Cpus_allowed_list:\t" + format_cpu_list(r.cpus), "omp=1"};
    EXPECT_EQ(result->stdout_lines[r.rank], expected) << "rank " << r.rank;
  }
}

TEST(LaunchLocal, FailingRankIsNamedAndTheOtherIsStopped) {
  if (!have_two_cpus()) GTEST_SKIP() << "needs 2 CPUs";
  auto run = local_run({"sh", "-c",
                        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then echo step one >&2; echo broken >&2; exit 3; fi; "
                        "sleep 60"});
  auto start = std::chrono::steady_clock::now();
  auto result = launch(run.spec);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_NE(result->exit_code, 0);
  ASSERT_TRUE(result->failure) << result->summary();
  EXPECT_EQ(result->failure->rank, 1);
  EXPECT_EQ(result->failure->exit_code, 3);
  EXPECT_EQ(result->failure->last_stderr, (std::vector<std::string>{"step one", "broken"}));
  EXPECT_LT(elapsed, std::chrono::seconds(30));
}

TEST(LaunchLocal, TimeoutStopsEveryRank) {
  if (!have_two_cpus()) GTEST_SKIP() << "needs 2 CPUs";
  std::string pid_dir = "/tmp/xft-launch-timeout-" + std::to_string(getpid());
  mkdir(pid_dir.c_str(), 0700);
  auto run = local_run({"sh", "-c", "echo $$ > " + pid_dir + "/$OMPI_COMM_WORLD_RANK; exec sleep 300"});
  run.spec.timeout = std::chrono::seconds(3);
  run.spec.kill_grace = std::chrono::seconds(2);
  auto start = std::chrono::steady_clock::now();
  auto result = launch(run.spec);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->timed_out);
  EXPECT_EQ(result->exit_code, 124);
  EXPECT_EQ(result->summary(), "launch timed out: every rank was stopped");
  EXPECT_LT(elapsed, std::chrono::seconds(15));
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(pid_dir + "/" + std::to_string(rank));
    pid_t pid = 0;
    ASSERT_TRUE(in >> pid) << "rank " << rank << " never started";
    EXPECT_FALSE(running(pid)) << "rank " << rank << " (pid " << pid << ") still running";
  }
  std::system(("rm -rf " + pid_dir).c_str());
}

TEST(LaunchLocal, MissingMpirunIsAnError) {
  auto run = local_run({"true"});
  run.spec.mpirun.mpirun = "/nonexistent/mpirun";
  auto result = launch(run.spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "cannot run /nonexistent/mpirun: No such file or directory "
                                    "(install Open MPI: apt-get install openmpi-bin)");
}

}  // namespace
}  // namespace xft::launcher
