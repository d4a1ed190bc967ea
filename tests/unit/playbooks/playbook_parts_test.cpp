// The pure parts of playbooks: loading and its errors, conditions, rendering,
// and the line-level merges of authorized_keys, known_hosts and fstab.
#include <gtest/gtest.h>

#include "playbooks/expression.h"
#include "playbooks/playbook.h"
#include "playbooks/remote_file.h"
#include "playbooks/render.h"
#include "playbooks/tasks.h"

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;

std::string load_error(const std::string& text) {
  auto book = parse_playbook(text, "p.yaml");
  return book.ok() ? "(loaded)" : book.error().message;
}

TEST(PlaybookLoad, ReadsTasksWithTheirCommonFields) {
  auto book = parse_playbook(R"(name: demo
hosts: web
max_fail_percentage: 25
tasks:
  - name: k
    command: {cmd: ssh-keygen, creates: /k}
    register: key
    retries: 2
    delay: 0.5
    until: rc == 0
    tags: [keys, ssh]
  - shell: echo hi
)", "p.yaml");
  ASSERT_TRUE(book.ok()) << book.error().message;
  EXPECT_EQ("demo", book->name);
  EXPECT_EQ("web", book->hosts);
  EXPECT_EQ(25, book->max_fail_percentage);
  ASSERT_EQ(2u, book->tasks.size());
  const auto& task = book->tasks[0];
  EXPECT_EQ(TaskKind::command, task.kind);
  EXPECT_EQ("/k", task.args["creates"]);
  EXPECT_EQ("key", task.register_as);
  EXPECT_EQ(2, task.retries);
  EXPECT_DOUBLE_EQ(0.5, task.delay_s);
  EXPECT_EQ((std::vector<std::string>{"keys", "ssh"}), task.tags);
  EXPECT_EQ(5, task.line);
  EXPECT_EQ("shell", book->tasks[1].name);
  EXPECT_EQ("echo hi", book->tasks[1].args["cmd"]);
}

TEST(PlaybookLoad, EveryMistakeNamedWithLineFieldAndFix) {
  EXPECT_EQ("p.yaml:3:5: tasks[0].comand: unknown field (did you mean command?)\n"
            "p.yaml:4:5: tasks[1]: no task kind (add one of: command, shell, package, file, copy, template, "
            "block, authorized_key, known_hosts, mount, sync)\n"
            "p.yaml:6:14: tasks[2].retries: expected a number in 0..1000, got 'x'\n"
            "p.yaml:7:11: tasks[3].copy: give exactly one of content and src",
            load_error("name: x\ntasks:\n  - comand: ls\n  - name: nothing\n  - command: ls\n    retries: x\n"
                       "  - copy: {dest: /a}\n"));
  EXPECT_EQ("p.yaml:1:1: tasks: missing (add a list of tasks)", load_error("name: x\n"));
  EXPECT_EQ("p.yaml:3:5: tasks[0].shell: a task has one kind; this one already is command (split it into two tasks)",
            load_error("tasks:\n  - command: ls\n    shell: ls\n"));
  EXPECT_EQ("p.yaml:2:22: tasks[0].file.mdoe: unknown field (did you mean mode?)",
            load_error("tasks:\n  - file: {path: /a, mdoe: '0600'}\n"));
}

TEST(Condition, ComparesLooksUpAndRefusesUndefinedNames) {
  Json vars = {{"rc", 0}, {"stdout", "ready now"}, {"r", {{"changed", true}, {"rc", "3"}}}, {"list", {"a", "b"}}};
  auto is = [&](const std::string& text) {
    auto result = evaluate_condition(text, vars);
    EXPECT_TRUE(result.ok()) << text << ": " << (result.ok() ? "" : result.error().message);
    return result.ok() && *result;
  };
  EXPECT_TRUE(is("rc == 0"));
  EXPECT_TRUE(is("'ready' in stdout"));
  EXPECT_TRUE(is("stdout contains 'now' and not (rc != 0)"));
  EXPECT_TRUE(is("r.changed"));
  EXPECT_TRUE(is("r.rc >= 3"));
  EXPECT_TRUE(is("'b' in list"));
  EXPECT_FALSE(is("false or rc > 0"));
  auto undefined = evaluate_condition("r.chnaged", vars);
  ASSERT_FALSE(undefined.ok());
  EXPECT_EQ("'r.chnaged': 'r.chnaged' is not defined", undefined.error().message);
  EXPECT_FALSE(evaluate_condition("rc ==", vars).ok());
  EXPECT_FALSE(evaluate_condition("(rc == 0", vars).ok());
}

