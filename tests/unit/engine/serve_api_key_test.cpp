// The API key: constant-time comparison, the Bearer scheme in any case, and
// key files (trailing whitespace stripped, group/other-readable refused).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/serve/api_key.h"

namespace xft::engine::serve {
namespace {

TEST(ServeApiKey, KeysCompareEqualOnlyWhenEqual) {
  EXPECT_TRUE(keys_equal("s3cret-key-123", "s3cret-key-123"));
  EXPECT_FALSE(keys_equal("s3cret-key-123", "s3cret-key-124"));
  EXPECT_FALSE(keys_equal("s3cret-key-123", "s3cret-key-12"));   // a prefix
  EXPECT_FALSE(keys_equal("s3cret-key-123", "s3cret-key-1234"));  // longer
  EXPECT_FALSE(keys_equal("", "s3cret-key-123"));
  EXPECT_TRUE(keys_equal("", ""));
  EXPECT_FALSE(keys_equal(std::string("a\0b", 3), "a"));
}

TEST(ServeApiKey, BearerSchemeInAnyCase) {
  EXPECT_EQ(bearer_token("Bearer k1"), "k1");
  EXPECT_EQ(bearer_token("bearer k1"), "k1");
  EXPECT_EQ(bearer_token("BEARER   k1  "), "k1");
  EXPECT_EQ(bearer_token("Bearer\tk1"), "k1");
  EXPECT_EQ(bearer_token("Bearerk1"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token("Basic azE6"), "");
  EXPECT_EQ(bearer_token(""), "");
}

class ServeApiKeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/xft-key-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/key";
    std::ofstream(path, std::ios::binary) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(ServeApiKeyFile, TrailingWhitespaceOfTheFirstLineIsStripped) {
  auto key = read_api_key_file(write("s3cret-key-123 \r\nsecond line\r\n", 0600));
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(*key, "s3cret-key-123");
  key = read_api_key_file(write("k2", 0400));
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(*key, "k2");
}

TEST_F(ServeApiKeyFile, AFileOthersCanReadIsRefusedWithItsFix) {
  const std::string path = write("s3cret-key-123\n", 0644);
  auto key = read_api_key_file(path);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().message, "--api-key-file " + path + ": other users can read it (mode 0644); run: chmod 600 " + path);
  EXPECT_FALSE(read_api_key_file(write("s3cret-key-123\n", 0640)).ok());
}

TEST_F(ServeApiKeyFile, EmptyOrMissingFilesAreRefused) {
  const std::string path = write("\r\n", 0600);
  auto key = read_api_key_file(path);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().message, "--api-key-file " + path + ": its first line is empty");
  key = read_api_key_file(dir_ + "/none");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().message, "--api-key-file " + dir_ + "/none: No such file or directory");
}

}  // namespace
}  // namespace xft::engine::serve
