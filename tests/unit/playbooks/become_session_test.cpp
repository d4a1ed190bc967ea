// become: sudo. The commands run for real here through a sudo stand-in that
// behaves as sudo does for what xftctl sends: `-n` refuses when the host
// "asks a password" (a marker file), `-k -S -p ''` reads the password line
// from standard input and compares it; both then run the argv after `--`.
// What is checked: the argv on the wire, where the password goes (stdin,
// never a command line), the files root's writes leave, and the one line a
// host that asks a password nobody gave fails with, alone.
#include "playbooks/become_session.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "playbooks/playbook.h"
#include "playbooks/runner.h"
#include "tests/unit/playbooks/fake_host.h"
#include "tests/unit/playbooks/hostile_corpus.h"
#include "tests/unit/support/files.h"

namespace xft::playbooks {
namespace {

namespace fs = std::filesystem;
using testing::FakeHost;

using xft::test::slurp;

using xft::test::mode_of;

constexpr const char* kSudoStandIn =
    "#!/bin/sh\n"
    "dir=$(dirname \"$0\")/..\n"
    "case \"$1\" in\n"
    "  -n) [ -e \"$dir/asks-password\" ] && { echo 'sudo: a password is required' >&2; exit 1; }\n"
    "      [ \"$2\" = -- ] || exit 99; shift 2 ;;\n"
    "  -k) [ \"$2 $3 $4 $5\" = \"-S -p  --\" ] || exit 99; shift 5\n"
    "      IFS= read -r given || given=''\n"
    "      [ \"$given\" = \"$(cat \"$dir/password\")\" ] || {\n"
    "        echo 'Sorry, try again.' >&2; echo 'sudo: 1 incorrect password attempt' >&2; exit 1; } ;;\n"
    "  *) exit 99 ;;\n"
    "esac\n"
    "exec \"$@\"\n";

class Become : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = dir_.work() + "/bin";
    fs::create_directories(bin_);
    std::ofstream(bin_ + "/sudo") << kSudoStandIn;
    fs::permissions(bin_ + "/sudo", fs::perms::owner_all);
    std::ofstream(dir_.work() + "/password") << "s3cret pass\n";
  }
  FakeHost& add(const std::string& name, bool asks_password) {
    auto& host = transport_.add(name, "10.0.0." + std::to_string(transport_.inventory_hosts().size() + 1));
    host.host.user = "ec2-user";
    host.host.become = inventory::Become::sudo;
    host.handler = [bin = bin_, asks_password, work = dir_.work()](FakeHost& self, const std::string& command) {
      // Each host's own stand-in dir, so that one asks a password and the other does not.
      std::string here = work + "/" + self.host.name;
      fs::create_directories(here + "/bin");
      fs::copy_file(bin + "/sudo", here + "/bin/sudo", fs::copy_options::overwrite_existing);
      fs::copy_file(work + "/password", here + "/password", fs::copy_options::overwrite_existing);
      if (asks_password) std::ofstream(here + "/asks-password");
      return testing::run_locally(command, self.stdin_data, here + "/bin");
    };
    return host;
  }
  std::string path(const std::string& name) const { return dir_.work() + "/" + name; }

  testing::MarkerDir dir_;
  std::string bin_;
  testing::FakeTransport transport_;
};

TEST_F(Become, RootsWritesGoThroughSudoNAsAnArgvAndLeaveTheFileWithItsMode) {
  auto& host = add("n1", false);
  testing::FakeSession login(host);
  BecomeSession root(login, "");
  ASSERT_TRUE(root.upload("one\ntwo\n", path("hostfile"), 0640).ok());
  EXPECT_EQ("one\ntwo\n", slurp(path("hostfile")));
  EXPECT_EQ(0640u, mode_of(path("hostfile")));
  ASSERT_TRUE(root.upload("three\n", path("hostfile"), 0644).ok());
  EXPECT_EQ("three\n", slurp(path("hostfile")));
  EXPECT_EQ(0644u, mode_of(path("hostfile")));
  EXPECT_TRUE(host.writes.empty()) << "nothing through the login user's SFTP";
  for (const auto& command : host.commands) EXPECT_EQ(0u, command.rfind("sudo -n -- ", 0)) << command;
  auto info = root.stat(path("hostfile"));
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->exists);
  EXPECT_EQ(0644u, info->mode);
  EXPECT_EQ(6u, info->size);
  EXPECT_FALSE(root.stat(path("missing"))->exists);
  EXPECT_EQ("three\n", *root.download(path("hostfile")));
  ASSERT_TRUE(root.mkdir(path("etc/xftctl"), 0755).ok());
  EXPECT_TRUE(fs::is_directory(path("etc/xftctl")));
  auto ran = root.run("echo \"$0\" \"it's\"");
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ("sh it's\n", ran->out);
  // No temp file beside the target.
  EXPECT_EQ(std::vector<std::string>{}, [&] {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir_.work()))
      if (entry.path().filename().string().find("xftctl-tmp") != std::string::npos) left.push_back(entry.path());
    return left;
  }());
}

