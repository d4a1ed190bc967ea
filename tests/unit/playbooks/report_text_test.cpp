// The human report: hosts with the same outcome folded into one nodeset line,
// folded recap rows, host lists wrapped to the report width, the per-host
// view, and the progress line.
#include "playbooks/report_text.h"

#include <gtest/gtest.h>

#include <sstream>

#include "inventory/load.h"

namespace xft::playbooks {
namespace {

HostResult result(std::string host, TaskStatus status, std::string msg = "", std::string diff = "") {
  TaskResult item;
  item.status = status;
  item.msg = std::move(msg);
  item.diff = std::move(diff);
  return {std::move(host), std::move(item)};
}

std::vector<std::string> numbered(const std::string& prefix, int from, int to, int step = 1) {
  std::vector<std::string> names;
  char name[32];
  for (int i = from; i <= to; i += step) {
    std::snprintf(name, sizeof name, "%s%02d", prefix.c_str(), i);
    names.push_back(name);
  }
  return names;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A folded set with several parts (a,b[1-2]) expanded part by part.
std::vector<std::string> expand_set(const std::string& folded) {
  std::vector<std::string> names;
  std::string part;
  int depth = 0;
  auto flush = [&] {
    auto expanded = inventory::expand_range(part);
    EXPECT_TRUE(expanded.ok()) << part;
    if (expanded.ok()) names.insert(names.end(), expanded->begin(), expanded->end());
    part.clear();
  };
  for (char c : folded) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) flush();
    else part += c;
  }
  flush();
  return names;
}

TEST(ReportText, HostsWithTheSameOutcomeShareALine) {
  TaskReport task{"keys", "authorized_key", 3, {}};
  task.results = {result("node01", TaskStatus::changed, "/root/.ssh/authorized_keys: content"),
                  result("node02", TaskStatus::ok, "/root/.ssh/authorized_keys"),
                  result("node03", TaskStatus::changed, "/root/.ssh/authorized_keys: content"),
                  result("node04", TaskStatus::failed, "node04: /root/.ssh is a symbolic link"),
                  result("node05", TaskStatus::ok, "/root/.ssh/authorized_keys"),
                  result("node06", TaskStatus::skipped, "when: nfs_enabled"),
                  result("node07", TaskStatus::changed, "/root/.ssh/authorized_keys: content"),
                  result("node08", TaskStatus::failed, "exit 1: no space left on device")};
  EXPECT_EQ("TASK [keys]\n"
            "  changed: node[01,03,07]: /root/.ssh/authorized_keys: content\n"
            "  ok: node[02,05]\n"
            "  failed: node04: /root/.ssh is a symbolic link\n"
            "  skipped: node06\n"
            "  failed: node08: exit 1: no space left on device\n",
            format_task(task));
}

TEST(ReportText, ConnectOkIsFoldedAndUnreachableHostsFoldByTheirError) {
  TaskReport task{"connect", "connect", 0, {}};
  for (const auto& name : numbered("h", 1, 3)) task.results.push_back(result(name, TaskStatus::ok, "ssh-ed25519"));
  task.results.push_back(result("h04", TaskStatus::unreachable, "h04 (10.0.0.4): unreachable: Connection refused"));
  task.results.push_back(result("h05", TaskStatus::unreachable, "h05 (10.0.0.5): unreachable: Connection refused"));
  task.results.push_back(result("h06", TaskStatus::unreachable, "h06 (10.0.0.6): unreachable: Connection timed out"));
  EXPECT_EQ("CONNECT\n  ok: h[01-03]\n  unreachable: h[04-05]: Connection refused\n"
            "  unreachable: h06: Connection timed out\n",
            format_task(task));
}

TEST(ReportText, DiffsFoldWhenTheyAreTheSameAndShowOnlyWithDiff) {
  TaskReport task{"hosts", "block", 7, {}};
  std::string same = "--- /etc/hosts (before)\n+++ /etc/hosts (after)\n@@ -1 +1,2 @@\n 127.0.0.1 localhost\n+10.0.0.1 a\n";
  task.results = {result("a1", TaskStatus::changed, "/etc/hosts: content", same),
                  result("a2", TaskStatus::changed, "/etc/hosts: content", same),
                  result("a3", TaskStatus::changed, "/etc/hosts: content", "--- /etc/hosts (before)\n+x\n")};
  EXPECT_EQ("TASK [hosts]\n"
            "  changed: a[1-2]: /etc/hosts: content\n"
            "    --- /etc/hosts (before)\n"
            "    +++ /etc/hosts (after)\n"
            "    @@ -1 +1,2 @@\n"
            "     127.0.0.1 localhost\n"
            "    +10.0.0.1 a\n"
            "  changed: a3: /etc/hosts: content\n"
            "    --- /etc/hosts (before)\n"
            "    +x\n",
            format_task(task, {.diff = true}));
  EXPECT_EQ("TASK [hosts]\n  changed: a[1-3]: /etc/hosts: content\n", format_task(task));
}

TEST(ReportText, PerHostViewKeepsALinePerHost) {
  TaskReport task{"t", "command", 1, {}};
  task.results = {result("h01", TaskStatus::ok, "x"), result("h02", TaskStatus::changed, "/a: created", "+a\n")};
  EXPECT_EQ("TASK [t]\n  h01: ok\n  h02: changed: /a: created\n    +a\n", format_task(task, {.diff = true, .per_host = true}));
  PlayReport report;
  report.recap = {{"h01", 2, 1, 0, 0, 3}, {"h02", 2, 1, 0, 0, 3}};
  EXPECT_EQ("RECAP\n"
            "  h01   ok=2   changed=1   failed=0   unreachable=0   skipped=3\n"
            "  h02   ok=2   changed=1   failed=0   unreachable=0   skipped=3\n",
            format_recap(report, {.per_host = true}));
}

TEST(ReportText, RecapFoldsHostsWithEqualCounters) {
  PlayReport report;
  for (const auto& name : numbered("node", 1, 64)) report.recap.push_back({name, 12, 3, 0, 0, 4});
  report.recap[63] = {"node64", 11, 3, 1, 0, 4};
  report.recap[6].unreachable = 1;
  report.stopped = "";
  EXPECT_EQ("RECAP\n"
            "  node[01-06,08-63]  ok=12 changed=3 failed=0 unreachable=0 skipped=4\n"
            "  node07             ok=12 changed=3 failed=0 unreachable=1 skipped=4\n"
            "  node64             ok=11 changed=3 failed=1 unreachable=0 skipped=4\n",
            format_recap(report));
  report.check = true;
  report.stopped = "no host is left in the play";
  report.recap.resize(2);
  EXPECT_EQ("RECAP (check mode: nothing was changed)\n"
            "  node[01-02]  ok=12 changed=3 failed=0 unreachable=0 skipped=4\n"
            "stopped early: no host is left in the play\n",
            format_recap(report));
}

TEST(ReportText, LongHostListsWrapIntoNodesetsThatJoinBack) {
  auto odd = numbered("node", 1, 64, 2);  // nothing folds into a range
  for (size_t width : {20u, 40u, 61u}) {
    auto lines = fold_lines(odd, width);
    ASSERT_GT(lines.size(), 1u) << width;
    std::string joined;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_LE(lines[i].size(), width) << lines[i];
      EXPECT_EQ(i + 1 < lines.size(), lines[i].back() == ',') << lines[i];
      joined += lines[i];
    }
    EXPECT_EQ(odd, expand_set(joined));
  }
  auto narrow = fold_lines(odd, 27);
  ASSERT_EQ(5u, narrow.size());
  EXPECT_EQ("node[01,03,05,07,09,11,13],", narrow[0]);
  EXPECT_EQ("node[57,59,61,63]", narrow[4]);
  EXPECT_EQ((std::vector<std::string>{"gpu1,head,", "node[01-02]"}), fold_lines({"node01", "head", "node02", "gpu1"}, 12));
}