TEST(Render, MustacheWithoutHtmlEscapingAndListsOfHosts) {
  Json vars = {{"path", "/a&b"}, {"hosts", {{{"name", "h1"}, {"k", "x"}}, {{"name", "h2"}, {"k", false}}}}};
  for (auto escape : {Escape::config, Escape::line, Escape::raw}) {
    auto text = render_text("{{path}}\n{{#hosts}}\n{{name}}{{#k}} key={{k}}{{/k}}\n{{/hosts}}\n", vars, escape);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ("/a&b\nh1 key=x\nh2\n", *text);
  }
  EXPECT_EQ("template: Unclosed section \"open\" at 0", render_text("{{#open}}", vars, Escape::raw).error().message);
}

TEST(AuthorizedKeys, MatchedByBlobNeverByCommentAndOthersKept) {
  std::string current = "# mine\nssh-rsa AAAAold someone@laptop\nfrom=\"10.0.0.1\" ssh-ed25519 AAAAsame old-comment\n";
  std::string wanted = "ssh-ed25519 AAAAsame new-comment\nssh-ed25519 AAAAnew h2\n\n";
  EXPECT_EQ(current + "ssh-ed25519 AAAAnew h2\n", merge_authorized_keys(current, wanted, false));
  EXPECT_EQ("# mine\nfrom=\"10.0.0.1\" ssh-ed25519 AAAAsame old-comment\nssh-ed25519 AAAAnew h2\n",
            merge_authorized_keys(current, wanted, true));
  auto once = merge_authorized_keys(current, wanted, false);
  EXPECT_EQ(once, merge_authorized_keys(once, wanted, false));
}

TEST(KnownHosts, StaleKeysForTheNamesReplacedOtherEntriesKept) {
  std::string current =
      "h1,10.0.0.1 ssh-ed25519 AAAAold\n"
      "h1 ssh-rsa AAAArsa\n"
      "|1|hashed= ssh-ed25519 AAAAx\n"
      "other ssh-ed25519 AAAAo\n";
  std::string wanted = "h1,10.0.0.1 ssh-ed25519 AAAAnew\nh2,10.0.0.2 ssh-ed25519 AAAAh2\n";
  auto merged = merge_known_hosts(current, wanted);
  EXPECT_EQ("h1 ssh-rsa AAAArsa\n|1|hashed= ssh-ed25519 AAAAx\nother ssh-ed25519 AAAAo\n"
            "h1,10.0.0.1 ssh-ed25519 AAAAnew\nh2,10.0.0.2 ssh-ed25519 AAAAh2\n",
            merged);
  EXPECT_EQ(merged, merge_known_hosts(merged, wanted));
  // a line naming the host together with another keeps the other name
  EXPECT_EQ("x ssh-ed25519 AAAAold\nh1 ssh-ed25519 AAAAnew\n",
            merge_known_hosts("h1,x ssh-ed25519 AAAAold\n", "h1 ssh-ed25519 AAAAnew\n"));
}

TEST(Fstab, TheMountPointsLineReplacedOrAppended) {
  std::string fstab = "# comment /mnt\nUUID=1 / ext4 defaults 0 1\nold:/x /mnt nfs defaults 0 0\n";
  EXPECT_EQ("# comment /mnt\nUUID=1 / ext4 defaults 0 1\nsrv:/s /mnt nfs rw 0 0\n",
            merge_fstab(fstab, "/mnt", "srv:/s /mnt nfs rw 0 0"));
  EXPECT_EQ("a / ext4 d 0 1\nsrv:/s /mnt nfs rw 0 0\n", merge_fstab("a / ext4 d 0 1\n", "/mnt", "srv:/s /mnt nfs rw 0 0"));
}

TEST(FileMode, ParsesOctalText) {
  EXPECT_EQ(std::optional<mode_t>(0600), parse_mode("0600"));
  EXPECT_FALSE(parse_mode("rw").has_value());
}

}  // namespace
}  // namespace xft::playbooks
