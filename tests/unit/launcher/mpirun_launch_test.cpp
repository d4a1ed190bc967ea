// launch(): mpirun output parsing, and real local Open MPI runs (2 ranks on
// this machine): binding, a failing rank, the launch timeout, environment that
// reaches the ranks without a command line, and mpirun starting a "remote"
// daemon through the generated ssh agent script (a stub ssh runs it here).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

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

// Open MPI 4.1 output in which the "Process name: / Exit code:" block is missing.
const std::vector<std::string> kStateTrace = {
    "[vm:11883] [[10596,0],0] ACTIVATE PROC [[10596,1],0] STATE RUNNING AT ../../../../orte/mca/odls/base/odls_base_default_fns.c:1010",
    "[vm:11883] [[10596,0],0] ACTIVATE PROC [[10596,1],1] STATE IOF COMPLETE AT ../../../../orte/mca/iof/hnp/iof_hnp_read.c:233",
    "[vm:11883] [[10596,0],0] ACTIVATE PROC [[10596,1],1] STATE EXITED WITH NON-ZERO STATUS AT ../../../../../orte/mca/odls/base/odls_base_default_fns.c:1746",
    "[vm:11883] [[10596,0],0] ACTIVATE PROC [[10596,1],0] STATE ABORTED BY SIGNAL AT ../../../../../orte/mca/odls/base/odls_base_default_fns.c:1746",
};

TEST(LaunchOutput, StateTraceLinesAreRecognized) {
  EXPECT_TRUE(is_state_trace_line(kStateTrace[0]));
  EXPECT_TRUE(is_state_trace_line(
      "[vm:17818] [[10596,0],0] ACTIVATE JOB [10596,1] STATE RUNNING AT ../../../../orte/mca/plm/base/plm_base_launch_support.c:573"));
  EXPECT_FALSE(is_state_trace_line("[1,0]<stderr>:[x] y ACTIVATE PROC p STATE s AT f"));
  EXPECT_FALSE(is_state_trace_line("Primary job  terminated normally, but 1 process returned"));
}

TEST(LaunchOutput, FailedRankFromStateTraceWhenTheReportIsMissing) {
  auto failure = failure_from_state_trace(kStateTrace, 3);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->rank, 1);
  EXPECT_EQ(failure->exit_code, 3);
  EXPECT_EQ(failure->signal, 0);
}

TEST(LaunchOutput, KilledRankFromStateTrace) {
  auto failure = failure_from_state_trace({kStateTrace[0], kStateTrace[3]}, 137);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->rank, 0);
  EXPECT_EQ(failure->signal, 9);
  EXPECT_FALSE(failure_from_state_trace({kStateTrace[0], kStateTrace[1]}, 3));
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
  ASSERT_TRUE(result->failure) << result->summary() << "\n" << ::testing::PrintToString(result->mpirun_messages);
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

const char* kSecret = "s3cr3t-Value-9f2c";

bool mentions_secret(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (t.find(kSecret) != std::string::npos) return true;
  return false;
}

TEST(LaunchLocal, ChildEnvReachesEveryRankAndNoCommandLine) {
  if (!have_two_cpus()) GTEST_SKIP() << "needs 2 CPUs";
  // Each rank prints the value, then the command line of its parent, mpirun.
  // One write per line: Open MPI 4 may tag a line's pieces as lines of their own.
  auto run = local_run(
      {"sh", "-c", "printf '%s\\n' \"$XFT_TEST_SECRET\"; printf '%s\\n' \"$(tr '\\0' ' ' </proc/$PPID/cmdline)\""});
  run.spec.mpirun.pass_env = {"XFT_TEST_SECRET"};
  run.spec.child_env = {{"XFT_TEST_SECRET", kSecret}};
  auto result = launch(run.spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->exit_code, 0) << result->summary();
  for (int rank = 0; rank < 2; ++rank) {
    const auto& lines = result->stdout_lines[rank];
    ASSERT_EQ(lines.size(), 2u) << "rank " << rank << ": " << ::testing::PrintToString(lines);
    EXPECT_EQ(lines[0], kSecret) << "rank " << rank;
    EXPECT_NE(lines[1].find("--tag-output"), std::string::npos) << "not mpirun's command line: " << lines[1];
    EXPECT_NE(lines[1].find(" -x XFT_TEST_SECRET "), std::string::npos) << lines[1];
    EXPECT_EQ(lines[1].find(kSecret), std::string::npos) << "the value is on mpirun's command line";
  }
  EXPECT_FALSE(mentions_secret(result->command));
  EXPECT_EQ(std::getenv("XFT_TEST_SECRET"), nullptr) << "set in xftctl's own environment";
}

TEST(LaunchLocal, ChildEnvNameMustBeAVariableName) {
  auto run = local_run({"true"});
  run.spec.child_env = {{"A=B", "x"}};
  auto result = launch(run.spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "cannot pass A=B to mpirun's environment: not a variable name");
}