TEST(ReportText, AWrappedFoldedLineStaysWithinTheWidth) {
  TaskReport task{"every other host", "command", 1, {}};
  for (const auto& name : numbered("node", 1, 64))
    task.results.push_back(result(name, (name.back() - '0') % 2 ? TaskStatus::changed : TaskStatus::ok));
  auto text = format_task(task);
  for (const auto& line : lines_of(text)) EXPECT_LE(line.size(), kReportWidth) << line;
  EXPECT_EQ("TASK [every other host]\n"
            "  changed: node[01,03,05,07,09,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47,49,51,53],\n"
            "           node[55,57,59,61,63]\n"
            "  ok: node[02,04,06,08,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,46,48,50,52,54,56,58],\n"
            "      node[60,62,64]\n",
            text);
}

// A 19-task run on 64 hosts where every host does the same: the whole report
// (as the command prints it) fits 100 columns and 60 lines.
TEST(ReportText, NineteenTasksOnSixtyFourHostsFitAHundredColumnsAndSixtyLines) {
  auto hosts = numbered("node", 1, 64);
  PlayReport report;
  TaskReport connect{"connect", "connect", 0, {}};
  for (const auto& host : hosts) connect.results.push_back(result(host, TaskStatus::ok, "ssh-ed25519"));
  report.tasks.push_back(connect);
  for (int t = 1; t <= 19; ++t) {
    TaskReport task{"task number " + std::to_string(t) + " with a name as long as the shipped ones get", "copy", t, {}};
    auto status = t % 3 == 0 ? TaskStatus::ok : t % 3 == 1 ? TaskStatus::changed : TaskStatus::skipped;
    for (const auto& host : hosts)
      task.results.push_back(result(host, status, status == TaskStatus::skipped ? "when: nfs_enabled" : "/etc/f: created"));
    report.tasks.push_back(task);
  }
  for (const auto& host : hosts) report.recap.push_back({host, 7, 6, 0, 0, 6});
  std::string text = "PLAY [setup hosts] on 64 hosts\n";
  for (const auto& task : report.tasks) text += format_task(task);
  text += format_recap(report);
  auto lines = lines_of(text);
  EXPECT_LE(lines.size(), 60u) << text;
  for (const auto& line : lines) EXPECT_LE(line.size(), kReportWidth) << line;
  EXPECT_EQ("  ok: node[01-64]", lines[2]);
  EXPECT_EQ("  changed: node[01-64]: /etc/f: created", lines[4]);
  EXPECT_EQ("  skipped: node[01-64]", lines[6]);
  EXPECT_EQ("  node[01-64]  ok=7 changed=6 failed=0 unreachable=0 skipped=6", lines.back());
}

