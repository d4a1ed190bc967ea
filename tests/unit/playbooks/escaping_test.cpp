// Escaping by construction: the renderer's modes on hostile values (exact
// output, and shell output run by a real /bin/sh that must echo the value back
// and run nothing), tags placed where quoting cannot hold, commands given as
// argv lists, a shell template sourced by sh, and the fstab and exports lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/mpirun.h"
#include "playbooks/playbook.h"
#include "playbooks/render.h"
#include "playbooks/runner.h"
#include "playbooks/tasks.h"
#include "tests/unit/playbooks/fake_host.h"
#include "tests/unit/playbooks/hostile_corpus.h"
#include "tests/unit/support/test_paths.h"

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;
using testing::MarkerDir;

std::string render_ok(const std::string& text, const Json& vars, Escape escape) {
  auto out = render_text(text, vars, escape, "t");
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? *out : "(error)";
}

std::string render_error(const std::string& text, const Json& vars, Escape escape, const std::string& what = "t") {
  auto out = render_text(text, vars, escape, what);
  return out.ok() ? "(rendered: " + *out + ")" : out.error().message;
}

// Every value a shell test carries: hand-made hostile ones and the corpus's
// literal rows, each aimed at the marker dir.
std::vector<std::string> hostile_values(const MarkerDir& dir) {
  std::string m = dir.path() + "/PWNED";
  std::vector<std::string> values = {
      "x'; touch " + m + "; echo '",
      "$(touch " + m + ")",
      "`touch " + m + "`",
      "a\ntouch " + m,
      "; touch " + m,
      "a && touch " + m + " || touch " + m,
      "x\" ; touch " + m + " ; echo \"",
      "a&b|c>d<e",
      "-o nolock",
      "--help",
      "with space",
      "",
      "'",
      "''",
      "\\",
      "it's \"quoted\" \\ back\\slash",
      "*",
      "~root",
      "$HOME ${PATH} $1",
      "tab\there",
      "\x1b[31mred",
      "#not a comment",
  };
  for (const char* field : {"shared", "nfs.export", "nfs.options", "extra_var"})
    for (const auto& value : testing::literal_values(field)) values.push_back(dir.aim(value));
  return values;
}

TEST(HostileCorpus, HoldsTheLiteralRowsThisEngineCarries) {
  auto has = [](const std::string& field, const std::string& value) {
    auto values = testing::literal_values(field);
    return std::find(values.begin(), values.end(), value) != values.end();
  };
  EXPECT_TRUE(has("shared", "/mnt/$(touch /tmp/PWNED-shared)"));
  EXPECT_TRUE(has("shared", "/mnt/with space"));
  EXPECT_TRUE(has("nfs.export", "/srv/share with space"));
  EXPECT_TRUE(has("extra_var", "x'; touch /tmp/PWNED-extra; echo '"));
  EXPECT_FALSE(testing::literal_values("nfs.options").empty());
}

// --- shell -------------------------------------------------------------------

TEST(RenderShell, QuotesEveryValueThatIsNotAPlainWord) {
  auto shell = [](const std::string& value) { return render_ok("{{v}}", {{"v", value}}, Escape::shell); };
  EXPECT_EQ("/mnt/x", shell("/mnt/x"));
  EXPECT_EQ("a=b,c:d@e%f+g_h-i.j", shell("a=b,c:d@e%f+g_h-i.j"));
  EXPECT_EQ("''", shell(""));
  EXPECT_EQ("'x'\\''; touch /tmp/PWNED; echo '\\'''", shell("x'; touch /tmp/PWNED; echo '"));
  EXPECT_EQ("'$(touch /tmp/PWNED)'", shell("$(touch /tmp/PWNED)"));
  EXPECT_EQ("'`touch /tmp/PWNED`'", shell("`touch /tmp/PWNED`"));
  EXPECT_EQ("'a\ntouch /tmp/PWNED'", shell("a\ntouch /tmp/PWNED"));
  EXPECT_EQ("'/mnt/with space'", shell("/mnt/with space"));
  EXPECT_EQ("'-o nolock'", shell("-o nolock"));
  EXPECT_EQ("'a&b|c>d<e'", shell("a&b|c>d<e"));
  // a section repeats its body per item, each value quoted on its own
  EXPECT_EQ("ls 'a b' c ", render_ok("ls {{#hosts}}{{name}} {{/hosts}}", {{"hosts", {{{"name", "a b"}}, {{"name", "c"}}}}},
                                     Escape::shell));
}