// mpirun as it runs for an inventory: 127.0.0.2 is not one of this machine's
// addresses, so Open MPI starts its daemon there through the ssh agent script.
// The stub ssh on PATH records its argv and runs the daemon here.
class LaunchThroughAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xft-launch-agent.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (const char* old = std::getenv("TMPDIR")) old_tmpdir_ = old;
    ::setenv("TMPDIR", dir_.c_str(), 1);  // the agent's directory goes here, to check it is removed
    std::filesystem::create_directories(dir_ + "/bin");
    // As root, the daemon runs where TMPDIR (and so the agent script) is
    // hidden under a tmpfs, as on a real host, which has a /tmp of its own.
    std::ofstream(dir_ + "/bin/ssh")
        << "#!/bin/sh\n"
           "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >>'" << dir_ << "/ssh.log'\n"
           "while [ \"$1\" != -- ]; do shift; done\n"
           "shift 2\n"
           "[ \"$(id -u)\" = 0 ] || exec sh -c \"$*\"\n"
           "exec unshare -m sh -c 'mount -t tmpfs tmpfs \"$0\" && exec sh -c \"$1\"' '" << dir_ << "' \"$*\"\n";
    ::chmod((dir_ + "/bin/ssh").c_str(), 0755);
  }
  void TearDown() override {
    if (old_tmpdir_) ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
    else ::unsetenv("TMPDIR");
    std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> ssh_log() {
    std::ifstream in(dir_ + "/ssh.log");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string dir_;
  std::optional<std::string> old_tmpdir_;
};

TEST_F(LaunchThroughAgent, HostileUserIsOneArgumentAndTheSecretStaysOffTheSshLine) {
  PlanOptions options;
  options.cores_per_rank = 1;
  auto plan = plan_local(1, "/", options);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  plan->ranks[0].address = "127.0.0.2";
  LaunchSpec spec;
  spec.plan = *plan;
  spec.mpirun.as_root = geteuid() == 0;
  spec.mpirun.provider = "tcp;ofi_rxm";
  spec.mpirun.oob_subnet = "lo";
  std::string marker = dir_ + "/PWNED";
  spec.mpirun.ssh = {"/tmp/key dir/id_ed25519", dir_ + "/known_hosts", "root -o ProxyCommand=touch${IFS}" + marker,
                     2222};
  spec.mpirun.pass_env = {"XFT_TEST_SECRET"};
  spec.mpirun.command = {"sh", "-c", "printf '%s\\n' \"$XFT_TEST_SECRET\""};
  spec.child_env = {{"PATH", dir_ + "/bin:" + std::getenv("PATH")}, {"XFT_TEST_SECRET", kSecret}};
  spec.timeout = std::chrono::seconds(60);
  spec.on_output = [](const OutputLine&) {};
  auto result = launch(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  std::string mpirun_said;
  for (const auto& l : result->mpirun_messages) mpirun_said += l + "\n";
  ASSERT_EQ(result->exit_code, 0) << result->summary() << "\n" << mpirun_said;
  EXPECT_EQ(result->stdout_lines[0], std::vector<std::string>{kSecret});

  auto agent = std::find(result->command.begin(), result->command.end(), "plm_rsh_agent");
  ASSERT_NE(agent, result->command.end());
  ASSERT_EQ((agent + 1)->rfind("/bin/sh " + dir_ + "/xftctl-launch.", 0), 0u) << *(agent + 1);
  std::string agent_path = (agent + 1)->substr(8);
  EXPECT_FALSE(std::filesystem::exists(agent_path)) << "the agent script outlived the launch";
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(agent_path).parent_path()));

  auto log = ssh_log();
  std::vector<std::string> expected = {"-x", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                                       "-o", "UserKnownHostsFile=\"" + dir_ + "/known_hosts\"",
                                       "-o", "IdentitiesOnly=yes", "-i", "/tmp/key dir/id_ed25519",
                                       "-l", "root -o ProxyCommand=touch${IFS}" + marker, "-p", "2222", "--",
                                       "127.0.0.2"};
  ASSERT_GT(log.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + expected.size()), expected);
  EXPECT_NE(std::find(log.begin(), log.end(), " orted"), log.end()) << "not Open MPI's daemon";
  EXPECT_FALSE(mentions_secret(log)) << "the value is on the ssh command line";
  EXPECT_FALSE(mentions_secret(result->command));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(LaunchThroughAgent, AgentDirectoryIsRemovedWhenMpirunCannotStart) {
  PlanOptions options;
  options.cores_per_rank = 1;
  auto plan = plan_local(1, "/", options);
  ASSERT_TRUE(plan.ok());
  plan->ranks[0].address = "10.9.0.11";
  LaunchSpec spec;
  spec.plan = *plan;
  spec.mpirun.mpirun = "/nonexistent/mpirun";
  spec.mpirun.command = {"true"};
  auto result = launch(spec);
  ASSERT_FALSE(result.ok());
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().rfind("xftctl-launch.", 0), std::string::npos) << entry.path();
}

