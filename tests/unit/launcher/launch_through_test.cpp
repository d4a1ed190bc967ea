// launch_through(): mpirun on the first host behind a bastion is one shell
// line sent over SSH, with the ranks' secrets on its standard input. Here a
// real /bin/sh stands in for the first host's shell and a stub mpirun on its
// PATH records the argv and environment it got, so every first_host_arg and
// first_host_env row of the hostile corpus is checked as that shell reads it:
// literal rows arrive byte for byte, reject rows are refused in one line
// naming the variable, and no row leaves a marker file behind.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/launch.h"
#include "tests/unit/hostile_corpus.h"
#include "tests/unit/support/files.h"

extern char** environ;

namespace xft::launcher {
namespace {

namespace fs = std::filesystem;
using xft::testing::describe_row;
using xft::testing::HostileRow;
using xft::testing::read_hostile_corpus;

using xft::test::slurp;

// The first host as a local /bin/sh: commands run with `bin` first on PATH,
// files land where they are named.
class LocalShellSession : public remote::RemoteSession {
 public:
  LocalShellSession(std::string bin, std::string scratch) : bin_(std::move(bin)), scratch_(std::move(scratch)) {
    host_.name = host_.address = "h01";
  }
  const inventory::Host& host() const override { return host_; }
  std::string host_key() const override { return ""; }

  remote::Remote<remote::CommandResult> run(const std::string& command, const remote::RunOptions& options) override {
    std::ofstream(scratch_ + "/in", std::ios::binary) << options.stdin_data;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, (scratch_ + "/in").c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, (scratch_ + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (scratch_ + "/err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::string path = "PATH=" + bin_ + ":/usr/bin:/bin";
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    const char* envp[] = {path.c_str(), "LC_ALL=C", nullptr};
    pid_t pid = 0;
    remote::CommandResult result;
    int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv),
                              const_cast<char* const*>(envp));
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return remote::RemoteError{remote::Failure::other, "cannot run /bin/sh"};
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    result.out = slurp(scratch_ + "/out");
    result.err = slurp(scratch_ + "/err");
    if (options.on_output) {
      options.on_output(false, result.out);
      options.on_output(true, result.err);
    }
    return result;
  }
  remote::Remote<void> upload(const std::string& content, const std::string& path, mode_t mode) override {
    std::ofstream(path, std::ios::binary) << content;
    ::chmod(path.c_str(), mode);
    return {};
  }
  remote::Remote<void> upload_file(const std::string&, const std::string&) override { return unsupported(); }
  remote::Remote<std::string> download(const std::string&) override { return unsupported(); }
  remote::Remote<remote::RemoteFileInfo> stat(const std::string&) override { return unsupported(); }
  remote::Remote<void> mkdir(const std::string&, mode_t) override { return unsupported(); }

 private:
  static remote::RemoteError unsupported() { return {remote::Failure::other, "not used by launch_through"}; }
  inventory::Host host_;
  std::string bin_, scratch_;
};

class LaunchThrough : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/xft-launch-through.XXXXXX";
    dir_ = ::mkdtemp(dir);
    fs::create_directories(dir_ + "/bin");
    // The stub mpirun: its argv NUL-separated, the forwarded variable as it
    // reached mpirun's environment.
    std::ofstream(dir_ + "/bin/mpirun") << "#!/bin/sh\n"
                                           ": >'" << dir_ << "/argv'\n"
                                           "for a in \"$@\"; do printf '%s\\0' \"$a\" >>'" << dir_ << "/argv'; done\n"
                                           "printf '%s' \"$XFT_HOSTILE\" >'" << dir_ << "/env'\n";
    ::chmod((dir_ + "/bin/mpirun").c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LaunchSpec spec(const std::string& argument, const std::string& secret) const {
    LaunchSpec spec;
    RankPlacement rank;
    rank.rank = 0;
    rank.host = "h02";
    rank.address = "10.9.0.12";
    rank.cpus = {0};
    rank.memory_nodes = {0};
    spec.plan.ranks = {rank};
    spec.mpirun.ssh = {"/home/ec2-user/.ssh/id_ed25519", "/home/ec2-user/.ssh/known_hosts", "ec2-user", 22};
    spec.mpirun.command = {"/opt/xft/xftctl", "rank", argument};
    spec.mpirun.pass_env = {"XFT_HOSTILE"};
    spec.child_env = {{"XFT_HOSTILE", secret}};
    spec.on_output = [](const OutputLine&) {};
    return spec;
  }

  std::vector<std::string> mpirun_argv() const {
    std::vector<std::string> words;
    std::string all = slurp(dir_ + "/argv");
    for (size_t start = 0; start < all.size();) {
      size_t end = all.find('\0', start);
      words.push_back(all.substr(start, end - start));
      start = end + 1;
    }
    return words;
  }

  static bool marker_left() { return fs::exists("/tmp/PWNED-first-host"); }

  std::string dir_;
};

TEST_F(LaunchThrough, HostileRowsReachMpirunOnTheFirstHostByteForByte) {
  int literal = 0, rejected = 0;
  for (const auto& row : read_hostile_corpus()) {
    if (row.field != "first_host_arg" && row.field != "first_host_env") continue;
    bool is_arg = row.field == "first_host_arg";
    LocalShellSession session(dir_ + "/bin", dir_);
    fs::remove(dir_ + "/argv");
    auto result = launch_through(spec(is_arg ? row.value : "plain", is_arg ? "plain" : row.value), session);
    if (row.expect == "literal") {
      ASSERT_TRUE(result.ok()) << describe_row(row) << ": " << result.error().message;
      EXPECT_EQ(0, result->exit_code) << describe_row(row);
      auto argv = mpirun_argv();
      ASSERT_GE(argv.size(), 3u) << describe_row(row);
      EXPECT_EQ((std::vector<std::string>{"/opt/xft/xftctl", "rank", is_arg ? row.value : "plain"}),
                std::vector<std::string>(argv.end() - 3, argv.end()))
          << describe_row(row);
      EXPECT_EQ(is_arg ? "plain" : row.value, slurp(dir_ + "/env")) << describe_row(row);
      ++literal;
    } else {
      ASSERT_FALSE(result.ok()) << describe_row(row) << ": accepted";
      const std::string& message = result.error().message;
      EXPECT_EQ(std::string::npos, message.find('\n')) << describe_row(row) << ": one line";
      EXPECT_EQ(0u, message.rfind("XFT_HOSTILE ", 0)) << describe_row(row) << ": names the variable: " << message;
      EXPECT_FALSE(fs::exists(dir_ + "/argv")) << describe_row(row) << ": mpirun ran";
      ++rejected;
    }
    EXPECT_FALSE(marker_left()) << describe_row(row) << ": a marker file in /tmp";
  }
  EXPECT_GE(literal, 4);
  EXPECT_GE(rejected, 1);
}

}  // namespace
}  // namespace xft::launcher