TEST(RenderShell, RealShellEchoesEveryHostileValueAndRunsNothing) {
  MarkerDir dir;
  for (const auto& value : hostile_values(dir)) {
    auto line = render_ok("printf '%s' {{v}}", {{"v", value}}, Escape::shell);
    auto ran = testing::run_locally(line);
    EXPECT_EQ(0, ran.exit_status) << line << "\n" << ran.err;
    EXPECT_EQ(value, ran.out) << line;
    // and as a path: a file with exactly that name (where a name can be one)
    if (value.empty() || value.find('/') != std::string::npos) continue;
    auto made = render_ok("cd {{dir}} && : > {{v}}", {{"dir", dir.work()}, {"v", value}}, Escape::shell);
    EXPECT_EQ(0, testing::run_locally(made).exit_status) << made;
    EXPECT_TRUE(std::filesystem::exists(dir.work() + "/" + value)) << made;
  }
  EXPECT_EQ(std::vector<std::string>{}, dir.markers());
}

TEST(RenderShell, TagsWhereQuotingCannotHoldAreRefused) {
  Json vars = {{"x", "v"}, {"hosts", Json::array({Json::object()})}};
  auto advice = [](const std::string& tag, const std::string& why) {
    return "t: " + tag + " " + why + "; write " + tag + " as a bare word: its value is quoted for the shell";
  };
  EXPECT_EQ(advice("{{x}}", "is inside '...' quotes"), render_error("echo '{{x}}'", vars, Escape::shell));
  EXPECT_EQ(advice("{{x}}", "is inside \"...\" quotes"), render_error("echo \"a {{x}}\"", vars, Escape::shell));
  EXPECT_EQ(advice("{{ x }}", "is inside a # comment"), render_error("true # {{ x }}", vars, Escape::shell));
  EXPECT_EQ(advice("{{x}}", "follows a backslash, which would undo its quoting"),
            render_error("echo \\{{x}}", vars, Escape::shell));
  EXPECT_EQ(advice("{{x}}", "follows a $"), render_error("echo ${{x}}", vars, Escape::shell));
  EXPECT_EQ(advice("{{x}}", "is inside `...`, which a quoted backquote would end (use $(...))"),
            render_error("echo `basename {{x}}`", vars, Escape::shell));
  // bash reads \' inside $'...' as a quote, not its end
  EXPECT_EQ(advice("{{x}}", "is inside $'...' quotes"), render_error("echo $'a\\'{{x}}'", vars, Escape::shell));
  // quotes inside `...` do not hide its end: here the shell reads {{x}} inside '...'
  EXPECT_EQ(advice("{{x}}", "is inside '...' quotes"), render_error("`a '`' ` {{x}} '", vars, Escape::shell));
  EXPECT_EQ(advice("{{x}}", "comes after a here-document (<<), where the shell does not read quotes"),
            render_error("cat <<EOF\n{{x}}\nEOF", vars, Escape::shell));
  // a section body that leaves a quote open would change the quoting of what follows
  EXPECT_EQ(advice("{{/hosts}}", "is inside '...' quotes"),
            render_error("{{#hosts}}'{{/hosts}}'{{x}}", vars, Escape::shell));
  EXPECT_EQ("t: {{=...=}} (new delimiters) is not allowed in shell commands",
            render_error("{{=<% %>=}}<%x%>", vars, Escape::shell));
  // quotes that close before the tag, escaped quotes, '#' inside a word, and the raw form are fine
  EXPECT_EQ("printf '%s\\n' v", render_ok("printf '%s\\n' {{x}}", vars, Escape::shell));
  EXPECT_EQ("echo `date` $(basename v) '`'", render_ok("echo `date` $(basename {{x}}) '`'", vars, Escape::shell));
  EXPECT_EQ("echo \\' \"\\\"\" a#b v", render_ok("echo \\' \"\\\"\" a#b {{x}}", vars, Escape::shell));
  EXPECT_EQ("echo 'v'", render_ok("echo '{{{x}}}'", vars, Escape::shell));
  EXPECT_EQ("echo 'v'", render_ok("echo '{{& x}}'", vars, Escape::shell));
}

