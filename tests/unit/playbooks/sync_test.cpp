// sync_tree against a fake host whose "remote" file system is a local temp
// dir: commands run in a local shell (so the real find/sha256sum/sh scripts
// are exercised), uploads are copies. The fake records every command and
// upload, so tests see exactly what would go over the wire.
#include "playbooks/sync.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "tests/unit/support/files.h"

namespace xft::playbooks {
namespace {

namespace fs = std::filesystem;
using remote::CommandResult;
using remote::Failure;
using remote::Remote;
using remote::RemoteError;
using remote::RemoteFileInfo;
using remote::RunOptions;

using xft::test::slurp;

void put(const std::string& path, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  ASSERT_EQ(0, ::chmod(path.c_str(), mode));
}

using xft::test::mode_of;

class LocalDirSession : public remote::RemoteSession {
 public:
  explicit LocalDirSession(std::string scratch) : scratch_(std::move(scratch)) {
    host_.name = "node7";
    host_.address = "10.0.0.7";
  }

  const inventory::Host& host() const override { return host_; }
  std::string host_key() const override { return "ssh-ed25519 AAAAfake"; }

  Remote<CommandResult> run(const std::string& command, const RunOptions& options) override {
    commands.push_back(command);
    std::string in = scratch_ + "/stdin", out = scratch_ + "/stdout", err = scratch_ + "/stderr";
    std::ofstream(in, std::ios::binary | std::ios::trunc) << options.stdin_data;
    std::ofstream(scratch_ + "/command", std::ios::binary | std::ios::trunc) << command;
    std::string shell = "sh " + scratch_ + "/command <" + in + " >" + out + " 2>" + err;
    int status = std::system(shell.c_str());
    CommandResult result;
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
  }

  Remote<void> upload(const std::string& content, const std::string& remote_path, mode_t mode) override {
    return RemoteError{Failure::other, "upload(content) is not used by sync"};
  }

  Remote<void> upload_file(const std::string& local_path, const std::string& remote_path) override {
    uploads.push_back(remote_path);
    if (remote_path == fail_upload_of)
      return RemoteError{Failure::other, "node7 (10.0.0.7): cannot write " + remote_path +
                                             ".xftctl-tmp-1: no space left on device"};
    std::string temp = remote_path + ".tmp";
    std::error_code error;
    fs::copy_file(local_path, temp, fs::copy_options::overwrite_existing, error);
    if (error) return RemoteError{Failure::other, "node7: cannot write " + temp + ": " + error.message()};
    ::chmod(temp.c_str(), mode_of(local_path));
    fs::rename(temp, remote_path);
    return {};
  }

  Remote<std::string> download(const std::string& remote_path) override { return slurp(remote_path); }
  Remote<RemoteFileInfo> stat(const std::string& remote_path) override {
    return RemoteError{Failure::other, "stat is not used by sync"};
  }
  Remote<void> mkdir(const std::string& remote_path, mode_t mode) override {
    return RemoteError{Failure::other, "mkdir is not used by sync"};
  }

  size_t writing_commands() const {
    size_t count = 0;
    for (const auto& command : commands) count += command == "sh -s";
    return count;
  }

  std::vector<std::string> commands;
  std::vector<std::string> uploads;
  std::string fail_upload_of;

 private:
  std::string scratch_;
  inventory::Host host_;
};

// Type, mode, size, link target and content of every entry below `root`.
std::string tree_state(const std::string& root) {
  std::string state;
  std::vector<fs::path> paths;
  for (auto& entry : fs::recursive_directory_iterator(root)) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    std::string p = path.string();
    std::string relative = path.lexically_relative(root).generic_string();
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(mode_of(p)));
    if (fs::is_symlink(path)) state += "l " + relative + " -> " + fs::read_symlink(path).string() + "\n";
    else if (fs::is_directory(path)) state += std::string("d ") + mode + " " + relative + "\n";
    else state += std::string("f ") + mode + " " + relative + " = " + slurp(p) + "\n";
  }
  return state;
}

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/xft-sync-test.XXXXXX";
    ASSERT_NE(nullptr, ::mkdtemp(pattern));
    base_ = pattern;
    src_ = base_ + "/src";
    dest_ = base_ + "/remote/opt/model";
    fs::create_directories(base_ + "/scratch");
    put(src_ + "/config.json", "{\"layers\": 2}\n");
    put(src_ + "/weights/part 1.bin", std::string(3000, 'w'), 0600);
    put(src_ + "/weights/part-2.bin", std::string(5000, 'v'), 0640);
    put(src_ + "/bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
    put(src_ + "/odd\nname.txt", "newline in the name\n");
    ASSERT_EQ(0, ::chmod((src_ + "/bin").c_str(), 0750));
    fs::create_symlink("weights/part-2.bin", src_ + "/latest");
    session_ = std::make_unique<LocalDirSession>(base_ + "/scratch");
  }
  void TearDown() override { fs::remove_all(base_); }

  SyncPlan scan() {
    auto plan = SyncPlan::scan(src_);
    EXPECT_TRUE(plan) << plan.error().message;
    return std::move(*plan);
  }

  SyncReport sync(const SyncOptions& options = {}) {
    auto plan = scan();
    session_->commands.clear();
    session_->uploads.clear();
    auto report = sync_tree(*session_, plan, dest_, options);
    EXPECT_TRUE(report) << report.error().message;
    return report ? std::move(*report) : SyncReport{};
  }

  std::string base_, src_, dest_;
  std::unique_ptr<LocalDirSession> session_;
};

