// AtomicFile: all-or-nothing writes that nothing planted beside the target
// can redirect (the temp file has a random name and is opened O_EXCL|O_NOFOLLOW),
// the requested mode whatever the umask, no temp file left after a failure, and
// the in-place fallback for bind-mounted targets refusing a symlink.
#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xft-atomic.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    victim_ = dir_ / "victim";
    ASSERT_TRUE(xft::write_file_atomic(victim_, "victim\n", 0644));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string content(const fs::path& path) {
    auto text = xft::read_file(path);
    return text ? *text : "<" + text.error().message + ">";
  }
  std::set<std::string> names() {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) out.insert(entry.path().filename().string());
    return out;
  }
  static mode_t mode_of(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

  fs::path dir_;
  fs::path victim_;
};

// Runs `body` in a child process; its exit code comes back (77: skip).
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(AtomicFileTest, WritesOnlyOnCommit) {
  auto path = dir_ / "a.txt";
  ASSERT_TRUE(xft::write_file_atomic(path, "old\n"));
  {
    xft::AtomicFile file(path, 0600);
    file.write("new\n");
    EXPECT_EQ(content(path), "old\n");  // nothing visible before commit
  }
  EXPECT_EQ(content(path), "old\n");  // dropped without commit
  xft::AtomicFile file(path, 0600);
  file.write("new\n");
  ASSERT_TRUE(file.commit());
  EXPECT_EQ(content(path), "new\n");
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(names(), (std::set<std::string>{"a.txt", "victim"}));
}

TEST_F(AtomicFileTest, TempFileIsHiddenBesideTheTargetWithARandomName) {
  int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, dir_.c_str(), IN_CREATE), 0);
  ASSERT_TRUE(xft::write_file_atomic(dir_ / "a.txt", "one\n"));
  ASSERT_TRUE(xft::write_file_atomic(dir_ / "a.txt", "two\n"));
  std::vector<std::string> created;
  alignas(inotify_event) char buf[4096];
  for (ssize_t n; (n = ::read(watch, buf, sizeof buf)) > 0;)
    for (char* p = buf; p < buf + n; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len)
      created.push_back(reinterpret_cast<inotify_event*>(p)->name);
  ::close(watch);
  ASSERT_EQ(created.size(), 2u);
  static const std::regex temp_name(R"(\.a\.txt\.xftctl-[A-Za-z0-9]{12})");
  EXPECT_TRUE(std::regex_match(created[0], temp_name)) << created[0];
  EXPECT_TRUE(std::regex_match(created[1], temp_name)) << created[1];
  EXPECT_NE(created[0], created[1]);
}

TEST_F(AtomicFileTest, SymlinkAtTheOldPredictableTempNameIsNotFollowed) {
  auto path = dir_ / "known_hosts";
  fs::create_symlink(victim_, path.string() + ".xftctl-tmp." + std::to_string(::getpid()));
  ASSERT_TRUE(xft::write_file_atomic(path, "10.0.0.1 ssh-ed25519 AAAA\n", 0644));
  EXPECT_EQ(content(victim_), "victim\n");
  EXPECT_EQ(content(path), "10.0.0.1 ssh-ed25519 AAAA\n");
  EXPECT_FALSE(fs::is_symlink(path));
}

TEST_F(AtomicFileTest, SymlinksAtManyGuessableNamesAreNotFollowed) {
  auto path = dir_ / "tune.json";
  std::vector<std::string> planted = {"tune.json.tmp", "tune.json~", ".tune.json.swp", ".tune.json.xftctl-",
                                      "tune.json.xftctl-tmp", ".tune.json.xftctl-tmp"};
  for (pid_t pid = ::getpid() - 50; pid <= ::getpid() + 50; ++pid) {
    planted.push_back("tune.json.xftctl-tmp." + std::to_string(pid));
    planted.push_back(".tune.json.xftctl-" + std::to_string(pid));
  }
  for (char c : std::string("AZaz09"))
    for (int length = 8; length <= 16; ++length) planted.push_back(".tune.json.xftctl-" + std::string(length, c));
  for (const auto& name : planted) fs::create_symlink(victim_, dir_ / name);
  ASSERT_TRUE(xft::write_file_atomic(path, "{}\n", 0644));
  EXPECT_EQ(content(victim_), "victim\n");
  EXPECT_EQ(content(path), "{}\n");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(names().size(), planted.size() + 2);  // the planted links, the victim, the target: no temp left
}

