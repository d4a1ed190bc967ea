// xftctl ping: can we reach and log in to every host, and what is it? One
// SSH round trip per host reads the OS, kernel, CPU count and memory.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/reach_options.h"
#include "remote/fanout.h"
#include "common/log.h"

namespace xft::cli {
namespace {

// Prints "key=value" lines so the parse does not depend on the remote locale.
constexpr const char* kProbeCommand =
    "grep '^PRETTY_NAME=' /etc/os-release 2>/dev/null; echo \"kernel=$(uname -r)\"; "
    "echo \"cpus=$(nproc)\"; grep '^MemTotal:' /proc/meminfo";

struct PingRow {
  std::string host;
  std::string address;
  std::string status = "ok";  // "ok", a remote::failure_name(), or "failed" (probe)
  std::optional<remote::Failure> failure;
  std::string error;  // one line, for every status but ok
  std::string os;
  std::string kernel;
  int cpus = 0;
  unsigned long long memory_kib = 0;
};

std::string unquote(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  return value;
}

// Fills the OS fields from the probe output; false when one is missing.
bool parse_probe(const std::string& output, PingRow& row) {
  std::istringstream in(output);
  bool have_cpus = false, have_memory = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) row.os = unquote(line.substr(12));
    else if (line.rfind("kernel=", 0) == 0) row.kernel = line.substr(7);
    else if (line.rfind("cpus=", 0) == 0) have_cpus = std::sscanf(line.c_str() + 5, "%d", &row.cpus) == 1;
    else if (line.rfind("MemTotal:", 0) == 0)
      have_memory = std::sscanf(line.c_str() + 9, "%llu", &row.memory_kib) == 1;
  }
  if (row.os.empty()) row.os = "unknown";
  return !row.kernel.empty() && have_cpus && have_memory;
}

PingRow ping_host(remote::Transport& transport, const inventory::Host& host) {
  PingRow row;
  row.host = host.name;
  row.address = host.address;
  auto fail = [&](remote::Failure kind, std::string status, std::string message) {
    row.failure = kind;
    row.status = std::move(status);
    row.error = std::move(message);
    return row;
  };
  auto session = transport.connect(host);
  if (!session) return fail(session.error().kind, remote::failure_name(session.error().kind), session.error().message);
  auto probe = (*session)->run(kProbeCommand);
  if (!probe) return fail(probe.error().kind, remote::failure_name(probe.error().kind), probe.error().message);
  if (probe->exit_status != 0 || !parse_probe(probe->out, row)) {
    std::string first_error_line = probe->err.substr(0, probe->err.find('\n'));
    return fail(remote::Failure::other, "failed",
                host.name + ": the probe (uname, nproc, /proc/meminfo) exited with " +
                    std::to_string(probe->exit_status) +
                    (first_error_line.empty() ? "" : ": " + first_error_line));
  }
  return row;
}

std::string format_memory(unsigned long long kib) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(kib) / (1024.0 * 1024.0));
  return text;
}

std::vector<std::string> table_cells(const PingRow& row) {
  if (row.failure) return {row.host, row.address, row.status, "-", "-", "-", "-"};
  return {row.host, row.address, row.status, row.os, row.kernel, std::to_string(row.cpus),
          format_memory(row.memory_kib)};
}

void print_table(const std::vector<PingRow>& rows) {
  std::vector<std::vector<std::string>> lines{{"HOST", "ADDRESS", "STATUS", "OS", "KERNEL", "CPUS", "MEMORY"}};
  for (const auto& row : rows) lines.push_back(table_cells(row));
  std::vector<size_t> widths(lines[0].size(), 0);
  for (const auto& line : lines)
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], line[c].size());
  for (const auto& line : lines) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(widths[c] - line[c].size() + 2, ' ');
    }
    std::printf("%s\n", text.c_str());
  }
}

// "4 hosts: 3 ok, 1 unreachable"
std::string summary_line(const std::vector<PingRow>& rows) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& row : rows) {
    auto found = std::find_if(counts.begin(), counts.end(), [&](auto& c) { return c.first == row.status; });
    if (found == counts.end()) counts.emplace_back(row.status, 1);
    else ++found->second;
  }
  std::string text = std::to_string(rows.size()) + (rows.size() == 1 ? " host: " : " hosts: ");
  for (size_t i = 0; i < counts.size(); ++i)
    text += (i ? ", " : "") + std::to_string(counts[i].second) + " " + counts[i].first;
  return text;
}

nlohmann::ordered_json to_json(const std::vector<PingRow>& rows) {
  auto array = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    nlohmann::ordered_json item{{"host", row.host}, {"address", row.address}, {"status", row.status}};
    if (row.failure) {
      item["error"] = row.error;
    } else {
      item["os"] = row.os;
      item["kernel"] = row.kernel;
      item["cpus"] = row.cpus;
      item["memory_kib"] = row.memory_kib;
    }
    array.push_back(item);
  }
  return array;
}

void run_ping(Context& ctx, const ReachFlags& flags, bool json) {
  auto hosts = load_selected_hosts(ctx.inventory_flag, flags.hosts);
  if (!hosts) {
    log::error(hosts.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  auto transport = make_ssh_transport(flags);
  auto rows = remote::fan_out(*hosts, flags.fanout,
                                [&](const inventory::Host& host) { return ping_host(*transport, host); });
  bool any_unreachable = false, any_failed = false;
  for (const auto& row : rows) {
    if (!row.failure) continue;
    (*row.failure == remote::Failure::unreachable ? any_unreachable : any_failed) = true;
  }
  if (json) {
    std::printf("%s\n", to_json(rows).dump(2).c_str());
  } else {
    print_table(rows);
    std::printf("%s\n", summary_line(rows).c_str());
  }
  std::fflush(stdout);
  for (const auto& row : rows)
    if (row.failure) log::error(row.error, {{"host", row.host}});
  ctx.exit_code = reach_exit_code(any_unreachable, any_failed);
}

}  // namespace

void add_ping_commands(CLI::App& app, Context& ctx) {
  auto* ping = app.add_subcommand(
      "ping", "reach every host over SSH and show its OS, kernel, CPUs and memory (exit 2: a host failed, including an "
      "unknown or changed host key; 4: a host unreachable)");
  static ReachFlags flags;
  static bool json = false;
  flags.timeout_s = 30;
  add_reach_flags(*ping, flags);
  ping->add_flag("--json", json, "print a JSON array instead of the table");
  ping->callback([&ctx] { run_ping(ctx, flags, json); });
}

}  // namespace xft::cli
