#include "playbooks/report_text.h"

#include <algorithm>
#include <cstdio>

#include "inventory/load.h"

namespace xft::playbooks {
namespace {

// Top-level parts of a folded set: "gpu1,node[01-03,07]" -> gpu1, node[01-03,07].
std::vector<std::string> split_parts(const std::string& folded) {
  std::vector<std::string> parts;
  std::string part;
  int depth = 0;
  for (char c : folded) {
    if (c == ',' && depth == 0) {
      parts.push_back(std::move(part));
      part.clear();
      continue;
    }
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    part += c;
  }
  if (!part.empty()) parts.push_back(std::move(part));
  return parts;
}

// A bracketed part longer than `width` as several parts prefix[a,b],prefix[c]
// (fold_names gives each part at most one bracket group).
std::vector<std::string> cut_part(const std::string& part, size_t width) {
  size_t open = part.find('['), close = part.find(']');
  if (part.size() <= width || open == std::string::npos || close == std::string::npos) return {part};
  std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
  std::vector<std::string> cut;
  std::string items;
  auto flush = [&] {
    if (!items.empty()) cut.push_back(prefix + "[" + items + "]" + suffix);
    items.clear();
  };
  for (const auto& item : split_parts(part.substr(open + 1, close - open - 1))) {
    if (!items.empty() && prefix.size() + items.size() + item.size() + 3 + suffix.size() > width) flush();
    items += (items.empty() ? "" : ",") + item;
  }
  flush();
  return cut;
}

std::string indent_lines(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string task_title(const TaskReport& task) {
  return task.kind == "connect" ? "CONNECT\n" : "TASK [" + task.name + "]\n";
}

// What a folded line says after the hosts: nothing for ok (the message is
// the kind's detail) nor for skipped (it is the task's own `when`, 100
// columns on its own at times), the message otherwise, without what the
// line already gives: a leading "HOST: " or "HOST (ADDRESS): " and, on an
// unreachable line, the word "unreachable: ". Hosts that failed the same
// way then fold into one line.
std::string shown_message(const HostResult& item) {
  if (item.result.status == TaskStatus::ok || item.result.status == TaskStatus::skipped) return "";
  std::string msg = message_without_host(item.host, item.result.msg);
  const std::string said = "unreachable: ";
  if (item.result.status == TaskStatus::unreachable && msg.rfind(said, 0) == 0) msg.erase(0, said.size());
  return msg;
}

struct Outcome {
  TaskStatus status;
  std::string message;
  std::string diff;
  std::vector<std::string> hosts;
};

// Hosts grouped by what is printed for them, in the order each outcome first appears.
std::vector<Outcome> group_outcomes(const TaskReport& task, bool diff) {
  std::vector<Outcome> groups;
  for (const auto& item : task.results) {
    Outcome key{item.result.status, shown_message(item), diff ? item.result.diff : "", {}};
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Outcome& group) {
      return group.status == key.status && group.message == key.message && group.diff == key.diff;
    });
    if (same == groups.end()) same = groups.insert(groups.end(), std::move(key));
    same->hosts.push_back(item.host);
  }
  return groups;
}

std::string format_outcome(const Outcome& outcome, size_t width) {
  std::string lead = std::string("  ") + status_name(outcome.status) + ": ";
  auto lines = fold_lines(outcome.hosts, width > lead.size() + 8 ? width - lead.size() : 8);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? lead : std::string(lead.size(), ' ')) + lines[i] + "\n";
  if (!outcome.message.empty()) out.insert(out.size() - 1, ": " + outcome.message);
  return out + indent_lines(outcome.diff, "    ");
}

std::string format_task_per_host(const TaskReport& task, bool diff) {
  std::string out = task_title(task);
  for (const auto& [host, result] : task.results) {
    if (task.kind == "connect" && result.status == TaskStatus::ok) {
      out += "  " + host + ": ok\n";
      continue;
    }
    out += "  " + host + ": " + status_name(result.status);
    if (!result.msg.empty() && result.status != TaskStatus::ok) out += ": " + result.msg;
    out += "\n";
    if (diff) out += indent_lines(result.diff, "    ");
  }
  return out;
}

std::string counters(const HostRecap& host) {
  char text[160];
  std::snprintf(text, sizeof text, "ok=%d changed=%d failed=%d unreachable=%d skipped=%d", host.ok, host.changed,
                host.failed, host.unreachable, host.skipped);
  return text;
}

std::string recap_title(const PlayReport& report) {
  return "RECAP" + std::string(report.check ? " (check mode: nothing was changed)" : "") + "\n";
}

std::string format_recap_per_host(const PlayReport& report) {
  size_t width = 4;
  for (const auto& host : report.recap) width = std::max(width, host.host.size());
  std::string out = recap_title(report);
  for (const auto& host : report.recap) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-*s  ok=%-3d changed=%-3d failed=%-3d unreachable=%-3d skipped=%d\n",
                  static_cast<int>(width), host.host.c_str(), host.ok, host.changed, host.failed, host.unreachable,
                  host.skipped);
    out += line;
  }
  return out;
}