TEST(ReportText, MessagesLoseTheirHostOnlyWhereTheyStartWithIt) {
  EXPECT_EQ("unreachable: refused", message_without_host("h03", "h03 (10.0.0.3): unreachable: refused"));
  EXPECT_EQ("exited with 2", message_without_host("h03", "h03: exited with 2"));
  EXPECT_EQ("h030: exited with 2", message_without_host("h03", "h030: exited with 2"));
  EXPECT_EQ("cannot read", message_without_host("h03", "cannot read"));
}

TEST(ReportText, HostsFailingAlikeShareALineAndAHostAloneKeepsItsMessage) {
  std::vector<HostMessage> messages{
      {"h03", "h03 (10.0.0.3): unreachable: Connection refused"},
      {"h04", "h04 (10.0.0.4): command timed out after 1s: sleep 8"},
      {"h05", "h05 (10.0.0.5): unreachable: Connection refused"},
      {"h07", "h07: unreachable: Connection refused"},
  };
  auto folded = fold_messages(messages);
  ASSERT_EQ(2u, folded.size());
  EXPECT_EQ("h[03,05,07]: unreachable: Connection refused", folded[0].line);
  EXPECT_EQ((std::vector<std::string>{"h03", "h05", "h07"}), folded[0].hosts);
  EXPECT_EQ("h04 (10.0.0.4): command timed out after 1s: sleep 8", folded[1].line);
  EXPECT_EQ(std::vector<std::string>{"h04"}, folded[1].hosts);
  EXPECT_TRUE(fold_messages({}).empty());
}