// A stub mpirun first on PATH that prints another MPI's --version banner.
class ForeignMpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xft-foreign-mpi.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    old_path_ = std::getenv("PATH");
    ::setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  void stub(const std::string& banner) {
    std::ofstream(dir_ + "/mpirun") << "#!/bin/sh\n[ \"$1\" = --version ] || exit 99\ncat <<'EOF'\n" << banner << "EOF\n";
    ::chmod((dir_ + "/mpirun").c_str(), 0755);
  }
  std::string dir_, old_path_;
};

const std::string kFix =
    "; xftctl builds Open MPI command lines: set XFTCTL_MPIRUN to Open MPI's mpirun (/usr/bin/mpirun.openmpi on "
    "Debian/Ubuntu, /usr/lib64/openmpi/bin/mpirun on RHEL/Alibaba Cloud Linux, /opt/amazon/openmpi/bin/mpirun with "
    "EFA)";

TEST_F(ForeignMpirun, IntelMpiIsRefusedWithTheFix) {
  stub("Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)\n"
       "Copyright 2003-2023, Intel Corporation.\n");
  auto major = detect_open_mpi_major("mpirun");
  ASSERT_FALSE(major.ok());
  EXPECT_EQ(major.error().message,
            "mpirun is Intel MPI (Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: "
            "c2e19c2f3e))" + kFix);
}

TEST_F(ForeignMpirun, MpichIsRefusedWithTheFix) {
  stub("HYDRA build details:\n"
       "    Version:                                 4.0.2\n"
       "    Release Date:                            Thu Mar 31 10:52:53 CDT 2022\n"
       "    Process Manager:                         pmi\n"
       "    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist\n");
  auto major = detect_open_mpi_major("mpirun");
  ASSERT_FALSE(major.ok());
  EXPECT_EQ(major.error().message, "mpirun is MPICH (HYDRA build details:)" + kFix);
}

TEST_F(ForeignMpirun, OpenMpiIsItsMajorVersion) {
  stub("mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n");
  auto major = detect_open_mpi_major("mpirun");
  ASSERT_TRUE(major.ok()) << major.error().message;
  EXPECT_EQ(*major, 5);
  // A missing mpirun is left to launch(), which says how to install Open MPI.
  EXPECT_EQ(*detect_open_mpi_major(dir_ + "/nonexistent"), 4);
}

TEST_F(ForeignMpirun, ThePathIsOneArgumentNotShellText) {
  stub("mpirun (Open MPI) 4.1.4\n");
  std::string marker = dir_ + "/ran";
  auto major = detect_open_mpi_major("mpirun; touch " + marker);
  ASSERT_TRUE(major.ok()) << major.error().message;
  EXPECT_EQ(*major, 4);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(ForeignMpirun, EfasOpenMpiIsPreferredWhenInstalled) {
  const char* custom = std::getenv("XFTCTL_MPIRUN");
  std::optional<std::string> saved = custom ? std::optional<std::string>(custom) : std::nullopt;
  ::unsetenv("XFTCTL_MPIRUN");
  EXPECT_EQ(default_mpirun(dir_), "mpirun");
  std::filesystem::create_directories(dir_ + "/opt/amazon/openmpi/bin");
  std::ofstream(dir_ + "/opt/amazon/openmpi/bin/mpirun") << "#!/bin/sh\n";
  ::chmod((dir_ + "/opt/amazon/openmpi/bin/mpirun").c_str(), 0755);
  EXPECT_EQ(default_mpirun(dir_ + "/"), dir_ + "/opt/amazon/openmpi/bin/mpirun");
  ::setenv("XFTCTL_MPIRUN", "/usr/bin/mpirun.openmpi", 1);
  EXPECT_EQ(default_mpirun(dir_), "/usr/bin/mpirun.openmpi");
  if (saved) ::setenv("XFTCTL_MPIRUN", saved->c_str(), 1);
  else ::unsetenv("XFTCTL_MPIRUN");
}

TEST_F(ForeignMpirun, RhelOpenMpiOffPathIsFoundWhereTheDistributionPutsIt) {
  const char* custom = std::getenv("XFTCTL_MPIRUN");
  std::optional<std::string> saved_custom = custom ? std::optional<std::string>(custom) : std::nullopt;
  const std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::unsetenv("XFTCTL_MPIRUN");
  const std::string rhel = dir_ + "/usr/lib64/openmpi/bin";
  std::filesystem::create_directories(rhel);
  std::filesystem::create_directories(dir_ + "/bin");
  std::ofstream(rhel + "/mpirun") << "#!/bin/sh\n";
  ::chmod((rhel + "/mpirun").c_str(), 0755);
  ::setenv("PATH", (dir_ + "/bin").c_str(), 1);
  EXPECT_EQ(default_mpirun(dir_), rhel + "/mpirun");  // not on PATH: the distribution's place
  std::ofstream(dir_ + "/bin/mpirun") << "#!/bin/sh\n";
  ::chmod((dir_ + "/bin/mpirun").c_str(), 0755);
  EXPECT_EQ(default_mpirun(dir_), "mpirun");  // on PATH (a loaded module): that one
  ::setenv("PATH", saved_path.c_str(), 1);
  if (saved_custom) ::setenv("XFTCTL_MPIRUN", saved_custom->c_str(), 1);
}

}  // namespace
}  // namespace xft::launcher
