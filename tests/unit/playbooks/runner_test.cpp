// The playbook runner and the shipped setup playbook against in-memory hosts
// (fake_host.h): run semantics, check mode, idempotency, and the NFS steps'
// exact files and commands (this kernel has no NFS, so the mount cannot run).
#include "playbooks/runner.h"

#include <gtest/gtest.h>

#include <regex>

#include "playbooks/playbook.h"
#include "tests/unit/playbooks/fake_host.h"

namespace xft::playbooks {
namespace {

using testing::FakeHost;
using testing::FakeTransport;
using launcher::CommandResult;

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

// A shell-ish host: enough of ssh-keygen, cat, chmod, findmnt, mount and the
// package probe for the shipped setup playbook.
CommandResult unix_like(FakeHost& host, const std::string& command) {
  static const std::regex keygen(R"(ssh-keygen .* -f '([^']+)')");
  static const std::regex cat(R"(^cat '([^']+)'$)");
  static const std::regex chmod(R"(^chmod ([0-7]+) '([^']+)'$)");
  static const std::regex findmnt(R"(^findmnt .*--mountpoint '([^']+)')");
  static const std::regex mount(R"(&& mount '([^']+)'$)");
  std::smatch match;
  CommandResult result;
  if (std::regex_search(command, match, keygen)) {
    host.files[match[1]] = {"PRIVATE", 0600, false};
    host.files[match[1].str() + ".pub"] = {"ssh-ed25519 AAAAuser" + host.host.name + " root@" + host.host.name + "\n", 0644, false};
  } else if (std::regex_search(command, match, cat)) {
    auto found = host.files.find(match[1]);
    if (found == host.files.end()) result = {1, "", "cat: no such file\n"};
    else result.out = found->second.content;
  } else if (std::regex_search(command, match, chmod)) {
    host.files[match[2]].mode = static_cast<mode_t>(std::stoul(match[1], nullptr, 8));
  } else if (std::regex_search(command, match, findmnt)) {
    auto found = host.files.find("mounted:" + match[1].str());
    if (found != host.files.end()) result.out = found->second.content + "\n";
  } else if (std::regex_search(command, match, mount)) {
    // mount PATH takes the source from fstab
    std::string fstab = host.files["/etc/fstab"].content;
    std::smatch line;
    std::regex entry("(\\S+) " + match[1].str() + " ");
    if (std::regex_search(fstab, line, entry)) host.files["mounted:" + match[1].str()] = {line[1], 0, false};
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
  EXPECT_EQ(" 127.0.0.1 localhost\n+# BEGIN m\n+10.0.0.1 a\n+# END m\n", report.tasks[1].results[0].result.diff);
  EXPECT_EQ("a=changed ", statuses(report, "cmd"));
  EXPECT_TRUE(transport["a"].writes.empty());
  EXPECT_TRUE(transport["a"].commands.empty());
}

class ShippedSetup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = load_playbook(std::string(XFT_SOURCE_DIR) + "/playbooks/setup_hosts.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    book_ = *loaded;
    for (int i = 1; i <= 3; ++i) {
      auto& host = transport_.add("n" + std::to_string(i), "10.9.0." + std::to_string(i));
      host.host.shared = "/mnt/shared";
      host.handler = unix_like;
      host.files["/etc/hosts"] = {"127.0.0.1 localhost\n", 0644, false};
    }
    settings_.templates_dir = std::string(XFT_SOURCE_DIR) + "/templates";
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
  EXPECT_EQ(0, count_of(server.commands, "mount '"));
  for (auto name : {"n2", "n3"}) {
    auto& client = transport_[name];
    EXPECT_EQ("10.9.0.1:/srv/shared /mnt/shared nfs defaults,_netdev 0 0\n", client.files["/etc/fstab"].content);
    EXPECT_EQ(1, count_of(client.commands, "mkdir -p '/mnt/shared' && mount '/mnt/shared'")) << name;
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
    EXPECT_EQ(0, count_of(transport_[name].commands, "mount '")) << name;
    EXPECT_EQ(0, count_of(transport_[name].commands, "exportfs")) << name;
  }
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
    for (const auto& [host, result] : task.results)
      if (host == "n2" && result.status == TaskStatus::failed)
        EXPECT_EQ("/mnt/shared is mounted from 10.1.1.1:/other, not 10.9.0.1:/srv/shared (unmount it first: umount "
                  "/mnt/shared)",
                  result.msg);
}

}  // namespace
}  // namespace xft::playbooks