std::string format_recap_folded(const PlayReport& report, size_t width) {
  struct Row {
    std::string counters;
    std::vector<std::string> hosts;
    std::vector<std::string> lines;
  };
  std::vector<Row> rows;
  size_t widest_counters = 0;
  for (const auto& host : report.recap) {
    auto text = counters(host);
    widest_counters = std::max(widest_counters, text.size());
    auto same = std::find_if(rows.begin(), rows.end(), [&](const Row& row) { return row.counters == text; });
    if (same == rows.end()) same = rows.insert(rows.end(), Row{text, {}, {}});
    same->hosts.push_back(host.host);
  }
  size_t room = width > widest_counters + 12 ? width - widest_counters - 4 : 8;
  size_t column = 0;
  for (auto& row : rows) {
    row.lines = fold_lines(row.hosts, room);
    column = std::max(column, row.lines.front().size());
  }
  std::string out = recap_title(report);
  for (const auto& row : rows) {
    const auto& first = row.lines.front();
    out += "  " + first + std::string(column - first.size(), ' ') + "  " + row.counters + "\n";
    for (size_t i = 1; i < row.lines.size(); ++i) out += "  " + row.lines[i] + "\n";
  }
  return out;
}

}  // namespace

std::string message_without_host(const std::string& host, const std::string& message) {
  if (message.rfind(host + ": ", 0) == 0) return message.substr(host.size() + 2);
  if (message.rfind(host + " (", 0) == 0)
    if (size_t end = message.find("): "); end != std::string::npos) return message.substr(end + 3);
  return message;
}

std::vector<FoldedMessage> fold_messages(const std::vector<HostMessage>& messages) {
  struct Group {
    std::string rest;
    std::vector<const HostMessage*> members;
  };
  std::vector<Group> groups;
  for (const auto& item : messages) {
    std::string rest = message_without_host(item.host, item.message);
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& group) { return group.rest == rest; });
    if (same == groups.end()) same = groups.insert(groups.end(), Group{std::move(rest), {}});
    same->members.push_back(&item);
  }
  std::vector<FoldedMessage> folded;
  for (const auto& group : groups) {
    FoldedMessage line;
    for (const auto* member : group.members) line.hosts.push_back(member->host);
    line.line = group.members.size() == 1 ? group.members.front()->message
                                           : inventory::fold_names(line.hosts) + ": " + group.rest;
    folded.push_back(std::move(line));
  }
  return folded;
}

std::vector<std::string> fold_lines(const std::vector<std::string>& names, size_t width) {
  if (names.empty()) return {""};
  std::string folded = inventory::fold_names(names);
  if (folded.size() <= width) return {folded};
  // Room for the ',' that ends a continued line.
  size_t room = width > 1 ? width - 1 : 1;
  std::vector<std::string> lines{""};
  for (const auto& whole : split_parts(folded))
    for (const auto& part : cut_part(whole, room)) {
      if (!lines.back().empty() && lines.back().size() + 1 + part.size() > room) lines.back() += ",", lines.emplace_back();
      lines.back() += (lines.back().empty() ? "" : ",") + part;
    }
  return lines;
}

std::vector<std::string> trusted_keys_notice(const std::vector<remote::TrustedHostKey>& keys, size_t width) {
  std::vector<std::string> paths;
  for (const auto& key : keys)
    if (std::find(paths.begin(), paths.end(), key.known_hosts) == paths.end()) paths.push_back(key.known_hosts);
  std::vector<std::string> messages;
  for (const auto& path : paths) {
    std::vector<const remote::TrustedHostKey*> here;
    for (const auto& key : keys)
      if (key.known_hosts == path) here.push_back(&key);
    if (here.size() == 1) {
      messages.push_back(here.front()->message());
      continue;
    }
    std::vector<std::string> names;
    for (const auto* key : here) names.push_back(key->host);
    std::string tail = ": new host keys trusted (as asked), added to " + path;
    auto lines = fold_lines(names, width > tail.size() + 16 ? width - tail.size() : 16);
    std::string message;
    for (size_t i = 0; i + 1 < lines.size(); ++i) message += lines[i] + "\n";
    messages.push_back(message + lines.back() + tail);
  }
  return messages;
}

std::string path_from_home(const std::string& path, const std::string& home) {
  if (home.empty() || home == "/" || path.size() <= home.size() + 1 || path.compare(0, home.size(), home) != 0 ||
      path[home.size()] != '/')
    return path;
  return "~" + path.substr(home.size());
}

std::string format_task(const TaskReport& task, const TextOptions& options) {
  if (options.per_host) return format_task_per_host(task, options.diff);
  std::string out = task_title(task);
  for (const auto& outcome : group_outcomes(task, options.diff)) out += format_outcome(outcome, options.width);
  return out;
}

std::string format_recap(const PlayReport& report, const TextOptions& options) {
  std::string out = options.per_host ? format_recap_per_host(report) : format_recap_folded(report, options.width);
  if (!report.stopped.empty()) out += "stopped early: " + report.stopped + "\n";
  return out;
}

void PlayProgress::start_task(std::string name, size_t task_hosts) {
  if (started) {
    units_before += hosts_done;
    ++task;
  }
  started = true;
  task_name = std::move(name);
  hosts = task_hosts;
  hosts_done = 0;
}

std::string progress_line(const PlayProgress& progress, size_t width) {
  size_t units = std::max<size_t>(progress.units(), 1);
  char head[96];
  std::snprintf(head, sizeof head, "[%3zu%%] ", std::min<size_t>(progress.units_done() * 100 / units, 100));
  std::string line = progress.play + " " + head;
  if (progress.task == 0)
    line += "connecting, " + std::to_string(progress.hosts_done) + "/" + std::to_string(progress.hosts) + " hosts";
  else
    line += "task " + std::to_string(progress.task) + "/" + std::to_string(progress.tasks) + ", " +
            std::to_string(progress.hosts_done) + "/" + std::to_string(progress.hosts) + " hosts: " +
            progress.task_name;
  if (line.size() > width) line.resize(width);
  return line;
}

}  // namespace xft::playbooks
