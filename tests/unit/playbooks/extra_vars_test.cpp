#include "playbooks/extra_vars.h"

#include <gtest/gtest.h>

#include "inventory/grammar.h"
#include "tests/unit/inventory/hostile_corpus.h"

using xft::playbooks::parse_extra_vars;

namespace {

std::string error_of(const std::vector<std::string>& items) {
  auto vars = parse_extra_vars(items);
  return vars ? "parsed without error" : vars.error().message;
}

}  // namespace

TEST(ExtraVars, NamesAndValues) {
  auto vars = parse_extra_vars({"run_id=x'; touch /tmp/p; echo '", "_a1=", "B=c=d", "path=/a b/$(c)", "u=caf\xc3\xa9",
                                "run_id=second"});
  ASSERT_TRUE(vars) << vars.error().message;
  EXPECT_EQ(*vars, (nlohmann::json{{"run_id", "second"}, {"_a1", ""}, {"B", "c=d"}, {"path", "/a b/$(c)"},
                                   {"u", "caf\xc3\xa9"}}));
  EXPECT_EQ(*parse_extra_vars({}), nlohmann::json::object());
}

TEST(ExtraVars, Errors) {
  EXPECT_EQ(error_of({"run_id"}), "-e run_id: give NAME=VALUE");
  EXPECT_EQ(error_of({"=x"}), "-e =x: give NAME=VALUE");
  EXPECT_EQ(error_of({"a\nb"}), "-e a\\nb: give NAME=VALUE");
  EXPECT_EQ(error_of({"bad name=x"}),
            "-e bad name: not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
  EXPECT_EQ(error_of({"$(touch)=x"}),
            "-e $(touch): not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
  EXPECT_EQ(error_of({"1x=x"}),
            "-e 1x: not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
  EXPECT_EQ(error_of({"a\x1b[2J=x"}),
            "-e a\\x1b[2J: not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
  EXPECT_EQ(error_of({"run_id=x\ntouch /tmp/p"}),
            "-e run_id: the value contains a newline (extra variables are one line each)");
  EXPECT_EQ(error_of({"run_id=x\r"}),
            "-e run_id: the value contains a carriage return (extra variables are one line each)");
  EXPECT_EQ(error_of({"x=a\tb"}),
            "-e x: the value contains the control character \\t (remove it; extra variables are printable text)");
  EXPECT_EQ(error_of({"x=\x1b[31m"}),
            "-e x: the value contains the control character \\x1b (remove it; extra variables are printable text)");
  EXPECT_EQ(error_of({std::string("x=a\0b", 5)}),
            "-e x: the value contains the control character \\x00 (remove it; extra variables are printable text)");
  EXPECT_EQ(error_of({"x=\x7f"}),
            "-e x: the value contains the control character \\x7f (remove it; extra variables are printable text)");
  EXPECT_EQ(error_of({"ok=1", "bad name=2"}),
            "-e bad name: not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
}

namespace {

// One row; ASSERT returns from here, so the other rows still run.
void check_row(const xft::testing::HostileRow& row) {
  auto vars = parse_extra_vars({row.value});
  if (row.expect == "literal") {
    ASSERT_TRUE(vars) << vars.error().message;
    auto eq = row.value.find('=');
    EXPECT_EQ(*vars, (nlohmann::json{{row.value.substr(0, eq), row.value.substr(eq + 1)}}));
    return;
  }
  ASSERT_FALSE(vars) << "accepted";
  const std::string& message = vars.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  // Named by what stands before '=' (the whole item when there is none).
  std::string named = "-e " + xft::inventory::printable(row.value.substr(0, row.value.find('='))) + ": ";
  EXPECT_EQ(message.substr(0, named.size()), named) << message;
}

}  // namespace

// The extra_var rows of tests/data/hostile/values.tsv (VALUE is the -e argument).
TEST(ExtraVars, HostileValues) {
  size_t consumed = 0;
  for (const auto& row : xft::testing::read_hostile_corpus()) {
    if (row.field != "extra_var") continue;
    ++consumed;
    SCOPED_TRACE(xft::testing::describe_row(row));
    check_row(row);
  }
  EXPECT_GT(consumed, 0u);
}