TEST_F(Become, ThePasswordGoesToSudosStdinOnlyAndNeverReachesTheCommand) {
  auto& host = add("n1", true);
  testing::FakeSession login(host);
  BecomeSession root(login, "s3cret pass");
  ASSERT_TRUE(root.upload("content\n", path("f"), 0600).ok());
  EXPECT_EQ("content\n", slurp(path("f")));
  auto ran = root.run("cat");
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ("", ran->out) << "the command's stdin holds nothing of the password";
  EXPECT_EQ("s3cret pass\n", host.stdin_data);
  EXPECT_EQ("sudo -n -- true", host.commands.at(0)) << "whether sudo asks at all, asked first";
  for (size_t i = 1; i < host.commands.size(); ++i) {
    const auto& command = host.commands[i];
    EXPECT_EQ(0u, command.rfind("sudo -k -S -p '' -- ", 0)) << command;
    EXPECT_EQ(std::string::npos, command.find("s3cret")) << command;
  }
}

TEST_F(Become, AHostWhoseSudoDoesNotAskNeverGetsThePasswordOnStdin) {
  auto& host = add("n1", false);
  testing::FakeSession login(host);
  BecomeSession root(login, "s3cret pass");
  remote::RunOptions options;
  options.stdin_data = "data\n";
  auto ran = root.run("cat", options);
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ("data\n", ran->out);
  EXPECT_EQ("data\n", host.stdin_data);
  EXPECT_EQ(0u, host.commands.at(1).rfind("sudo -n -- ", 0)) << host.commands.at(1);
}

TEST_F(Become, AWrongPasswordIsOneLineNamingTheVariable) {
  auto& host = add("n1", true);
  host.host.become_password_env = "SUDO_PW";
  testing::FakeSession login(host);
  BecomeSession root(login, "wrong");
  auto ran = root.run("true");
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ("n1: sudo as ec2-user: sudo refused the password from $SUDO_PW (export the right password in SUDO_PW)",
            ran.error().message);
}

TEST_F(Become, AHostWhoseSudoAsksAPasswordNobodyGaveFailsAloneWithTheFix) {
  add("n1", false);
  add("n2", true);
  auto book = parse_playbook(
      "tasks:\n"
      "  - name: as the login user\n"
      "    command: [true]\n"
      "  - name: a root step\n"
      "    become: true\n"
      "    command: [mkdir, -p, '" + path("{{inventory_hostname}}-etc") + "']\n"
      "  - name: after\n"
      "    become: true\n"
      "    command: [true]\n",
      "t.yaml");
  ASSERT_TRUE(book.ok()) << book.error().message;
  auto report = run_play(*book, transport_.inventory_hosts(), transport_, RunSettings{});
  ASSERT_EQ(4u, report.tasks.size());
  const auto& root_step = report.tasks[2].results;
  EXPECT_EQ(TaskStatus::changed, root_step.at(0).result.status) << root_step.at(0).result.msg;
  EXPECT_EQ(TaskStatus::failed, root_step.at(1).result.status);
  EXPECT_EQ("n2: sudo as ec2-user: sudo asks for a password and the inventory gives none (export it and name the "
            "variable with become_password_env: VAR for this host, or allow ec2-user passwordless sudo)",
            root_step.at(1).result.msg);
  EXPECT_TRUE(fs::is_directory(path("n1-etc")));
  EXPECT_EQ(1u, report.tasks[3].results.size()) << "n1 goes on alone";
  auto& n1 = transport_["n1"];
  EXPECT_EQ("true", n1.commands.at(0)) << "a step without become runs as the login user";
  EXPECT_EQ(0u, n1.commands.at(1).rfind("sudo -n -- sh -c ", 0)) << n1.commands.at(1);
}

TEST_F(Become, AnUnsetPasswordVariableFailsTheHostNamingIt) {
  auto& host = add("n1", true);
  host.host.become_password_env = "XFT_TEST_UNSET_SUDO_PASSWORD";
  ::unsetenv("XFT_TEST_UNSET_SUDO_PASSWORD");
  auto book = parse_playbook("tasks:\n  - become: true\n    command: [true]\n", "t.yaml");
  ASSERT_TRUE(book.ok());
  auto report = run_play(*book, transport_.inventory_hosts(), transport_, RunSettings{});
  EXPECT_EQ("n1: $XFT_TEST_UNSET_SUDO_PASSWORD is not set (export the sudo password in it; the inventory names it "
            "with become_password_env)",
            report.tasks.at(1).results.at(0).result.msg);
}

TEST_F(Become, ARootStepOnANonRootLoginWithoutBecomeSaysItNeedsRoot) {
  auto& host = transport_.add("n1", "10.0.0.1");
  host.host.user = "ubuntu";
  host.handler = [](FakeHost&, const std::string&) {
    return remote::CommandResult{1, "", "mkdir: cannot create directory '/etc/xftctl': Permission denied\n"};
  };
  auto book = parse_playbook("tasks:\n  - name: root\n    become: true\n    command: [mkdir, /etc/xftctl]\n", "t.yaml");
  ASSERT_TRUE(book.ok());
  auto report = run_play(*book, transport_.inventory_hosts(), transport_, RunSettings{});
  const auto& result = report.tasks.at(1).results.at(0).result;
  EXPECT_EQ(TaskStatus::failed, result.status);
  EXPECT_NE(std::string::npos,
            result.msg.find("(this step needs root and n1 logs in as ubuntu: set become: sudo for it in the inventory, "
                            "or log in as root)"))
      << result.msg;
  EXPECT_EQ("mkdir /etc/xftctl", host.commands.at(0)) << "run as the login user, no sudo";
}

}  // namespace
}  // namespace xft::playbooks