TEST_F(AtomicFileTest, ModeIsTheRequestedOneWhateverTheUmask) {
  mode_t old = ::umask(077);
  auto written = xft::write_file_atomic(dir_ / "wide", "x", 0644);
  ::umask(0);
  auto narrow = xft::write_file_atomic(dir_ / "narrow", "x", 0600);
  auto script = xft::write_file_atomic(dir_ / "script", "#!/bin/sh\n", 0700);
  ::umask(old);
  ASSERT_TRUE(written && narrow && script);
  EXPECT_EQ(mode_of(dir_ / "wide"), 0644u);
  EXPECT_EQ(mode_of(dir_ / "narrow"), 0600u);
  EXPECT_EQ(mode_of(dir_ / "script"), 0700u);
}

TEST_F(AtomicFileTest, FailedRenameLeavesNoTempFile) {
  fs::create_directories(dir_ / "a-dir" / "child");
  auto written = xft::write_file_atomic(dir_ / "a-dir", "x");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message.rfind("cannot rename onto " + (dir_ / "a-dir").string() + ": ", 0), 0u)
      << written.error().message;
  EXPECT_EQ(names(), (std::set<std::string>{"a-dir", "victim"}));
}

TEST_F(AtomicFileTest, FailedWriteLeavesNoTempFileAndTheTargetAsItWas) {
  auto path = dir_ / "facts.json";
  ASSERT_TRUE(xft::write_file_atomic(path, "old\n"));
  // A 4-byte file size limit makes the write fail (EFBIG) after the temp file exists.
  int code = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4, 4};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 77;
    auto written = xft::write_file_atomic(path, "longer than four bytes\n");
    if (written) return 1;
    return written.error().message == "cannot write " + path.string() + ": File too large" ? 0 : 2;
  });
  ASSERT_EQ(code, 0) << "1: the write did not fail; 2: wrong message";
  EXPECT_EQ(content(path), "old\n");
  EXPECT_EQ(names(), (std::set<std::string>{"facts.json", "victim"}));
}

TEST_F(AtomicFileTest, InPlaceRewriteRefusesASymlinkedTarget) {
  auto link = dir_ / "hosts";
  fs::create_symlink(victim_, link);
  auto written = xft::rewrite_in_place(link, "127.0.0.1 evil\n");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message,
            "cannot rewrite " + link.string() + " in place: it is a symlink, which xftctl does not follow");
  EXPECT_EQ(content(victim_), "victim\n");
}

TEST_F(AtomicFileTest, InPlaceRewriteRefusesWhatIsNotARegularFile) {
  auto written = xft::rewrite_in_place("/dev/null", "x");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message, "cannot rewrite /dev/null in place: not a regular file");
}

TEST_F(AtomicFileTest, InPlaceRewriteReplacesTheWholeContent) {
  ASSERT_TRUE(xft::rewrite_in_place(victim_, "new\n"));
  EXPECT_EQ(content(victim_), "new\n");
}

// A container's /etc/hosts: a file bind-mounted over the target; rename gives EBUSY.
TEST_F(AtomicFileTest, BindMountedTargetIsRewrittenInPlace) {
  auto source = dir_ / "bound-source";
  auto target = dir_ / "hosts";
  ASSERT_TRUE(xft::write_file_atomic(source, "from the bind mount\n"));
  ASSERT_TRUE(xft::write_file_atomic(target, "underneath\n"));
  int code = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) return 77;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) return 77;
    return xft::write_file_atomic(target, "127.0.0.1 localhost\n") ? 0 : 1;
  });
  if (code == 77) GTEST_SKIP() << "needs root for a mount namespace";
  ASSERT_EQ(code, 0);
  EXPECT_EQ(content(source), "127.0.0.1 localhost\n");
  EXPECT_EQ(content(target), "underneath\n");  // outside the child's namespace, nothing was mounted
  EXPECT_EQ(names(), (std::set<std::string>{"bound-source", "hosts", "victim"}));
}

TEST(AtomicFile, MissingDirectoryIsAnError) {
  auto written = xft::write_file_atomic("/nonexistent-dir-xft/x", "data");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message,
            "cannot create a temp file beside /nonexistent-dir-xft/x: No such file or directory");
}

TEST(ReadFile, MissingFileNamesPath) {
  auto read = xft::read_file("/nonexistent-xft-file");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("/nonexistent-xft-file"), std::string::npos);
}

}  // namespace
