// The libssh transport against a real sshd. Needs a host to talk to, so the
// tests skip unless XFT_SSH_TEST_ADDRESS is set; tests/integration/ping_exec.sh
// sets it to a test-cluster host and fails when any of these is skipped.
//   XFT_SSH_TEST_ADDRESS       host address (port 22, user root)
//   XFT_SSH_TEST_PASSWORD_ENV  name of the variable holding root's password
//   XFT_SSH_TEST_KNOWN_HOSTS   known_hosts file that already trusts the host
#include "remote/ssh_transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"

namespace xft::remote {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

class SshTransportLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (env("XFT_SSH_TEST_ADDRESS").empty()) GTEST_SKIP() << "XFT_SSH_TEST_ADDRESS not set";
    host_.name = "live";
    host_.address = env("XFT_SSH_TEST_ADDRESS");
    host_.credentials.password_env = env("XFT_SSH_TEST_PASSWORD_ENV");
    options_.known_hosts_path = env("XFT_SSH_TEST_KNOWN_HOSTS");
    options_.connect_timeout_s = 5;
  }

  std::unique_ptr<RemoteSession> connect() {
    SshTransport transport(options_, std::make_shared<DefaultPasswordSource>(), nullptr);
    auto session = transport.connect(host_);
    EXPECT_TRUE(session.ok()) << (session ? "" : session.error().message);
    return session ? std::move(*session) : nullptr;
  }

  std::string run_ok(RemoteSession& session, const std::string& command) {
    auto result = session.run(command);
    EXPECT_TRUE(result.ok()) << (result ? "" : result.error().message);
    EXPECT_EQ(result ? result->exit_status : -1, 0) << command;
    return result ? result->out : "";
  }

  inventory::Host host_;
  SshOptions options_;
};

TEST_F(SshTransportLive, RunSeparatesStreamsAndReportsTheExitStatus) {
  auto session = connect();
  ASSERT_TRUE(session);
  auto result = session->run("echo out; echo err >&2; exit 7");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
  EXPECT_EQ(result->exit_status, 7);
  auto known = read_file(options_.known_hosts_path);
  ASSERT_TRUE(known.ok());
  EXPECT_NE(known->find(host_.address + " " + session->host_key() + "\n"), std::string::npos);
}

TEST_F(SshTransportLive, StdinPayloadAndLargeOutputsOnBothStreams) {
  auto session = connect();
  ASSERT_TRUE(session);
  std::string payload;
  for (int i = 0; i < 40000; ++i) payload += "line " + std::to_string(i) + "\n";
  RunOptions options;
  options.stdin_data = payload;
  auto echoed = session->run("cat; head -c 300000 /dev/zero | tr '\\0' e >&2", options);
  ASSERT_TRUE(echoed.ok());
  EXPECT_EQ(echoed->out, payload);
  EXPECT_EQ(echoed->err, std::string(300000, 'e'));
}

TEST_F(SshTransportLive, CommandTimeoutIsClassified) {
  auto session = connect();
  ASSERT_TRUE(session);
  RunOptions options;
  options.timeout = std::chrono::seconds(1);
  auto start = std::chrono::steady_clock::now();
  auto result = session->run("sleep 6", options);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, Failure::timeout);
  EXPECT_EQ(result.error().message, "live (" + host_.address + "): command timed out after 1s: sleep 6");
  EXPECT_LT(elapsed, std::chrono::seconds(4));
}

TEST_F(SshTransportLive, UploadIsAtomicKeepsModesAndRoundTrips) {
  auto session = connect();
  ASSERT_TRUE(session);
  std::string dir = "/tmp/xft-transport-test/a/b";
  run_ok(*session, "rm -rf /tmp/xft-transport-test");
  ASSERT_TRUE(session->mkdir(dir, 0750).ok());
  ASSERT_TRUE(session->mkdir(dir).ok());  // existing: fine
  auto info = session->stat(dir);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->exists);
  EXPECT_TRUE(info->is_directory);
  EXPECT_EQ(info->mode, 0750u);

  std::string content(100000, 'x');
  content += "end\n";
  auto first = session->upload(content, dir + "/file", 0640);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(run_ok(*session, "stat -c %a:%s " + dir + "/file"), "640:100004\n");
  auto second = session->upload("replaced\n", dir + "/file", 0604);  // over an existing file
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto stat = session->stat(dir + "/file");
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->mode, 0604u);
  EXPECT_EQ(stat->size, 9u);
  EXPECT_EQ(*session->download(dir + "/file"), "replaced\n");
  EXPECT_EQ(run_ok(*session, "ls -A " + dir), "file\n");  // no temp file left behind

  char local[] = "/tmp/xft-upload-XXXXXX";
  int fd = ::mkstemp(local);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::string big;
  for (int i = 0; i < 70000; ++i) big += std::to_string(i * 7919) + "\n";
  ASSERT_TRUE(write_file_atomic(local, big, 0755).ok());
  ASSERT_TRUE(session->upload_file(local, dir + "/tool").ok());
  EXPECT_EQ(run_ok(*session, "stat -c %a " + dir + "/tool"), "755\n");
  EXPECT_EQ(*session->download(dir + "/tool"), big);
  ::unlink(local);

  auto missing = session->stat(dir + "/nothing");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->exists);
  auto over_file = session->mkdir(dir + "/file/sub");
  ASSERT_FALSE(over_file.ok());
  EXPECT_EQ(over_file.error().message, "live (" + host_.address + "): cannot create directory " + dir +
                                           "/file/sub: " + dir + "/file exists and is not a directory");
  auto absent = session->download(dir + "/nothing");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().message,
            "live (" + host_.address + "): cannot open " + dir + "/nothing: no such file or directory");
  run_ok(*session, "rm -rf /tmp/xft-transport-test");
}

TEST_F(SshTransportLive, WrongPasswordIsAnAuthFailureThatNeverShowsThePassword) {
  ::setenv("XFT_SSH_TEST_WRONG", "wrong-Secret-42", 1);
  host_.credentials.password_env = "XFT_SSH_TEST_WRONG";
  SshTransport transport(options_, std::make_shared<DefaultPasswordSource>(), nullptr);
  auto session = transport.connect(host_);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().kind, Failure::auth_failed);
  EXPECT_EQ(session.error().message, "live (" + host_.address +
                                         "): authentication failed for user root: tried password from "
                                         "$XFT_SSH_TEST_WRONG (rejected); the server accepts publickey,password");
  EXPECT_EQ(session.error().message.find("wrong-Secret-42"), std::string::npos);
}

TEST_F(SshTransportLive, ClosedPortIsUnreachable) {
  host_.port = 1;
  SshTransport transport(options_, std::make_shared<DefaultPasswordSource>(), nullptr);
  auto session = transport.connect(host_);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().kind, Failure::unreachable);
  EXPECT_EQ(session.error().message.rfind("live (" + host_.address + ":1): unreachable: ", 0), 0u)
      << session.error().message;
}

}  // namespace
}  // namespace xft::remote
