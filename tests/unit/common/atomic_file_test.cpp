#include "common/atomic_file.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  auto dir = fs::temp_directory_path() / ("xft-atomic-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(AtomicFile, WritesOnlyOnCommit) {
  auto path = temp_dir() / "a.txt";
  ASSERT_TRUE(xft::write_file_atomic(path, "old\n"));
  {
    xft::AtomicFile file(path, 0600);
    file.write("new\n");
    EXPECT_EQ(*xft::read_file(path), "old\n");  // nothing visible before commit
  }
  EXPECT_EQ(*xft::read_file(path), "old\n");  // dropped without commit
  xft::AtomicFile file(path, 0600);
  file.write("new\n");
  ASSERT_TRUE(file.commit());
  EXPECT_EQ(*xft::read_file(path), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (auto& entry : fs::directory_iterator(path.parent_path()))
    EXPECT_EQ(entry.path().filename().string().find(".xftctl-tmp"), std::string::npos);
}

TEST(AtomicFile, MissingDirectoryIsAnError) {
  auto written = xft::write_file_atomic("/nonexistent-dir-xft/x", "data");
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("/nonexistent-dir-xft/x"), std::string::npos);
}

TEST(ReadFile, MissingFileNamesPath) {
  auto read = xft::read_file("/nonexistent-xft-file");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("/nonexistent-xft-file"), std::string::npos);
}

}  // namespace
