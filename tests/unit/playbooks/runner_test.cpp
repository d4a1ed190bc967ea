// The playbook runner and the shipped setup playbook against in-memory hosts
// (fake_host.h): run semantics, check mode, idempotency, and the NFS steps'
// exact files and commands (this kernel has no NFS, so the mount cannot run).
#include "playbooks/runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "launcher/mpirun.h"
#include "playbooks/playbook.h"
#include "playbooks/report_text.h"
#include "tests/unit/playbooks/fake_host.h"
#include "tests/unit/playbooks/hostile_corpus.h"
#include "tests/unit/support/test_paths.h"

namespace xft::playbooks {
namespace {

using testing::FakeHost;
using testing::FakeTransport;
using remote::CommandResult;

Playbook parse(const std::string& text) {
  auto book = parse_playbook(text, "test.yaml");
  EXPECT_TRUE(book.ok()) << (book.ok() ? "" : book.error().message);
  return book.ok() ? *book : Playbook{};
}

std::string statuses(const PlayReport& report, const std::string& task) {
  for (const auto& item : report.tasks)
    if (item.name == task) {
      std::string out;
      for (const auto& [host, result] : item.results) out += host + "=" + status_name(result.status) + " ";
      return out;
    }
  return "(task not run)";
}

// The word after `flag` in `words`, "" when absent.
std::string after(const std::vector<std::string>& words, const std::string& flag) {
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == flag) return words[i + 1];
  return "";
}

// fstab(5) octal escapes undone (what getmntent does).
std::string fstab_decode(std::string text) {
  for (const auto& [code, c] : {std::pair{"\\040", ' '}, {"\\011", '\t'}, {"\\012", '\n'}, {"\\134", '\\'}})
    for (size_t at = text.find(code); at != std::string::npos; at = text.find(code, at + 1)) text.replace(at, 4, 1, c);
  return text;
}

// A shell-ish host: enough of ssh-keygen, cat, chmod, findmnt, mount and the
// package probe for the shipped setup playbook, read from the command's words
// as a shell would split them.
CommandResult unix_like(FakeHost& host, const std::string& command) {
  auto words = testing::shell_words(command);
  CommandResult result;
  if (words.empty()) return result;
  const auto& program = words[0];
  if (program == "ssh-keygen") {
    auto key = after(words, "-f");
    host.files[key] = {"PRIVATE", 0600, false};
    host.files[key + ".pub"] = {"ssh-ed25519 AAAAuser" + host.host.name + " root@" + host.host.name + "\n", 0644, false};
  } else if (program == "cat") {
    auto found = host.files.find(words.back());
    if (found == host.files.end()) result = {1, "", "cat: no such file\n"};
    else result.out = found->second.content;
  } else if (program == "chmod") {
    host.files[words.back()].mode = static_cast<mode_t>(std::stoul(words[1], nullptr, 8));
  } else if (program == "findmnt") {
    // findmnt -r writes a space as \x20
    auto found = host.files.find("mounted:" + after(words, "--mountpoint"));
    if (found != host.files.end())
      result.out = std::regex_replace(found->second.content, std::regex(" "), "\\x20") + "\n";
  } else if (program == "mkdir" && after(words, "&&") == "mount") {
    // mount PATH takes the source from the fstab line whose mount point is PATH
    auto path = words.back();
    std::istringstream fstab(host.files["/etc/fstab"].content);
    for (std::string source, target, rest; fstab >> source >> target && std::getline(fstab, rest);)
      if (fstab_decode(target) == path) host.files["mounted:" + path] = {fstab_decode(source), 0, false};
  } else if (command.find("dpkg-query") != std::string::npos) {
    result.out = "apt\nnumactl\nlibfabric1\nlibfabric-bin\nopenmpi-bin\nrdma-core\nibverbs-utils\nnfs-common\nnfs-kernel-server\n";
  }
  return result;
}

TEST(Runner, LinearOrderRegisterAndConditions) {
  FakeTransport transport;
  for (auto name : {"a", "b", "c"}) transport.add(name, std::string("10.0.0.") + (name[0] == 'a' ? "1" : name[0] == 'b' ? "2" : "3"));
  for (auto name : {"a", "b", "c"})
    transport[name].handler = [](FakeHost& host, const std::string& command) {
      CommandResult result;
      if (command == "hostname") result.out = host.host.name + "\n";
      if (command == "false") result.exit_status = 1;
      return result;
    };
  auto book = parse(R"(
name: t
tasks:
  - name: who
    command: hostname
    register: who
    changed_when: "false"
  - name: only b
    when: who.stdout == 'b'
    command: "false"
    failed_when: "rc != 1"
  - name: after
    copy: {dest: /x, content: "{{inventory_hostname}} saw {{#hosts}}{{name}}={{who.stdout}} {{/hosts}}"}
)");
  auto report = run_play(book, transport.inventory_hosts(), transport, {});
  EXPECT_EQ("a=ok b=ok c=ok ", statuses(report, "who"));
  EXPECT_EQ("a=skipped b=changed c=skipped ", statuses(report, "only b"));
  EXPECT_EQ("a saw a=a b=b c=c ", transport["a"].files["/x"].content);
  EXPECT_FALSE(report.any_failed());
}

TEST(Runner, FailedHostLeavesThePlayAndUnreachableIsReported) {
  FakeTransport transport;
  transport.add("a", "10.0.0.1");
  transport.add("b", "10.0.0.2");
  transport.add("c", "10.0.0.3").reachable = false;
  transport["b"].handler = [](FakeHost&, const std::string&) { return CommandResult{3, "", "boom\nmore\n"}; };
  auto book = parse("name: t\ntasks:\n  - {name: one, command: run-it}\n  - {name: two, command: run-it}\n");
  auto report = run_play(book, transport.inventory_hosts(), transport, {});
  EXPECT_EQ("a=ok b=ok c=unreachable ", statuses(report, "connect"));
  EXPECT_EQ("a=changed b=failed ", statuses(report, "one"));
  EXPECT_EQ("a=changed ", statuses(report, "two"));
  EXPECT_EQ("exit 3: boom", report.tasks[1].results[1].result.msg);
  EXPECT_TRUE(report.any_failed());
  EXPECT_TRUE(report.any_unreachable());
  EXPECT_EQ(2u, transport["a"].commands.size());
  EXPECT_EQ(1u, transport["b"].commands.size());
}

TEST(Runner, AnyErrorsFatalAndMaxFailPercentageStopEveryHost) {
  for (auto header : {"any_errors_fatal: true", "max_fail_percentage: 30"}) {
    FakeTransport transport;
    for (auto name : {"a", "b", "c"}) transport.add(name, "10.0.0.1");
    transport["a"].handler = [](FakeHost&, const std::string&) { return CommandResult{1, "", ""}; };
    auto book = parse(std::string("name: t\n") + header + "\ntasks:\n  - {name: one, command: x}\n  - {name: two, command: y}\n");
    auto report = run_play(book, transport.inventory_hosts(), transport, {});
    EXPECT_EQ("(task not run)", statuses(report, "two")) << header;
    EXPECT_FALSE(report.stopped.empty()) << header;
  }
  // 1 of 3 failed is 33 %, under 40: the others go on.
  FakeTransport transport;
  for (auto name : {"a", "b", "c"}) transport.add(name, "10.0.0.1");
  transport["a"].handler = [](FakeHost&, const std::string&) { return CommandResult{1, "", ""}; };
  auto book = parse("name: t\nmax_fail_percentage: 40\ntasks:\n  - {name: one, command: x}\n  - {name: two, command: y}\n");
  EXPECT_EQ("b=changed c=changed ", statuses(run_play(book, transport.inventory_hosts(), transport, {}), "two"));
}

TEST(Runner, RetriesUntilAndRunOnce) {
  FakeTransport transport;
  transport.add("a", "10.0.0.1");
  transport.add("b", "10.0.0.2");
  int calls = 0;
  transport["a"].handler = [&](FakeHost&, const std::string&) {
    ++calls;
    return CommandResult{0, calls >= 3 ? "ready\n" : "wait\n", ""};
  };
  auto book = parse(R"(
name: t
tasks:
  - name: poll
    run_once: true
    command: probe
    until: "'ready' in stdout"
    retries: 5
    delay: 0
    register: poll
  - name: use
    copy: {dest: /r, content: "{{poll.stdout}}"}
  - name: give up
    command: probe
    until: "stdout == 'never'"
    retries: 1
    delay: 0
    when: inventory_hostname == 'b'
)");
  auto report = run_play(book, transport.inventory_hosts(), transport, {});
  EXPECT_EQ(3, calls);
  EXPECT_EQ("a=changed ", statuses(report, "poll"));
  EXPECT_EQ("ready", transport["b"].files["/r"].content);  // run_once result seen by every host
  EXPECT_EQ("a=skipped b=failed ", statuses(report, "give up"));
  EXPECT_EQ("until 'stdout == 'never'' never held (after 2 attempts)", report.tasks.back().results[1].result.msg);
}

TEST(Runner, CheckModeWritesNothingAndSaysWhatWouldChange) {
  FakeTransport transport;
  transport.add("a", "10.0.0.1").files["/etc/hosts"] = {"127.0.0.1 localhost\n", 0644, false};
  auto book = parse(R"(
name: t
tasks:
  - {name: block, block: {path: /etc/hosts, marker: m, block: "10.0.0.1 a"}}
  - {name: cmd, command: {cmd: touch /y, creates: /y}}
  - {name: dir, file: {path: /d, state: directory}}
)");
  RunSettings settings;
  settings.check = true;
  settings.diff = true;
  auto report = run_play(book, transport.inventory_hosts(), transport, settings);
  EXPECT_EQ("a=changed ", statuses(report, "block"));
  EXPECT_EQ("/etc/hosts: would change content", report.tasks[1].results[0].result.msg);
  EXPECT_EQ("--- /etc/hosts (before)\n+++ /etc/hosts (after)\n@@ -1 +1,4 @@\n 127.0.0.1 localhost\n+# BEGIN m\n+10.0.0.1 a\n"
            "+# END m\n",
            report.tasks[1].results[0].result.diff);
  EXPECT_EQ("a=changed ", statuses(report, "cmd"));
  EXPECT_TRUE(transport["a"].writes.empty());
  EXPECT_TRUE(transport["a"].commands.empty());
}

const char* const kSecondRunAt64Hosts = R"(PLAY [setup hosts] on 64 hosts
CONNECT
  ok: node[01-64]
TASK [~/.ssh exists with mode 0700]
  ok: node[01-64]
TASK [an ed25519 key pair on every host (an existing one is kept)]
  ok: node[01-64]
TASK [read each host's public key]
  ok: node[01-64]
TASK [every host's key and the control node's key authorized on every host]
  ok: node[01-64]
TASK [known_hosts holds every host by name and address, from the keys this run verified]
  ok: node[01-64]
TASK [root's known_hosts holds every host (--root-ssh; makes /root/.ssh 0700)]
  skipped: node[01-64]
TASK [root's ed25519 key pair (--root-ssh; an existing one is kept)]
  skipped: node[01-64]
TASK [read root's public key (--root-ssh)]
  skipped: node[01-64]
TASK [every host's root key authorized for root on every host (--root-ssh)]
  skipped: node[01-64]
TASK [the inventory's names in a managed /etc/hosts block]
  ok: node[01-64]
TASK [/etc/xftctl exists]
  ok: node[01-64]
TASK [MPI hostfile]
  ok: node[01-64]
TASK [packages a rank needs]
  ok: node[01-64]
TASK [NFS server package]
  ok: node01
  skipped: node[02-64]
TASK [NFS client package]
  skipped: node01
  ok: node[02-64]
TASK [the exported directory exists]
  ok: node01
  skipped: node[02-64]
TASK [the shared path is exported to every host]
  ok: node01
  skipped: node[02-64]
TASK [the NFS server serves the new exports]
  skipped: node[01-64]
TASK [the shared path is mounted from the server (and in fstab)]
  skipped: node01
  ok: node[02-64]
TASK [shared path check, write a marker on one host]
  ok: node01
TASK [shared path check, read the marker on every host]
  ok: node[01-64]
TASK [shared path check, remove the marker]
  ok: node01
RECAP
  node01       ok=15 changed=0 failed=0 unreachable=0 skipped=7
  node[02-64]  ok=12 changed=0 failed=0 unreachable=0 skipped=8
)";

// The shipped playbook's 22 tasks on 64 hosts that all succeed (the shared
// path check reads a real directory every fake host shares): the report as
// the command prints it fits 100 columns and 60 lines, first run and second.
TEST(ShippedSetupAtScale, SixtyFourHostsReportInAHundredColumnsAndSixtyLines) {
  auto book = load_playbook(xft::test::source_dir() + "/playbooks/setup_hosts.yaml");
  ASSERT_TRUE(book.ok()) << book.error().message;
  ASSERT_EQ(22u, book->tasks.size());
  testing::MarkerDir dir;
  FakeTransport transport;
  char name[16], address[16];
  for (int i = 1; i <= 64; ++i) {
    std::snprintf(name, sizeof name, "node%02d", i);
    std::snprintf(address, sizeof address, "10.9.0.%d", i);
    auto& host = transport.add(name, address);
    host.host.shared = dir.work();
    host.handler = [](FakeHost& host, const std::string& command) {
      return command.find(".xftctl-shared-") == std::string::npos ? unix_like(host, command)
                                                                  : testing::run_locally(command, host.stdin_data);
    };
    host.files["/etc/hosts"] = {"127.0.0.1 localhost\n", 0644, false};
  }
  RunSettings settings;
  settings.templates_dir = xft::test::source_dir() + "/templates";
  settings.extra_vars = {{"control_pubkey", "ssh-ed25519 AAAAcontrol xftctl@ctl"}, {"run_id", "r1"},
                         {"nfs_enabled", true}, {"nfs_server_name", "node01"}, {"nfs_server_address", "10.9.0.1"},
                         {"nfs_export_path", "/srv/shared"}, {"nfs_options", "rw,sync,no_subtree_check"}};
  for (int run = 1; run <= 2; ++run) {
    auto report = run_play(*book, transport.inventory_hosts(), transport, settings);
    ASSERT_FALSE(report.any_failed()) << format_recap(report);
    ASSERT_EQ(23u, report.tasks.size());
    std::string text = "PLAY [setup hosts] on 64 hosts\n";
    for (const auto& task : report.tasks) text += format_task(task);
    text += format_recap(report);
    std::istringstream lines(text);
    size_t count = 0;
    for (std::string line; std::getline(lines, line); ++count) EXPECT_LE(line.size(), kReportWidth) << line;
    EXPECT_LE(count, 60u) << text;
    if (run == 2) {
      EXPECT_EQ(kSecondRunAt64Hosts, text);
    }
  }
}

class ShippedSetup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = load_playbook(xft::test::source_dir() + "/playbooks/setup_hosts.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    book_ = *loaded;
    for (int i = 1; i <= 3; ++i) {
      auto& host = transport_.add("n" + std::to_string(i), "10.9.0." + std::to_string(i));
      host.host.shared = "/mnt/shared";
      host.handler = unix_like;
      host.files["/etc/hosts"] = {"127.0.0.1 localhost\n", 0644, false};
    }
    settings_.templates_dir = xft::test::source_dir() + "/templates";
    settings_.skip_tags = {"shared"};
    settings_.extra_vars = {{"control_pubkey", "ssh-ed25519 AAAAcontrol xftctl@ctl"},
                            {"run_id", "r1"},
                            {"nfs_enabled", true},
                            {"nfs_server_name", "n1"},
                            {"nfs_server_address", "10.9.0.1"},
                            {"nfs_export_path", "/srv/shared"},
                            {"nfs_options", "rw,sync,no_root_squash,no_subtree_check"}};
  }
  PlayReport run(bool check = false) {
    auto settings = settings_;
    settings.check = check;
    return run_play(book_, transport_.inventory_hosts(), transport_, settings);
  }
  static int changed(const PlayReport& report) {
    int total = 0;
    for (const auto& host : report.recap) total += host.changed;
    return total;
  }
  static int count_of(const std::vector<std::string>& list, const std::string& needle) {
    int n = 0;
    for (const auto& item : list) n += item.find(needle) != std::string::npos;
    return n;
  }

  Playbook book_;
  FakeTransport transport_;
  RunSettings settings_;
};

TEST_F(ShippedSetup, NfsExportsFstabAndMountCommandsThenIdempotent) {
  auto first = run();
  ASSERT_FALSE(first.any_failed()) << format_recap(first);
  auto& server = transport_["n1"];
  EXPECT_EQ("# BEGIN xftctl nfs exports\n"
            "/srv/shared 10.9.0.1(rw,sync,no_root_squash,no_subtree_check)\n"
            "/srv/shared 10.9.0.2(rw,sync,no_root_squash,no_subtree_check)\n"
            "/srv/shared 10.9.0.3(rw,sync,no_root_squash,no_subtree_check)\n"
            "# END xftctl nfs exports\n",
            server.files["/etc/exports"].content);
  EXPECT_TRUE(server.files["/srv/shared"].directory);
  EXPECT_EQ(1, count_of(server.commands, "exportfs -ra"));
  EXPECT_EQ(0, count_of(server.commands, "mount --"));
  for (auto name : {"n2", "n3"}) {
    auto& client = transport_[name];
    EXPECT_EQ("10.9.0.1:/srv/shared /mnt/shared nfs defaults,_netdev 0 0\n", client.files["/etc/fstab"].content);
    EXPECT_EQ(1, count_of(client.commands, "mkdir -p -- /mnt/shared && mount -- /mnt/shared")) << name;
    EXPECT_EQ(0, count_of(client.commands, "exportfs"));
    EXPECT_EQ(0u, client.files.count("/etc/exports"));
  }
  // keys, known_hosts and /etc/hosts
  auto& n2 = transport_["n2"];
  EXPECT_EQ("ssh-ed25519 AAAAcontrol xftctl@ctl\nssh-ed25519 AAAAusern1 root@n1\nssh-ed25519 AAAAusern2 root@n2\n"
            "ssh-ed25519 AAAAusern3 root@n3\n",
            n2.files["/root/.ssh/authorized_keys"].content);
  EXPECT_EQ(0600u, n2.files["/root/.ssh/authorized_keys"].mode);
  EXPECT_EQ(0700u, n2.files["/root/.ssh"].mode);
  EXPECT_EQ("n1,10.9.0.1 ssh-ed25519 AAAAC3Nzan1\nn2,10.9.0.2 ssh-ed25519 AAAAC3Nzan2\n"
            "n3,10.9.0.3 ssh-ed25519 AAAAC3Nzan3\n",
            n2.files["/root/.ssh/known_hosts"].content);
  EXPECT_EQ("127.0.0.1 localhost\n# BEGIN xftctl managed hosts\n10.9.0.1 n1\n10.9.0.2 n2\n10.9.0.3 n3\n"
            "# END xftctl managed hosts\n",
            n2.files["/etc/hosts"].content);
  EXPECT_EQ("# MPI hostfile written by xftctl setup hosts (one line per inventory host).\nn1 slots=1\nn2 slots=1\nn3 slots=1\n",
            n2.files["/etc/xftctl/hostfile"].content);

  for (auto& name : {"n1", "n2", "n3"}) {
    transport_[name].commands.clear();
    transport_[name].writes.clear();
  }
  auto second = run();
  EXPECT_EQ(0, changed(second)) << format_recap(second);
  for (auto& name : {"n1", "n2", "n3"}) {
    EXPECT_TRUE(transport_[name].writes.empty()) << name;
    EXPECT_EQ(0, count_of(transport_[name].commands, "mount --")) << name;
    EXPECT_EQ(0, count_of(transport_[name].commands, "exportfs")) << name;
  }
}

// --root-ssh where root is the login user: its steps repeat the login
// user's, so the same files come out and a rerun still changes nothing.
TEST_F(ShippedSetup, RootSshWhereRootLogsInRepeatsTheLoginUsersSteps) {
  ASSERT_FALSE(run().any_failed());
  auto plain = run();  // a rerun: the steps that follow a change (exportfs) skip, as they will below
  ASSERT_FALSE(plain.any_failed()) << format_recap(plain);
  auto files = transport_["n2"].files;
  settings_.extra_vars["root_ssh"] = true;
  auto with_root = run();
  ASSERT_FALSE(with_root.any_failed()) << format_recap(with_root);
  EXPECT_EQ(0, changed(with_root)) << format_recap(with_root);
  EXPECT_EQ(files["/root/.ssh/authorized_keys"].content, transport_["n2"].files["/root/.ssh/authorized_keys"].content);
  EXPECT_EQ(files["/root/.ssh/known_hosts"].content, transport_["n2"].files["/root/.ssh/known_hosts"].content);
  ASSERT_EQ(plain.recap.size(), with_root.recap.size());
  for (size_t i = 0; i < plain.recap.size(); ++i)
    EXPECT_EQ(plain.recap[i].skipped - 4, with_root.recap[i].skipped) << "the four root steps ran on host " << i;
}

TEST_F(ShippedSetup, CheckModeOnFreshHostsChangesNothing) {
  auto before = transport_["n2"].files;
  auto report = run(/*check=*/true);
  EXPECT_FALSE(report.any_failed()) << format_recap(report);
  EXPECT_GT(changed(report), 0);
  EXPECT_TRUE(transport_["n2"].writes.empty());
  EXPECT_EQ(before.size(), transport_["n2"].files.size());
  for (auto& name : {"n1", "n2", "n3"})
    for (const auto& command : transport_[name].commands)
      EXPECT_TRUE(command.rfind("cat ", 0) == 0 || command.find("dpkg-query") != std::string::npos ||
                  command.rfind("findmnt", 0) == 0)
          << name << " ran " << command;
}

TEST_F(ShippedSetup, MountedFromAnotherSourceIsAFailureWithTheFix) {
  transport_["n2"].files["mounted:/mnt/shared"] = {"10.1.1.1:/other", 0, false};
  auto report = run();
  EXPECT_EQ("n1=skipped n2=failed n3=changed ", statuses(report, "the shared path is mounted from the server (and in fstab)"));
  for (const auto& task : report.tasks)
    for (const auto& [host, result] : task.results) {
      if (host == "n2" && result.status == TaskStatus::failed) {
        EXPECT_EQ("/mnt/shared is mounted from 10.1.1.1:/other, not 10.9.0.1:/srv/shared (unmount it first: umount "
                  "/mnt/shared)",
                  result.msg);
      }
    }
}

TEST_F(ShippedSetup, PathsWithSpacesReachExportsFstabAndMountLiterally) {
  for (auto name : {"n1", "n2", "n3"}) transport_[name].host.shared = "/mnt/with space";
  settings_.extra_vars["nfs_export_path"] = "/srv/share with space";
  auto first = run();
  ASSERT_FALSE(first.any_failed()) << format_recap(first);
  auto& server = transport_["n1"];
  EXPECT_EQ("# BEGIN xftctl nfs exports\n"
            "/srv/share\\040with\\040space 10.9.0.1(rw,sync,no_root_squash,no_subtree_check)\n"
            "/srv/share\\040with\\040space 10.9.0.2(rw,sync,no_root_squash,no_subtree_check)\n"
            "/srv/share\\040with\\040space 10.9.0.3(rw,sync,no_root_squash,no_subtree_check)\n"
            "# END xftctl nfs exports\n",
            server.files["/etc/exports"].content);
  EXPECT_TRUE(server.files["/srv/share with space"].directory);
  for (auto name : {"n2", "n3"}) {
    auto& client = transport_[name];
    EXPECT_EQ("10.9.0.1:/srv/share\\040with\\040space /mnt/with\\040space nfs defaults,_netdev 0 0\n",
              client.files["/etc/fstab"].content);
    EXPECT_EQ(1, count_of(client.commands, "mkdir -p -- '/mnt/with space' && mount -- '/mnt/with space'")) << name;
    EXPECT_EQ("10.9.0.1:/srv/share with space", client.files["mounted:/mnt/with space"].content) << name;
  }
  // findmnt's \x20 read back: the mount is seen as done
  auto second = run();
  EXPECT_EQ(0, changed(second)) << format_recap(second);
}

TEST_F(ShippedSetup, NfsOptionsThatWouldAddAnExportAreARenderError) {
  for (const std::string options : {"rw\n/ *(rw,no_root_squash)", "rw) *(rw,no_root_squash", "rw no_root_squash"}) {
    settings_.extra_vars["nfs_options"] = options;
    auto report = run();
    EXPECT_EQ("n1=failed n2=skipped n3=skipped ", statuses(report, "the shared path is exported to every host"));
    for (const auto& task : report.tasks)
      if (task.name == "the shared path is exported to every host") {
        EXPECT_EQ(0u, task.results[0].result.msg.rfind("template nfs_exports.mustache: {{nfs_options}} ", 0))
            << task.results[0].result.msg;
      }
    EXPECT_EQ(0u, transport_["n1"].files.count("/etc/exports"));
  }
}

// The shared-path check's commands (a shell string, argv lists) run by a real
// shell here on hostile paths: the directory is made with exactly that name,
// every host reads the marker back, and the marker is removed.
TEST_F(ShippedSetup, SharedPathCheckRunsInARealShellWithHostilePaths) {
  testing::MarkerDir dir;
  settings_.skip_tags = {"packages", "nfs"};
  settings_.extra_vars["nfs_enabled"] = false;
  auto values = testing::literal_values("shared");
  values.push_back("/sub dir $(touch /tmp/PWNED-sub) `touch /tmp/PWNED-tick` 'q\" *");
  for (const auto& value : values) {
    std::string path = dir.work() + dir.aim(value);
    for (auto name : {"n1", "n2", "n3"}) {
      transport_[name].host.shared = path;
      transport_[name].handler = [work = dir.work()](FakeHost& host, const std::string& command) {
        return command.find(work) == std::string::npos ? unix_like(host, command)
                                                       : testing::run_locally(command, host.stdin_data);
      };
    }
    auto report = run();
    EXPECT_FALSE(report.any_failed()) << format_recap(report);
    EXPECT_EQ("n1=ok n2=ok n3=ok ", statuses(report, "shared path check, read the marker on every host")) << path;
    ASSERT_TRUE(std::filesystem::is_directory(path)) << path;
    EXPECT_TRUE(std::filesystem::is_empty(path)) << path << ": the marker is left";
  }
  EXPECT_EQ(std::vector<std::string>{}, dir.markers());
}

}  // namespace
}  // namespace xft::playbooks
