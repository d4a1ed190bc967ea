// The allreduce selection check of --algo, --comm and CCL_ALLREDUCE: every
// CCL_ALLREDUCE row of the hostile corpus is refused in one line that names
// the variable and shows no raw control byte; oneCCL's own strings pass.
#include <gtest/gtest.h>

#include "cli/allreduce_selection.h"
#include "tests/unit/hostile_corpus.h"

namespace xft::cli {
namespace {

bool has_control_byte(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

TEST(AllreduceSelection, EveryHostileCorpusRowIsRefusedInOneLine) {
  int rows = 0;
  for (const auto& row : xft::testing::read_hostile_corpus()) {
    if (row.field != "CCL_ALLREDUCE") continue;
    ++rows;
    ASSERT_EQ(row.expect, "reject") << "values.tsv:" << row.line;
    auto checked = check_allreduce_selection("CCL_ALLREDUCE", row.value);
    ASSERT_FALSE(checked) << "values.tsv:" << row.line << " accepted";
    const std::string& message = checked.error().message;
    EXPECT_EQ(message.rfind("CCL_ALLREDUCE=`", 0), 0u) << message;
    EXPECT_FALSE(has_control_byte(message)) << "values.tsv:" << row.line << ": " << message;
  }
  EXPECT_GE(rows, 5);
}

TEST(AllreduceSelection, ErrorsSayWhatIsWrongAndShowTheValueEscaped) {
  auto bad_byte = check_allreduce_selection("CCL_ALLREDUCE", "ring\n2d");
  ASSERT_FALSE(bad_byte);
  EXPECT_EQ(bad_byte.error().message,
            "CCL_ALLREDUCE=`ring\\n2d`: `\\n` cannot appear in an allreduce selection (ALGO or ALGO:LO-HI entries "
            "joined by ';', e.g. 'ring' or 'recursive_doubling:0-16384;ring:16385-max')");
  auto unknown = check_allreduce_selection("--comm", "warp:0-max");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message.rfind("--comm `warp:0-max`: unknown allreduce algorithm 'warp'", 0), 0u)
      << unknown.error().message;
  EXPECT_FALSE(check_allreduce_selection("--algo", std::string(1025, 'r')));
}

TEST(AllreduceSelection, OneCclStringsAutoAndAllPass) {
  EXPECT_TRUE(check_allreduce_selection("CCL_ALLREDUCE", "recursive_doubling:0-16384;2d:16385-524288;nreduce:524289-max"));
  EXPECT_TRUE(check_allreduce_selection("--comm", "auto"));
  EXPECT_TRUE(check_allreduce_selection("--comm", "shm"));
  EXPECT_TRUE(check_allreduce_selection("--algo", "all", true));
  EXPECT_FALSE(check_allreduce_selection("--comm", "all"));
}

}  // namespace
}  // namespace xft::cli