TEST_F(SyncTest, ScanListsParentsFirstWithModesSizesAndLinks) {
  auto plan = scan();
  std::string listing;
  for (const auto& entry : plan.entries()) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(entry.mode));
    listing += std::to_string(static_cast<int>(entry.kind)) + " " + mode + " " + std::to_string(entry.size) + " " +
               entry.path + (entry.kind == EntryKind::symlink ? " -> " + entry.link_target : "") + "|";
  }
  EXPECT_EQ(listing,
            "1 0750 0 bin|0 0755 18 bin/run.sh|0 0644 14 config.json|2 0777 0 latest -> weights/part-2.bin|"
            "0 0644 20 odd\nname.txt|1 0755 0 weights|0 0600 3000 weights/part 1.bin|"
            "0 0640 5000 weights/part-2.bin|");
  EXPECT_EQ(plan.file_count(), 5u);
  EXPECT_EQ(plan.file_bytes(), 18u + 14u + 20u + 3000u + 5000u);
}

TEST_F(SyncTest, ScanRefusesFifosNamingThePath) {
  ASSERT_EQ(0, ::mkfifo((src_ + "/pipe").c_str(), 0644));
  auto plan = SyncPlan::scan(src_);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message, src_ + "/pipe: cannot sync a socket, FIFO or device file; remove it from the "
                                         "directory or sync a directory without it");
}

TEST_F(SyncTest, FirstSyncSendsEverythingWithModesAndLinks) {
  auto report = sync();
  EXPECT_EQ(report.files_sent, 5u);
  EXPECT_EQ(report.bytes_sent, 8052u);
  EXPECT_EQ(report.files_unchanged, 0u);
  EXPECT_EQ(report.dirs_created, 2u);
  EXPECT_EQ(report.links_made, 1u);
  EXPECT_EQ(tree_state(dest_), tree_state(src_));
  EXPECT_EQ(mode_of(dest_ + "/weights/part 1.bin"), 0600u);
  EXPECT_EQ(mode_of(dest_ + "/bin"), 0750u);
  EXPECT_EQ(session_->uploads.size(), 5u);
  // Nothing to hash on an empty host: list, prepare, finish.
  EXPECT_EQ(session_->commands.size(), 3u);
}

TEST_F(SyncTest, SecondSyncSendsNothing) {
  sync();
  auto report = sync();
  EXPECT_EQ(report.files_sent, 0u);
  EXPECT_EQ(report.bytes_sent, 0u);
  EXPECT_EQ(report.files_unchanged, 5u);
  EXPECT_FALSE(report.changed());
  EXPECT_TRUE(session_->uploads.empty());
  EXPECT_EQ(tree_state(dest_), tree_state(src_));
}

TEST_F(SyncTest, NamesWithNewlinesBackslashesAndSpacesCompareByHash) {
  put(src_ + "/back\\slash.txt", "b\n");
  put(src_ + "/two\\\nlines \\n.txt", "c\n");
  sync();
  auto report = sync();
  EXPECT_TRUE(session_->uploads.empty());
  EXPECT_EQ(report.files_unchanged, 7u);
  EXPECT_EQ(tree_state(dest_), tree_state(src_));
}

TEST_F(SyncTest, OnlyTheChangedFileIsSentEvenAtTheSameSize) {
  sync();
  put(src_ + "/weights/part 1.bin", std::string(2999, 'w') + "X", 0600);
  auto report = sync();
  EXPECT_EQ(session_->uploads, std::vector<std::string>{dest_ + "/weights/part 1.bin"});
  EXPECT_EQ(report.files_sent, 1u);
  EXPECT_EQ(report.bytes_sent, 3000u);
  EXPECT_EQ(report.files_unchanged, 4u);
  EXPECT_EQ(tree_state(dest_), tree_state(src_));
}