TEST(RenderShell, RefusesANulByte) {
  EXPECT_EQ("t: {{x}} contains a NUL byte, which no shell word can hold",
            render_error("echo {{x}}", {{"x", std::string("a\0b", 3)}}, Escape::shell));
}

// --- config and line ---------------------------------------------------------

TEST(RenderConfig, SpacesAndBackslashesAsOctalControlCharactersRefused) {
  std::string exports = "{{path}} {{address}}({{options}})\n";
  Json vars = {{"path", "/srv/share with space"}, {"address", "10.0.0.1"}, {"options", "rw,sync,no_subtree_check,anonuid=65534"}};
  EXPECT_EQ("/srv/share\\040with\\040space 10.0.0.1(rw,sync,no_subtree_check,anonuid=65534)\n",
            render_ok(exports, vars, Escape::config));
  EXPECT_EQ("/srv/a\\134b\n", render_ok("{{p}}\n", {{"p", "/srv/a\\b"}}, Escape::config));
  EXPECT_EQ("/mnt/$(touch\\040/tmp/PWNED) /mnt/a&b|c>d<e\n",
            render_ok("{{a}} {{b}}\n", {{"a", "/mnt/$(touch /tmp/PWNED)"}, {"b", "/mnt/a&b|c>d<e"}}, Escape::config));

  auto with_options = [&](const std::string& options) {
    Json hostile = vars;
    hostile["options"] = options;
    return render_error(exports, hostile, Escape::config, "template nfs_exports.mustache");
  };
  EXPECT_EQ("template nfs_exports.mustache: {{options}} contains a newline (\"rw\\n/ *(rw,no_root_squash)\"); a value "
            "here must be one line of printable text",
            with_options("rw\n/ *(rw,no_root_squash)"));
  EXPECT_EQ("template nfs_exports.mustache: {{options}} stands in an option list (...) and contains a space or a "
            "parenthesis (\"rw) *(rw,no_root_squash\"); give options as a,b,c",
            with_options("rw) *(rw,no_root_squash"));
  EXPECT_EQ("template nfs_exports.mustache: {{options}} stands in an option list (...) and contains a space or a "
            "parenthesis (\"rw no_root_squash\"); give options as a,b,c",
            with_options("rw no_root_squash"));
  Json newline_path = vars;
  newline_path["path"] = "/srv/x\n/ *(rw)";
  EXPECT_EQ("template nfs_exports.mustache: {{path}} contains a newline (\"/srv/x\\n/ *(rw)\"); a value here must be "
            "one line of printable text",
            render_error(exports, newline_path, Escape::config, "template nfs_exports.mustache"));
  for (const auto& value : testing::literal_values("nfs.options")) {
    Json literal = vars;
    literal["options"] = value;
    EXPECT_EQ("/srv/share\\040with\\040space 10.0.0.1(" + value + ")\n", render_ok(exports, literal, Escape::config));
  }
}

