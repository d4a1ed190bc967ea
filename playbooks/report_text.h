// The human report of a play, made to read at cluster scale the way clush -b
// does: per task, hosts with the same outcome share one line as a ClusterShell
// nodeset (`  ok: node[01-64]`), and the recap folds hosts whose counters are
// equal. Host lists wrap so that every line fits the report width; messages
// and diffs are never cut (a path in them stays copyable). `per_host` (-v)
// keeps a line per host.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "playbooks/runner.h"
#include "remote/known_hosts.h"

namespace xft::playbooks {

constexpr size_t kReportWidth = 100;

struct TextOptions {
  bool diff = false;      // --diff: each changed file's unified diff under its hosts
  bool per_host = false;  // a line per host and a recap row per host
  size_t width = kReportWidth;
};

std::string format_task(const TaskReport& task, const TextOptions& options = {});
std::string format_recap(const PlayReport& report, const TextOptions& options = {});

// `names` folded (node[01-03,07]) and cut into lines of at most `width`
// columns, each line a nodeset of its own; every line but the last ends with
// ',' so that the lines joined give the whole set back.
std::vector<std::string> fold_lines(const std::vector<std::string>& names, size_t width);

// A message without the "HOST: " or "HOST (ADDRESS): " it starts with, for
// a line that names its hosts itself.
std::string message_without_host(const std::string& host, const std::string& message);

struct HostMessage {
  std::string host;
  std::string message;  // names the host: "h03 (10.0.0.3): unreachable: Connection refused"
};
struct FoldedMessage {
  std::vector<std::string> hosts;
  std::string line;
};
// Hosts with the same message (past their own names) share one line,
// "h[03,05]: unreachable: Connection refused", in the order each message
// first appears; a host alone keeps its message whole, address included.
std::vector<FoldedMessage> fold_messages(const std::vector<HostMessage>& messages);

// The notice for host keys trusted on first use, one message per known_hosts
// file: a host alone keeps its whole line (fingerprint included); several
// share "h[01-64]: new host keys trusted (as asked), added to PATH", their
// set cut into lines of at most `width` columns (all but the last ending
// with ','), so 64 hosts take one line and not 64 of 200 columns.
std::vector<std::string> trusted_keys_notice(const std::vector<remote::TrustedHostKey>& keys, size_t width);

// "~/.config/xftctl/known_hosts" for a path under `home`, as a shell reads it
// back, so a notice that names the file still fits its line.
std::string path_from_home(const std::string& path, const std::string& home);

// Where a run stands, for a progress line: the connection (task 0), then
// each task the run tries; its units are hosts x tasks, the ones still ahead
// counted with the current task's hosts (hosts that leave the play do no more).
struct PlayProgress {
  std::string play;
  std::string task_name;
  size_t task = 0, tasks = 0;        // tasks: those not left out by tag
  size_t hosts_done = 0, hosts = 0;  // in the current task
  size_t units_before = 0;           // host-tasks of the finished ones
  bool started = false;

  void start_task(std::string name, size_t task_hosts);
  void host_done() { ++hosts_done; }
  size_t units_done() const { return units_before + hosts_done; }
  size_t units() const { return units_before + hosts * (tasks + 1 - task); }
};

// "setup hosts [ 37%] task 7/19, 40/64 hosts: MPI hostfile", cut to `width`.
std::string progress_line(const PlayProgress& progress, size_t width);

}  // namespace xft::playbooks
