#include "remote/ssh_keygen.h"

#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <libssh/libssh.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

class SshKeygen : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xft-keygen-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static mode_t mode_of(const fs::path& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  }

  // The first line a command prints.
  static std::string first_line(const std::string& command) {
    std::string out;
    if (std::FILE* pipe = ::popen(command.c_str(), "r")) {
      char buffer[4096];
      if (std::fgets(buffer, sizeof buffer, pipe)) out = buffer;
      ::pclose(pipe);
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  fs::path dir_;
};

TEST_F(SshKeygen, WritesAPairThatOpenSshReads) {
  const fs::path key = dir_ / "id_ed25519";
  auto line = xft::remote::generate_ed25519_key_pair(key, "xftctl@test");
  ASSERT_TRUE(line) << line.error().message;
  EXPECT_EQ(line->rfind("ssh-ed25519 ", 0), 0u) << *line;
  EXPECT_EQ(line->substr(line->size() - 12), " xftctl@test");
  EXPECT_EQ(mode_of(key), 0600u);
  EXPECT_EQ(mode_of(key.string() + ".pub"), 0644u);

  // OpenSSH's own tool derives the same public key from the private file.
  std::string derived = first_line("ssh-keygen -y -f '" + key.string() + "' 2>&1");
  std::string blob = line->substr(0, line->rfind(' '));
  EXPECT_EQ(derived, blob);

  ssh_key imported = nullptr;
  ASSERT_EQ(ssh_pki_import_privkey_file(key.c_str(), nullptr, nullptr, nullptr, &imported), SSH_OK);
  EXPECT_EQ(ssh_key_type(imported), SSH_KEYTYPE_ED25519);
  ssh_key_free(imported);
}

TEST_F(SshKeygen, EveryPairIsNew) {
  auto first = xft::remote::generate_ed25519_key_pair(dir_ / "a", "");
  auto second = xft::remote::generate_ed25519_key_pair(dir_ / "b", "");
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_EQ(first->find(' ', 12), std::string::npos) << "no comment, no trailing space: " << *first;
}

TEST_F(SshKeygen, AnUnwritableDirectoryIsAnError) {
  auto line = xft::remote::generate_ed25519_key_pair(dir_ / "missing" / "id", "");
  ASSERT_FALSE(line);
  EXPECT_NE(line.error().message.find(dir_.string() + "/missing"), std::string::npos) << line.error().message;
}

}  // namespace