TEST(RenderLine, ValuesAsGivenButOneLine) {
  EXPECT_EQ("/mnt/with space/x'y", render_ok("{{p}}/x'y", {{"p", "/mnt/with space"}}, Escape::line));
  EXPECT_EQ("t: {{p}} contains a tab (\"a\\tb\"); a value here must be one line of printable text",
            render_error("{{p}}", {{"p", "a\tb"}}, Escape::line));
  EXPECT_EQ("t: {{p}} contains an escape character (\"/mnt/\\x1b[31mred\"); a value here must be one line of "
            "printable text",
            render_error("{{p}}", {{"p", "/mnt/\x1b[31mred"}}, Escape::line));
  EXPECT_EQ("t: {{p}} contains a carriage return (\"a\\r\"); a value here must be one line of printable text",
            render_error("{{p}}", {{"p", "a\r"}}, Escape::line));
  // the template's own text may span lines; only values may not
  EXPECT_EQ("a\nb\n", render_ok("{{p}}\nb\n", {{"p", "a"}}, Escape::line));
  EXPECT_EQ("a\nb", render_ok("{{p}}", {{"p", "a\nb"}}, Escape::raw));
}

TEST(RenderTemplates, EscapeChosenByFileName) {
  EXPECT_EQ(Escape::shell, template_escape("profile.sh.mustache"));
  EXPECT_EQ(Escape::shell, template_escape("profile.d/x.sh"));
  EXPECT_EQ(Escape::config, template_escape("hosts_block.mustache"));
  EXPECT_EQ(Escape::config, template_escape("nfs_exports.mustache"));
  EXPECT_EQ(Escape::config, template_escape("finish.mustache"));
}