TEST(ReportText, ProgressLineCountsHostsTimesTasks) {
  PlayProgress progress;
  progress.play = "setup hosts";
  progress.tasks = 3;
  progress.start_task("connect", 4);
  for (int i = 0; i < 4; ++i) progress.host_done();
  EXPECT_EQ("setup hosts [ 25%] connecting, 4/4 hosts", progress_line(progress, 100));
  progress.start_task("MPI hostfile", 4);
  progress.host_done();
  EXPECT_EQ("setup hosts [ 31%] task 1/3, 1/4 hosts: MPI hostfile", progress_line(progress, 100));
  EXPECT_EQ("setup hosts [ 31%] task 1/3, 1/4", progress_line(progress, 32));
  // a host left the play: what is ahead is counted with the hosts still in it
  for (int i = 0; i < 3; ++i) progress.host_done();
  progress.start_task("env", 3);
  progress.host_done();
  progress.host_done();
  progress.host_done();
  progress.start_task("last", 3);
  progress.host_done();
  progress.host_done();
  progress.host_done();
  EXPECT_EQ(14u, progress.units_done());
  EXPECT_EQ(14u, progress.units());
  EXPECT_EQ("setup hosts [100%] task 3/3, 3/3 hosts: last", progress_line(progress, 100));
}


namespace {
xft::remote::TrustedHostKey trusted(const std::string& host, const std::string& path) {
  return {host, host + " (10.0.0.1)", "ssh-ed25519", "SHA256:abc", path};
}
}  // namespace

TEST(ReportText, SixtyFourTrustedKeysFoldIntoOneLineWithinAHundredColumns) {
  const std::string path = "/root/.config/xftctl/known_hosts";
  std::vector<xft::remote::TrustedHostKey> keys;
  for (int i = 1; i <= 64; ++i) keys.push_back(trusted(i < 10 ? "h0" + std::to_string(i) : "h" + std::to_string(i), path));
  auto lines = trusted_keys_notice(keys, 92);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "h[01-64]: new host keys trusted (as asked), added to " + path);
  EXPECT_LE(std::string("xftctl: ").size() + lines[0].size(), 100u);
}

TEST(ReportText, ATrustedKeyAloneKeepsItsFingerprintAndEachFileHasItsLine) {
  std::vector<xft::remote::TrustedHostKey> keys{trusted("h02", "/a"), trusted("h01", "/b"), trusted("h03", "/a")};
  EXPECT_EQ(trusted_keys_notice(keys, 92),
            (std::vector<std::string>{"h[02-03]: new host keys trusted (as asked), added to /a",
                                      "h01 (10.0.0.1): trusting new host key ssh-ed25519 SHA256:abc on first use "
                                      "(as asked); recorded in /b"}));
}

TEST(ReportText, PathsUnderHomeAreShownFromTilde) {
  EXPECT_EQ(path_from_home("/home/ec2-user/.config/xftctl/known_hosts", "/home/ec2-user"),
            "~/.config/xftctl/known_hosts");
  EXPECT_EQ(path_from_home("/home/ec2-user2/known_hosts", "/home/ec2-user"), "/home/ec2-user2/known_hosts");
  EXPECT_EQ(path_from_home("/etc/known_hosts", "/"), "/etc/known_hosts");
  EXPECT_EQ(path_from_home("/root/", "/root"), "/root/");
  EXPECT_EQ(path_from_home("/x/k", ""), "/x/k");
}

TEST(ReportText, TrustedHostsThatDoNotFoldWrapIntoSetsThatJoinBack) {
  std::vector<xft::remote::TrustedHostKey> keys;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("node-" + std::to_string(i * 7) + "-x");
    keys.push_back(trusted(names.back(), "/k"));
  }
  auto lines = trusted_keys_notice(keys, 92);
  ASSERT_EQ(lines.size(), 1u);
  std::istringstream in(lines[0]);
  std::string joined;
  size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    EXPECT_LE(line.size(), 92u) << line;
    joined += line;
  }
  EXPECT_GT(count, 1u);
  const std::string tail = ": new host keys trusted (as asked), added to /k";
  ASSERT_EQ(joined.substr(joined.size() - tail.size()), tail);
  std::vector<std::string> hosts;
  std::string set = joined.substr(0, joined.size() - tail.size()) + ",";
  for (size_t start = 0, depth = 0, i = 0; i < set.size(); ++i) {
    depth += set[i] == '[' ? 1 : set[i] == ']' ? -1 : 0;
    if (set[i] != ',' || depth != 0) continue;
    auto part = xft::inventory::expand_range(set.substr(start, i - start));
    ASSERT_TRUE(part.ok()) << set;
    hosts.insert(hosts.end(), part->begin(), part->end());
    start = i + 1;
  }
  EXPECT_EQ(hosts, names);
}

}  // namespace
}  // namespace xft::playbooks
