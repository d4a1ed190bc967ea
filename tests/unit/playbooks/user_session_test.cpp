// authorized_key for a user other than the login user: every step runs as
// that user (runuser), never through root's SFTP, and links or foreign owners
// in the user's ~/.ssh are refused by name. The commands run for real here
// against a temp home; a runuser stand-in drops `-u USER --` (the test cannot
// switch users), so what is checked is what the commands do to the files.
#include "playbooks/user_session.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

class OtherUsersKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = dir_.work() + "/home/alice";
    fs::create_directories(home_);
    std::string bin = dir_.work() + "/bin";
    fs::create_directories(bin);
    std::ofstream(bin + "/runuser") << "#!/bin/sh\n[ \"$1\" = -u ] && [ \"$3\" = -- ] || exit 99\nshift 3\nexec \"$@\"\n";
    fs::permissions(bin + "/runuser", fs::perms::owner_all);
    auto& host = transport_.add("n1", "10.0.0.1");
    host.handler = [home = home_, bin](FakeHost& self, const std::string& command) {
      if (command.rfind("getent passwd ", 0) == 0) return remote::CommandResult{0, home + "\n", ""};
      return testing::run_locally(command, self.stdin_data, bin);
    };
  }
  TaskResult run_key_task() {
    auto book = parse_playbook("tasks:\n  - authorized_key: {user: alice, key: 'ssh-ed25519 AAAAnew alice@x'}\n", "t.yaml");
    EXPECT_TRUE(book.ok());
    auto report = run_play(*book, transport_.inventory_hosts(), transport_, RunSettings{});
    return report.tasks.at(1).results.at(0).result;
  }
  std::string ssh() const { return home_ + "/.ssh"; }

  testing::MarkerDir dir_;
  std::string home_;
  testing::FakeTransport transport_;
};

TEST_F(OtherUsersKeys, WrittenAsTheUserWithTheModesSshdWants) {
  auto first = run_key_task();
  EXPECT_EQ(TaskStatus::changed, first.status) << first.msg;
  EXPECT_EQ("ssh-ed25519 AAAAnew alice@x\n", slurp(ssh() + "/authorized_keys"));
  EXPECT_EQ(0700u, mode_of(ssh()));
  EXPECT_EQ(0600u, mode_of(ssh() + "/authorized_keys"));
  auto& host = transport_["n1"];
  EXPECT_TRUE(host.writes.empty()) << "nothing through root's SFTP";
  for (const auto& command : host.commands)
    if (command.rfind("getent passwd ", 0) != 0) {
      EXPECT_EQ(0u, command.rfind("runuser -u alice -- ", 0)) << command;
    }
  EXPECT_EQ(1, std::distance(fs::directory_iterator(ssh()), fs::directory_iterator())) << "no temp file left";
  EXPECT_EQ(TaskStatus::ok, run_key_task().status);
}

TEST_F(OtherUsersKeys, ALinkedKeyFileIsRefusedAndItsTargetUntouched) {
  std::string secret = dir_.work() + "/shadow";
  std::ofstream(secret) << "root:$6$secret:19000::::::\n";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_directories(ssh());
  fs::permissions(ssh(), fs::perms::owner_all);
  fs::create_symlink(secret, ssh() + "/authorized_keys");
  auto result = run_key_task();
  EXPECT_EQ(TaskStatus::failed, result.status);
  EXPECT_EQ("n1: " + ssh() + "/authorized_keys is a symbolic link; xftctl never follows links in alice's files "
            "(replace it with a real file or directory)",
            result.msg);
  EXPECT_EQ("root:$6$secret:19000::::::\n", slurp(secret));
  EXPECT_EQ(0640u, mode_of(secret));
  EXPECT_TRUE(fs::is_symlink(ssh() + "/authorized_keys"));
}

TEST_F(OtherUsersKeys, ALinkedSshDirIsRefused) {
  std::string elsewhere = dir_.work() + "/elsewhere";
  fs::create_directories(elsewhere);
  fs::create_symlink(elsewhere, ssh());
  auto result = run_key_task();
  EXPECT_EQ(TaskStatus::failed, result.status);
  EXPECT_EQ("n1: " + ssh() + " is a symbolic link; xftctl never follows links in alice's files (replace it with a real "
            "file or directory)",
            result.msg);
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST_F(OtherUsersKeys, AFileOfAnotherOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another owner needs root";
  fs::create_directories(ssh());
  fs::permissions(ssh(), fs::perms::owner_all);
  std::ofstream(ssh() + "/authorized_keys") << "ssh-ed25519 AAAAold x\n";
  ASSERT_EQ(0, ::chown((ssh() + "/authorized_keys").c_str(), 4242, 4242));
  auto result = run_key_task();
  EXPECT_EQ(TaskStatus::failed, result.status);
  EXPECT_EQ("n1: " + ssh() + "/authorized_keys is owned by uid 4242, not alice or root (chown it to alice)", result.msg);
  EXPECT_EQ("ssh-ed25519 AAAAold x\n", slurp(ssh() + "/authorized_keys"));
}

// The write itself: a temp file renamed over the target, so a link that
// appears at the target after the checks is replaced, never followed.
TEST_F(OtherUsersKeys, UploadReplacesALinkInsteadOfWritingThroughIt) {
  std::string secret = dir_.work() + "/shadow";
  std::ofstream(secret) << "secret\n";
  fs::create_directories(ssh());
  fs::create_symlink(secret, ssh() + "/authorized_keys");
  testing::FakeSession root(transport_["n1"]);
  UserSession alice(root, "alice");
  auto written = alice.upload("ssh-ed25519 AAAAnew\n", ssh() + "/authorized_keys", 0600);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_FALSE(fs::is_symlink(ssh() + "/authorized_keys"));
  EXPECT_EQ("ssh-ed25519 AAAAnew\n", slurp(ssh() + "/authorized_keys"));
  EXPECT_EQ(0600u, mode_of(ssh() + "/authorized_keys"));
  EXPECT_EQ("secret\n", slurp(secret));
  EXPECT_EQ("runuser -u alice -- cat -- '/a b'", alice.as_user({"cat", "--", "/a b"}));
}

}  // namespace
}  // namespace xft::playbooks
