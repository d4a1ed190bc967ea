#include "playbooks/extra_vars.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "inventory/grammar.h"
#include "tests/unit/hostile_corpus.h"

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

namespace {

// A directory of variable files, removed at the end of the test.
class VarFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/xft-extra-vars-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` to dir/name and returns "@dir/name".
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return "@" + dir_ + "/" + name;
  }
  // The error with the directory written as DIR.
  std::string error(const std::vector<std::string>& items) {
    std::string message = error_of(items);
    for (size_t at; (at = message.find(dir_)) != std::string::npos;) message.replace(at, dir_.size(), "DIR");
    return message;
  }

  std::string dir_;
};

}  // namespace

TEST_F(VarFiles, YamlAndJsonFilesAndInlineMappings) {
  auto yaml = file("vars.yaml",
                   "# model settings\n"
                   "run_id: 42\n"
                   "model_dir: /mnt/models/qwen 7b\n"
                   "quoted: \"x'; touch /tmp/p; echo '\"\n"
                   "hosts_list: [node01, node02]\n"
                   "nfs: {server: head, options: \"rw,sync\"}\n"
                   "flag: true\n");
  auto json = file("vars.json", R"({"run_id": "7", "ratio": 0.5, "tags": ["a", {"b": "c"}]})");
  auto vars = parse_extra_vars({yaml, "extra=1", json, R"( {"inline": "x y", "extra": 2})"});
  ASSERT_TRUE(vars) << vars.error().message;
  // Scalars stay text, as a playbook's own vars: are; later names replace earlier ones.
  EXPECT_EQ(vars->dump(),
            R"({"extra":"2","flag":"true","hosts_list":["node01","node02"],"inline":"x y",)"
            R"("model_dir":"/mnt/models/qwen 7b","nfs":{"options":"rw,sync","server":"head"},)"
            R"("quoted":"x'; touch /tmp/p; echo '","ratio":"0.5","run_id":"7","tags":["a",{"b":"c"}]})");
  EXPECT_EQ(*parse_extra_vars({file("empty.yaml", "# nothing yet\n"), "{}"}), nlohmann::json::object());
}

TEST_F(VarFiles, ErrorsNameTheFileLineColumnAndVariable) {
  EXPECT_EQ(error({file("a.yaml", "ok: 1\nbad name: 2\n")}),
            "DIR/a.yaml:2:1: bad name: not a variable name (use letters, digits and _, not starting with a digit, "
            "e.g. run_id)");
  EXPECT_EQ(error({file("b.yaml", "run_id: \"x\\ntouch /tmp/p\"\n")}),
            "DIR/b.yaml:1:9: run_id: the value contains a newline (extra variables are one line each)");
  EXPECT_EQ(error({file("c.yaml", "run_id: |\n  two\n  lines\n")}),
            "DIR/c.yaml:1:9: run_id: the value contains a newline (extra variables are one line each)");
  EXPECT_EQ(error({file("d.json", "{\"a\": {\"b\": [\"ok\", \"\\u001b[2J\"]}}")}),
            "DIR/d.json:1:20: a.b[1]: the value contains the control character \\x1b (remove it; extra variables "
            "are printable text)");
  EXPECT_EQ(error({file("e.yaml", "a:\n  1x: y\n")}),
            "DIR/e.yaml:2:3: a.1x: not a variable name (use letters, digits and _, not starting with a digit, e.g. "
            "run_id)");
  EXPECT_EQ(error({file("f.yaml", "a: 1\nb: 2\na: 3\n")}),
            "DIR/f.yaml:3:1: a: duplicate variable (also at line 1; keep one)");
  EXPECT_EQ(error({file("g.yaml", "a: 1\nb:\nc: [x, ~]\n")}),
            "DIR/g.yaml:2:1: b: has no value (write one, or \"\" for an empty text)");
  EXPECT_EQ(error({file("h.yaml", "- a\n- b\n")}),
            "DIR/h.yaml:1:1: variables: expected a mapping of names to values, got a list (e.g. {\"run_id\": \"7\"}, "
            "or run_id: 7 in a file)");
  EXPECT_EQ(error({file("g2.yaml", "c: [x, ~]\n")}), "DIR/g2.yaml:1:8: c[1]: has no value (write one, or \"\" for an empty text)");
  EXPECT_EQ(error({file("i.yaml", "a: [1, 2\n")}),
            "DIR/i.yaml:2:1: yaml: end of sequence flow not found (fix the YAML or JSON syntax)");
  EXPECT_EQ(error({file("j.yaml", "? [a, b]\n: c\n")}), "DIR/j.yaml:1:3: variables: a key is a list (write a name)");
  EXPECT_EQ(error({"@" + dir_ + "/missing.yaml"}),
            "-e @DIR/missing.yaml: cannot open DIR/missing.yaml: No such file or directory");
  EXPECT_EQ(error({"@"}), "-e @: give a file after @ (e.g. -e @vars.yaml)");
  EXPECT_EQ(error({R"({"a": 1, "b c": "x"})"}),
            "-e:1:10: b c: not a variable name (use letters, digits and _, not starting with a digit, e.g. run_id)");
  EXPECT_EQ(error({"{\"a\": \"x\\ty\"}"}),
            "-e:1:7: a: the value contains the control character \\t (remove it; extra variables are printable text)");
  EXPECT_EQ(error({"{\"a\": \"x\"", "ok=1"}), "-e:1:1: yaml: end of map flow not found (fix the YAML or JSON syntax)");
}

TEST_F(VarFiles, DeepOrMultipliedDocumentsAreRefused) {
  std::string deep = "a: " + std::string(20, '[') + "x" + std::string(20, ']') + "\n";
  EXPECT_EQ(error({file("deep.yaml", deep)}),
            "DIR/deep.yaml:1:20: a[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper than 16 levels "
            "(flatten it)");
  // Each level doubles the one before through aliases: 2^20 values if expanded.
  std::string laughs = "l0: &l0 [x, x]\n";
  for (int i = 1; i <= 20; ++i)
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [*l" + std::to_string(i - 1) + ", *l" +
              std::to_string(i - 1) + "]\n";
  // The position is where the aliased value was first written.
  EXPECT_EQ(error({file("laughs.yaml", laughs)}),
            "DIR/laughs.yaml:1:10: l11[0][0][1][1][1][0][0][0][1][1][0][0]: more than 10000 values (split the file)");
}
