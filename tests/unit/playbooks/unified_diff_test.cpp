// --diff's unified diff: exact hunks for small cases, and for every case
// (missing final newlines, empty files, many random edits) the real `patch`
// program applied to the old text gives the new one.
#include "playbooks/unified_diff.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace xft::playbooks {
namespace {

namespace fs = std::filesystem;

class PatchDir {
 public:
  PatchDir() {
    char name[] = "/tmp/xft-diff-test.XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~PatchDir() { fs::remove_all(path_); }

  // `before` patched with the diff by patch(1), with no fuzz: hunks must match exactly.
  std::string patched(const std::string& before, const std::string& diff) const {
    std::ofstream(path_ + "/file", std::ios::binary | std::ios::trunc) << before;
    std::ofstream(path_ + "/diff", std::ios::binary | std::ios::trunc) << diff;
    std::string command = "patch --quiet --force --fuzz=0 --no-backup-if-mismatch -r /dev/null " + path_ + "/file " +
                          path_ + "/diff >" + path_ + "/log 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(path_ + "/log");
      return "(patch failed: " + std::string(std::istreambuf_iterator<char>(log), {}) + ")";
    }
    std::ifstream in(path_ + "/file", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string path_;
};

TEST(UnifiedDiff, OneChangeWithThreeLinesOfContext) {
  EXPECT_EQ("--- /etc/f (before)\n+++ /etc/f (after)\n"
            "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n",
            unified_diff("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\n", "/etc/f"));
  EXPECT_EQ("", unified_diff("same\n", "same\n", "/etc/f"));
}

TEST(UnifiedDiff, ChangesSixLinesApartShareAHunkSevenApartDoNot) {
  std::string base;
  for (int i = 1; i <= 20; ++i) base += "l" + std::to_string(i) + "\n";
  auto changed = [&](int first, int second) {
    std::string text = base;
    for (int n : {first, second}) {
      auto at = text.find("l" + std::to_string(n) + "\n");
      text.replace(at, 1, "L");
    }
    return text;
  };
  EXPECT_EQ("--- f (before)\n+++ f (after)\n"
            "@@ -1,12 +1,12 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n l6\n l7\n l8\n-l9\n+L9\n l10\n l11\n l12\n",
            unified_diff(base, changed(2, 9), "f"));
  EXPECT_EQ("--- f (before)\n+++ f (after)\n"
            "@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n"
            "@@ -7,7 +7,7 @@\n l7\n l8\n l9\n-l10\n+L10\n l11\n l12\n l13\n",
            unified_diff(base, changed(2, 10), "f"));
}

TEST(UnifiedDiff, EmptyFilesAndMissingFinalNewlines) {
  EXPECT_EQ("--- f (before)\n+++ f (after)\n@@ -0,0 +1,2 @@\n+x\n+y\n", unified_diff("", "x\ny\n", "f"));
  EXPECT_EQ("--- f (before)\n+++ f (after)\n@@ -1,2 +0,0 @@\n-x\n-y\n", unified_diff("x\ny\n", "", "f"));
  EXPECT_EQ("--- f (before)\n+++ f (after)\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
            unified_diff("a\nb", "a\nb\n", "f"));
  EXPECT_EQ("--- f (before)\n+++ f (after)\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
            unified_diff("a\nb", "A\nb", "f"));
  PatchDir dir;
  for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
           {"", "x\ny\n"}, {"x\ny\n", ""}, {"", "x"}, {"x", ""}, {"a\nb", "a\nb\n"}, {"a\nb\n", "a\nb"},
           {"a\nb", "A\nb"}, {"a\nb", "a\nc"}, {"a", "b"}, {"\n\n", "\n"}, {"a\n\nb\n", "a\nb\n\n"}})
    EXPECT_EQ(after, dir.patched(before, unified_diff(before, after, "f")))
        << "before: " << before << "\nafter: " << after << "\ndiff:\n" << unified_diff(before, after, "f");
}

// Random texts over a small alphabet of lines (many equal lines, so many
// equally short edit scripts), with or without a final newline.
TEST(UnifiedDiff, PatchAppliesEveryRandomDiff) {
  std::mt19937 random(18);
  auto pick = [&](int n) { return static_cast<int>(random() % n); };
  PatchDir dir;
  for (int round = 0; round < 150; ++round) {
    std::vector<std::string> lines;
    for (int i = pick(40); i > 0; --i) lines.push_back("l" + std::to_string(pick(6)));
    auto edited = lines;
    for (int i = pick(8) + 1; i > 0; --i) {
      int op = pick(3);
      size_t at = edited.empty() ? 0 : random() % edited.size();
      if (op == 0 || edited.empty()) edited.insert(edited.begin() + at, "n" + std::to_string(pick(4)));
      else if (op == 1) edited.erase(edited.begin() + at);
      else edited[at] = "c" + std::to_string(pick(4));
    }
    auto text = [&](const std::vector<std::string>& from) {
      std::string out;
      for (const auto& line : from) out += line + "\n";
      if (!out.empty() && pick(4) == 0) out.pop_back();
      return out;
    };
    std::string before = text(lines), after = text(edited);
    if (before == after) continue;
    auto diff = unified_diff(before, after, "f");
    ASSERT_EQ(after, dir.patched(before, diff)) << "round " << round << "\n" << diff;
  }
}

TEST(UnifiedDiff, AChangedRegionTooLargeToCompareIsSaidInOneLine) {
  std::string before, after;
  for (int i = 0; i < 12000; ++i) before += "a" + std::to_string(i) + "\n", after += "b" + std::to_string(i) + "\n";
  EXPECT_EQ("(content differs; too large to show)\n", unified_diff(before, after, "f"));
  // a large file with a small change is compared
  EXPECT_NE(std::string::npos, unified_diff(before, before + "end\n", "f").find("@@ -11998,3 +11998,4 @@\n a11997\n a11998\n a11999\n+end\n"));
}

}  // namespace
}  // namespace xft::playbooks