std::string read_template(const std::string& name) {
  std::ifstream in(xft::test::source_dir() + "/templates/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A shell script template of the kind a playbook may ship (a profile.d
// script): every value is quoted by the renderer, none by hand.
const char* const kShellTemplate =
    "export FI_PROVIDER={{fi_provider}}\n"
    "{{#fi_iface}}\n"
    "export FI_TCP_IFACE={{fi_iface}}\n"
    "{{/fi_iface}}\n"
    "{{#shared_path}}\n"
    "export XFT_SHARED_PATH={{shared_path}}\n"
    "{{/shared_path}}\n";

TEST(EnvScript, RenderedForTheShellWithoutHandWrittenQuotes) {
  Json vars = {{"fi_provider", "tcp;ofi_rxm"}, {"fi_iface", "eth0"}, {"shared_path", "/mnt/with space"}};
  auto text = render_text(kShellTemplate, vars, template_escape("profile.sh.mustache"), "env");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ("export FI_PROVIDER='tcp;ofi_rxm'\n"
            "export FI_TCP_IFACE=eth0\n"
            "export XFT_SHARED_PATH='/mnt/with space'\n",
            *text);
  for (const char* name : {"hosts_block.mustache", "mpi_hostfile.mustache", "nfs_exports.mustache"})
    EXPECT_EQ(std::string::npos, read_template(name).find("{{{")) << name << " uses the raw form";
}

TEST(EnvScript, SourcedBySh_EveryHostileValueComesBackExactly) {
  MarkerDir dir;
  std::string file = dir.work() + "/script.sh";
  auto providers = testing::literal_values("fabric.provider");
  ASSERT_FALSE(providers.empty());
  for (const auto& value : hostile_values(dir)) {
    if (value.empty()) continue;  // an empty shared path is "none": the line is left out
    Json vars = {{"fi_provider", providers.back()}, {"fi_iface", "eth0"}, {"shared_path", value}};
    auto text = render_text(kShellTemplate, vars, Escape::shell, "env");
    ASSERT_TRUE(text.ok()) << text.error().message;
    std::ofstream(file, std::ios::trunc) << *text;
    auto ran = testing::run_locally(". " + launcher::shell_join({file}) +
                                    " && printf '%s|%s|%s' \"$XFT_SHARED_PATH\" \"$FI_PROVIDER\" \"$FI_TCP_IFACE\"");
    EXPECT_EQ(0, ran.exit_status) << *text << ran.err;
    EXPECT_EQ(value + "|" + providers.back() + "|eth0", ran.out) << *text;
  }
  EXPECT_EQ(std::vector<std::string>{}, dir.markers());
}

// --- where each task field goes ------------------------------------------------

Task one_task(const std::string& yaml) {
  auto book = parse_playbook("tasks:\n  - " + yaml + "\n", "p.yaml");
  EXPECT_TRUE(book.ok()) << (book.ok() ? "" : book.error().message);
  return book.ok() ? book->tasks.at(0) : Task{};
}

std::string load_error(const std::string& yaml) {
  auto book = parse_playbook("tasks:\n  - " + yaml + "\n", "p.yaml");
  return book.ok() ? "(loaded)" : book.error().message;
}

TEST(TaskArgs, EachFieldRenderedWithItsKindsEscape) {
  Json vars = {{"p", "/mnt/with space"}, {"v", "x'; y"}, {"o", "rw"}};
  auto render = [&](const std::string& yaml) {
    auto args = render_task_args(one_task(yaml), vars);
    EXPECT_TRUE(args.ok()) << (args.ok() ? "" : args.error().message);
    return args.ok() ? *args : Json();
  };
  // a command string: values shell-quoted; the guards are paths
  EXPECT_EQ((Json{{"cmd", "ls -- '/mnt/with space'"}, {"creates", "/mnt/with space/x"}}),
            render("command: {cmd: 'ls -- {{p}}', creates: '{{p}}/x'}"));
  EXPECT_EQ((Json{{"cmd", "echo 'x'\\''; y'"}}), render("shell: echo {{v}}"));
  // an argv list: words left as values, quoted when the command is built
  EXPECT_EQ((Json{{"cmd", {"ls", "--", "/mnt/with space/x'; y"}}}), render("command: [ls, --, '{{p}}/{{v}}']"));
  EXPECT_EQ((Json{{"path", "/mnt/with space"}, {"state", "directory"}}), render("file: {path: '{{p}}', state: directory}"));
  EXPECT_EQ((Json{{"path", "/etc/x"}, {"marker", "m"}, {"block", "/mnt/with\\040space(rw)\n"}}),
            render("block: {path: /etc/x, marker: m, block: \"{{p}}({{o}})\\n\"}"));
  EXPECT_EQ((Json{{"dest", "/x"}, {"content", "a\nb"}}), [&] {
    Json multi = vars;
    multi["c"] = "a\nb";
    return *render_task_args(one_task("copy: {dest: /x, content: '{{c}}'}"), multi);
  }());

  Json newline = {{"p", "/mnt/x\n/ *(rw)"}};
  auto refused = [&](const std::string& yaml) {
    auto args = render_task_args(one_task(yaml), newline);
    return args.ok() ? "(rendered)" : args.error().message;
  };
  EXPECT_EQ("file.path: {{p}} contains a newline (\"/mnt/x\\n/ *(rw)\"); a value here must be one line of printable "
            "text",
            refused("file: {path: '{{p}}'}"));
  EXPECT_EQ("command.cmd[1]: {{p}} contains a newline (\"/mnt/x\\n/ *(rw)\"); a value here must be one line of "
            "printable text",
            refused("command: [cat, '{{p}}']"));
  EXPECT_EQ("mount.path: {{p}} contains a newline (\"/mnt/x\\n/ *(rw)\"); a value here must be one line of "
            "printable text",
            refused("mount: {path: '{{p}}', src: 's:/x', fstype: nfs}"));
  EXPECT_EQ("authorized_key.key: {{p}} contains a newline (\"/mnt/x\\n/ *(rw)\"); a value here must be one line of "
            "printable text",
            refused("authorized_key: {key: 'ssh-ed25519 AAAA {{p}}'}"));
}

TEST(TaskArgs, CommandListsAndMisplacedTagsAtLoad) {
  EXPECT_EQ((Json{"cat", "--", "{{home}}/.ssh/id_ed25519.pub"}),
            one_task("command: [cat, --, '{{home}}/.ssh/id_ed25519.pub']").args["cmd"]);
  EXPECT_EQ((Json{"ssh-keygen", "-N", ""}), one_task("command: {cmd: [ssh-keygen, -N, ''], creates: /k}").args["cmd"]);
  EXPECT_EQ("p.yaml:2:12: tasks[0].shell: expected a string or a mapping (for a list of words use command:)",
            load_error("shell: [ls, /]"));
  EXPECT_EQ("p.yaml:2:18: tasks[0].shell.cmd: expected one command string (for a list of words use command:)",
            load_error("shell: {cmd: [ls, /]}"));
  EXPECT_EQ("p.yaml:2:14: tasks[0].command: expected at least the program to run", load_error("command: []"));
  EXPECT_EQ("p.yaml:2:19: tasks[0].command: expected a list of words (strings)", load_error("command: [ls, [a]]"));
  EXPECT_EQ("p.yaml:2:14: tasks[0].command: {{x}} is inside '...' quotes; write {{x}} as a bare word: its value is "
            "quoted for the shell",
            load_error("command: \"cat '{{x}}'\""));
  EXPECT_EQ("p.yaml:2:18: tasks[0].shell.cmd: {{x}} is inside \"...\" quotes; write {{x}} as a bare word: its value "
            "is quoted for the shell",
            load_error("shell: {cmd: 'echo \"{{x}}\"'}"));
}

TEST(ShippedPlaybook, NoHandQuotedTagsNoRawForm) {
  std::ifstream in(xft::test::source_dir() + "/playbooks/setup_hosts.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  for (const char* bad : {"'{{", "\"{{{", "{{{", "{{&"})
    EXPECT_EQ(std::string::npos, text.str().find(bad)) << "setup_hosts.yaml holds " << bad;
  auto book = load_playbook(xft::test::source_dir() + "/playbooks/setup_hosts.yaml");
  ASSERT_TRUE(book.ok()) << book.error().message;
  int argv_commands = 0, shell_strings = 0;
  for (const auto& task : book->tasks) {
    if (task.kind == TaskKind::command) {
      EXPECT_TRUE(task.args["cmd"].is_array()) << task.name << ": a command is an argv list";
      ++argv_commands;
    }
    shell_strings += task.kind == TaskKind::shell;
  }
  EXPECT_EQ(6, argv_commands);
  EXPECT_EQ(2, shell_strings);
}

// --- commands run for real -------------------------------------------------------

// A host whose commands a real /bin/sh runs here.
class LocalHost : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& host = transport_.add("n1", "10.0.0.1");
    host.handler = [](testing::FakeHost& self, const std::string& command) {
      return testing::run_locally(command, self.stdin_data);
    };
  }
  PlayReport run(const std::string& tasks, const Json& vars) {
    auto book = parse_playbook("name: t\ntasks:\n" + tasks, "t.yaml");
    EXPECT_TRUE(book.ok()) << (book.ok() ? "" : book.error().message);
    RunSettings settings;
    settings.extra_vars = vars;
    return run_play(*book, transport_.inventory_hosts(), transport_, settings);
  }
  static const TaskResult& result_of(const PlayReport& report, const std::string& name) {
    for (const auto& task : report.tasks)
      if (task.name == name) return task.results.at(0).result;
    throw std::runtime_error("no task " + name);
  }
  testing::FakeTransport transport_;
};

TEST_F(LocalHost, ShellStringsAndArgvListsCarryEveryValueLiterally) {
  MarkerDir dir;
  for (const auto& value : hostile_values(dir)) {
    bool one_line = control_character_in(value).empty();
    auto report = run("  - {name: shell, shell: \"printf '%s' {{v}}\"}\n"
                      "  - {name: command, command: \"printf '%s' {{v}}\"}\n"
                      "  - {name: argv, command: [printf, '%s|', '{{v}}', '{{v}}/x']}\n"
                      "  - {name: dir, command: {cmd: [mkdir, -p, --, '{{d}}/{{v}}'], chdir: '{{d}}'}}\n",
                      {{"v", value}, {"d", dir.work()}});
    EXPECT_EQ(value, result_of(report, "shell").data["stdout"].get<std::string>()) << value;
    EXPECT_EQ(value, result_of(report, "command").data["stdout"].get<std::string>()) << value;
    if (one_line) {
      EXPECT_EQ(value + "|" + value + "/x|", result_of(report, "argv").data["stdout"].get<std::string>()) << value;
      EXPECT_EQ(TaskStatus::changed, result_of(report, "dir").status) << result_of(report, "dir").msg;
      EXPECT_TRUE(std::filesystem::is_directory(dir.work() + "/" + value)) << value;
    } else {
      EXPECT_EQ(TaskStatus::failed, result_of(report, "argv").status);
      EXPECT_EQ("command.cmd[2]: {{v}} contains " + control_character_in(value) + " (\"" + printable(value) +
                    "\"); a value here must be one line of printable text",
                result_of(report, "argv").msg);
    }
  }
  EXPECT_EQ(std::vector<std::string>{}, dir.markers());
}

TEST_F(LocalHost, ArgvWordsQuotedOneByOne) {
  auto report = run("  - {name: argv, command: [printf, '[%s]', 'a b', '', \"it's\", '-o nolock', plain]}\n",
                    Json::object());
  EXPECT_EQ("[a b][][it's][-o nolock][plain]", result_of(report, "argv").data["stdout"].get<std::string>());
  EXPECT_EQ("printf '[%s]' 'a b' '' 'it'\\''s' '-o nolock' plain", transport_["n1"].commands.at(0));
}

// --- fstab and exports lines ------------------------------------------------------

TEST(FstabLine, FieldsEscapedAsFstabReadsThem) {
  EXPECT_EQ("10.0.0.1:/srv/share\\040with\\040space /mnt/with\\040space nfs defaults,_netdev 0 0",
            *fstab_line("10.0.0.1:/srv/share with space", "/mnt/with space", "nfs", "defaults,_netdev"));
  EXPECT_EQ("a\\011b\\012c\\134d", *fstab_field("a\tb\nc\\d", "path"));
  EXPECT_EQ("path contains an escape character (\"/mnt/\\x1b[31mred\"), which fstab cannot hold",
            fstab_field("/mnt/\x1b[31mred", "path").error().message);
  EXPECT_EQ("path 'mnt/relative' is not an absolute path", fstab_line("s:/x", "mnt/relative", "nfs", "rw").error().message);
  EXPECT_EQ("fstype is empty (an fstab field cannot be)", fstab_line("s:/x", "/mnt", "", "rw").error().message);
  // every literal shared path: one line of 6 fields whose mount point reads back as the path
  for (const auto& path : testing::literal_values("shared")) {
    auto line = fstab_line("srv:/export dir", path, "nfs", "defaults");
    ASSERT_TRUE(line.ok()) << path;
    std::istringstream words(*line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    ASSERT_EQ(6u, fields.size()) << *line;
    std::string target = fields[1];
    for (size_t at = target.find("\\040"); at != std::string::npos; at = target.find("\\040")) target.replace(at, 4, " ");
    EXPECT_EQ(path, target);
  }
}

TEST(FstabLine, MergeFindsTheEscapedMountPoint) {
  std::string old_line = "old:/x /mnt/with\\040space nfs defaults 0 0";
  std::string new_line = "new:/y /mnt/with\\040space nfs defaults 0 0";
  EXPECT_EQ("UUID=1 / ext4 defaults 0 1\n" + new_line + "\n",
            merge_fstab("UUID=1 / ext4 defaults 0 1\n" + old_line + "\n", "/mnt/with\\040space", new_line));
}

}  // namespace
}  // namespace xft::playbooks