TEST_F(SyncTest, AModeChangeAloneIsAChmodNotAResend) {
  sync();
  ASSERT_EQ(0, ::chmod((src_ + "/config.json").c_str(), 0600));
  auto report = sync();
  EXPECT_TRUE(session_->uploads.empty());
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(describe_change(report.changes[0]), "chmod config.json 0600");
  EXPECT_EQ(mode_of(dest_ + "/config.json"), 0600u);
}

TEST_F(SyncTest, CheckOnlyReportsAndWritesNothing) {
  sync();
  put(src_ + "/new/file.txt", "fresh\n");
  put(src_ + "/config.json", "{\"layers\": 24, \"heads\": 16}\n");
  put(dest_ + "/stale.txt", "left over\n");
  std::string before = tree_state(dest_);
  SyncOptions options;
  options.check_only = true;
  options.delete_extra = true;
  auto report = sync(options);
  std::string described;
  for (const auto& change : report.changes) described += describe_change(change) + "\n";
  EXPECT_EQ(described,
            "remove stale.txt\n"
            "mkdir new 0755\n"
            "send config.json (28 bytes, 0644)\n"
            "send new/file.txt (6 bytes, 0644)\n");
  EXPECT_EQ(report.files_sent, 2u);
  EXPECT_EQ(tree_state(dest_), before);
  EXPECT_TRUE(session_->uploads.empty());
  EXPECT_EQ(session_->writing_commands(), 0u);
}

TEST_F(SyncTest, DeleteRemovesExtrasAndThingsInTheWay) {
  sync();
  put(dest_ + "/stale/deep/file", "x");
  fs::remove(dest_ + "/config.json");
  put(dest_ + "/config.json/inner", "a directory where a file belongs");
  SyncOptions options;
  options.delete_extra = true;
  auto report = sync(options);
  EXPECT_EQ(report.removed, 2u);  // config.json (in the way) and stale (with what it holds)
  EXPECT_EQ(report.files_sent, 1u);
  EXPECT_EQ(tree_state(dest_), tree_state(src_));
}

TEST_F(SyncTest, WithoutDeleteExtrasStay) {
  sync();
  put(dest_ + "/mine.txt", "the host's own file\n");
  auto report = sync();
  EXPECT_EQ(report.removed, 0u);
  EXPECT_EQ(slurp(dest_ + "/mine.txt"), "the host's own file\n");
}

TEST_F(SyncTest, ALinkPointingElsewhereIsReplaced) {
  sync();
  fs::remove(dest_ + "/latest");
  fs::create_symlink("config.json", dest_ + "/latest");
  auto report = sync();
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(describe_change(report.changes[0]), "link latest -> weights/part-2.bin");
  EXPECT_EQ(fs::read_symlink(dest_ + "/latest").string(), "weights/part-2.bin");
}

TEST_F(SyncTest, UploadErrorsNameHostAndFileAndKeepTheirKind) {
  session_->fail_upload_of = dest_ + "/weights/part-2.bin";
  auto plan = scan();
  auto report = sync_tree(*session_, plan, dest_, {});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().kind, Failure::other);
  EXPECT_EQ(report.error().message,
            "node7 (10.0.0.7): cannot write " + dest_ + "/weights/part-2.bin.xftctl-tmp-1: no space left on device");
}

TEST_F(SyncTest, ADestinationThatIsAFileIsAnErrorNamingHostAndPath) {
  put(base_ + "/remote/plain", "not a dir");
  auto plan = scan();
  auto report = sync_tree(*session_, plan, base_ + "/remote/plain", {});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().message, "node7: sync to " + base_ + "/remote/plain: cannot list the destination: " +
                                        base_ + "/remote/plain exists and is not a directory");
}

TEST_F(SyncTest, RelativeDestinationIsRefused) {
  auto plan = scan();
  auto report = sync_tree(*session_, plan, "opt/model", {});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().message, "node7: sync to opt/model: destination opt/model must be an absolute path");
  EXPECT_TRUE(session_->commands.empty());
}

TEST_F(SyncTest, ProgressAddsUpToThePlan) {
  size_t planned_files = 0, sent_files = 0;
  uint64_t planned_bytes = 0, sent_bytes = 0;
  SyncOptions options;
  options.progress = [&](const SyncProgress& step) {
    planned_files += step.planned_files;
    planned_bytes += step.planned_bytes;
    sent_files += step.sent_files;
    sent_bytes += step.sent_bytes;
  };
  sync(options);
  EXPECT_EQ(planned_files, 5u);
  EXPECT_EQ(planned_bytes, 8052u);
  EXPECT_EQ(sent_files, 5u);
  EXPECT_EQ(sent_bytes, 8052u);
}

TEST(SyncNames, ShellQuoteSurvivesQuotes) {
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace xft::playbooks
