// xftctl check fabric: is this cluster ready for RDMA inference, and if not,
// exactly what to fix. Every host is probed in parallel over SSH (one script:
// libfabric, RDMA devices, eadm, memlock, interface, Open MPI, numactl, clock),
// then every ordered pair runs a real libfabric ping-pong, in rounds of
// disjoint pairs: the control node starts the server on one host and the
// client on the other over SSH, so only the two hosts of a pair talk libfabric
// and a blocked pair costs its own timeouts, never the whole run. Plus the hidden
// `xftctl check pair-worker` both ends of a pair run.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress.h"
#include "cli/rank_launch.h"
#include "cli/reach_options.h"
#include "fabric/checks.h"
#include "fabric/facts.h"
#include "fabric/pingpong.h"
#include "fabric/report.h"
#include "remote/fanout.h"
#include "launcher/mpirun.h"
#include "common/log.h"

namespace xft::cli {
namespace {

struct FabricFlags {
  ReachFlags reach;
  std::string provider;  // empty: each host's inventory provider
  bool json = false;
  bool all = false;
  bool no_pairs = false;
  bool no_plan = false;
  bool serial_pairs = false;
  std::vector<std::string> sizes{"8", "1M"};
  int iterations = 200;
  int pair_timeout_s = 3;
  int port = 0;  // 0: a random base in the ephemeral range
  std::string remote_xftctl;  // empty: this binary's path
};

struct HostProbe {
  inventory::Host host;
  std::unique_ptr<remote::RemoteSession> session;
  std::optional<fabric::FabricFacts> facts;
  std::optional<double> clock_offset_s;
  std::string error;  // why there are no facts
};

Expected<std::size_t> parse_size(const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (...) {
    return make_error("--sizes: '" + text + "' is not a size (e.g. 8, 64K, 1M)");
  }
  std::string suffix = text.substr(used);
  if (suffix == "K" || suffix == "k") value <<= 10;
  else if (suffix == "M" || suffix == "m") value <<= 20;
  else if (!suffix.empty()) return make_error("--sizes: '" + text + "' has an unknown suffix (K or M)");
  if (value == 0 || value > (std::size_t{256} << 20)) return make_error("--sizes: '" + text + "' must be 1 B..256M");
  return static_cast<std::size_t>(value);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string provider_of(const FabricFlags& flags, const inventory::Host& host) {
  return flags.provider.empty() ? host.fabric.provider : flags.provider;
}

void probe_host(remote::Transport& transport, const FabricFlags& flags, HostProbe& probe) {
  auto session = transport.connect(probe.host);
  if (!session) {
    probe.error = session.error().message;
    return;
  }
  probe.session = std::move(*session);
  remote::RunOptions options;
  options.stdin_data = fabric::fabric_probe_script();
  options.timeout = std::chrono::seconds(60);
  auto run = probe.session->run("sh -s -- " + launcher::shell_join({provider_of(flags, probe.host)}), options);
  if (!run) {
    probe.error = run.error().message;
    return;
  }
  auto facts = fabric::parse_fabric_facts(run->out, probe.host.name);
  if (!facts) {
    probe.error = facts.error().message;
    return;
  }
  probe.facts = std::move(*facts);
  // The clock: the host's time against the middle of our round trip.
  double before = wall_seconds();
  auto date = probe.session->run("date +%s.%N");
  double after = wall_seconds();
  if (date && date->exit_status == 0) {
    try {
      probe.clock_offset_s = std::stod(date->out) - (before + after) / 2;
    } catch (...) {
    }
  }
}

// NUMA nodes the plan's ranks use, per host; empty when there is no plan.
std::map<std::string, std::vector<int>> rank_numa_nodes(const Context& ctx, const FabricFlags& flags,
                                                        std::string& why_none) {
  std::map<std::string, std::vector<int>> nodes;
  if (flags.no_plan) return nodes;
  PlanFlags plan_flags;
  int failure_code = 0;
  auto planned = plan_for(ctx, plan_flags, flags.reach, failure_code);
  if (!planned) {
    why_none = planned.error().message;
    return nodes;
  }
  for (const auto& rank : planned->plan.ranks) {
    auto& list = nodes[rank.host];
    if (std::find(list.begin(), list.end(), rank.numa_node) == list.end()) list.push_back(rank.numa_node);
  }
  return nodes;
}

struct PairRun {
  std::string from, to;
  std::optional<fabric::PingPongReport> report;
  std::string error;  // the worker could not run
  std::string fix;    // for error
  bool port_in_use = false;  // the server's ports were taken: worth another try on others
};

// The pair worker's exit status when a port it must bind is taken.
constexpr int kWorkerPortInUse = 3;
// The server's line on stdout once its ports listen.
constexpr const char* kWorkerListening = "pair-worker: listening";

// The default ports: above Linux's default ephemeral range (32768-60999), so
// no outgoing connection of the hosts (SSH, a rank, an earlier pair's client)
// holds one; 500 rounds of two ports each fit below 65535.
constexpr int kFirstDefaultPort = 61000;
constexpr int kDefaultPortSpan = 3500;

int random_even_port(int first, int span) {
  return first + static_cast<int>(std::random_device{}() % static_cast<unsigned>(span / 2)) * 2;
}

// Exit 126/127 from the remote shell: the binary is not there.
std::string worker_fix(int exit_status, const std::string& host, const std::string& provider) {
  if (exit_status == 126 || exit_status == 127)
    return "put xftctl at the same path on every host (`xftctl sync`), or name it with --remote-xftctl";
  return "run `FI_LOG_LEVEL=warn fi_info -p '" + provider + "' -t FI_EP_RDM` on " + host;
}

// `env` first: the host's libfabric (EFA's) on LD_LIBRARY_PATH (fabric::libfabric_env).
std::vector<std::string> worker_command(const FabricFlags& flags, const std::vector<std::string>& env,
                                        const std::string& role, const std::string& provider,
                                        const std::string& local, const std::string& peer, int port) {
  std::string sizes;
  for (const auto& s : flags.sizes) sizes += (sizes.empty() ? "" : ",") + s;
  std::vector<std::string> command = env;
  command.insert(command.end(), {flags.remote_xftctl.empty() ? self_path() : flags.remote_xftctl,
                                   "check", "pair-worker", "--role", role, "--provider", provider,
                                   "--local", local, "--tcp-port", std::to_string(port),
                                   "--fabric-port", std::to_string(port + 1), "--sizes", sizes,
                                   "--iterations", std::to_string(flags.iterations),
                                   "--pair-timeout", std::to_string(flags.pair_timeout_s)});
  if (!peer.empty()) {
    command.push_back("--peer");
    command.push_back(peer);
  }
  return command;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "no output" : line;
}

// Where a host's pair worker binds and is reached: the first IPv4 address of
// the inventory's fabric interface (traffic then takes the fabric, not the
// management network SSH may use), else the inventory's address.
std::string fabric_address(const HostProbe& probe) {
  if (probe.facts && !probe.host.fabric.iface.empty())
    if (const auto* iface = probe.facts->interface(probe.host.fabric.iface))
      for (const auto& address : iface->addresses)
        if (address.find(':') == std::string::npos) return address.substr(0, address.find('/'));
  return probe.host.address;
}

std::vector<std::string> libfabric_env(const HostProbe& probe) {
  return probe.facts ? fabric::libfabric_env(*probe.facts) : std::vector<std::string>{};
}

PairRun run_pair_on(const FabricFlags& flags, HostProbe& from, HostProbe& to, int port) {
  PairRun pair{from.host.name, to.host.name, std::nullopt, "", ""};
  std::string provider = provider_of(flags, from.host);
  remote::RunOptions options;
  options.timeout = std::chrono::seconds(flags.pair_timeout_s * 3 + 60);
  std::string server_error;
  int server_status = 0;
  std::atomic<bool> server_done{false};
  // The server says when it listens; the control node also asks the port
  // itself, where it can reach it (not behind a bastion).
  std::atomic<bool> listening{false};
  remote::RunOptions server_options = options;
  std::string server_out;
  server_options.on_output = [&](bool is_stderr, std::string_view chunk) {
    if (is_stderr || listening) return;
    server_out.append(chunk.substr(0, 256));
    if (server_out.find(kWorkerListening) != std::string::npos) listening = true;
  };
  std::thread server([&] {
    auto run = to.session->run(
        launcher::shell_join(worker_command(flags, libfabric_env(to), "server", provider, fabric_address(to), "", port)),
        server_options);
    if (!run) server_error = run.error().message;
    else if ((server_status = run->exit_status) != 0) server_error = first_line(run->err);
    server_done = true;
  });
  // Start the client once the server listens, so the server's start-up (SSH,
  // loading xftctl) is not charged to the pair's timeouts. The control node
  // asks the port itself; where it cannot reach it, the client starts anyway
  // after the wait and reports what it sees.
  auto ready_by = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  const bool reachable_here = to.session->host().jump.empty();  // ~/.ssh/config's ProxyJump too
  while (!server_done && !listening && std::chrono::steady_clock::now() < ready_by &&
         !(reachable_here && fabric::probe_tcp(fabric_address(to), port, std::chrono::milliseconds(500)).ok))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (server_done && !server_error.empty()) {  // it never listened: nothing to measure
    server.join();
    pair.error = to.host.name + ": the pair worker (server) failed: " + server_error;
    pair.fix = server_status == kWorkerPortInUse
                   ? "another program holds the port on " + to.host.name + ": name free ports with --port"
                   : worker_fix(server_status, to.host.name, provider);
    pair.port_in_use = server_status == kWorkerPortInUse;
    return pair;
  }
  auto client = from.session->run(
      launcher::shell_join(worker_command(flags, libfabric_env(from), "client", provider, fabric_address(from),
                                          fabric_address(to), port)),
      options);
  if (!client) {
    pair.error = client.error().message;
  } else if (client->exit_status != 0) {
    pair.error = from.host.name + ": the pair worker exited with " + std::to_string(client->exit_status) + ": " +
                 first_line(client->err);
    pair.fix = worker_fix(client->exit_status, from.host.name, provider);
  } else {
    auto report = fabric::report_from_json(client->out);
    if (!report) pair.error = from.host.name + ": " + report.error().message;
    else pair.report = std::move(*report);
  }
  // A server whose client never arrived would wait out its deadline.
  if (!pair.report || !pair.report->fabric.ok) fabric::stop_server(fabric_address(to), port);
  server.join();
  // A server that failed on its own (not for want of a client: we stopped
  // that one) says why.
  bool server_failed = !server_error.empty() && server_error.find("no client reached") == std::string::npos;
  if (!pair.report && server_failed) pair.error += "; " + to.host.name + ": " + server_error;
  if (!pair.report && pair.fix.empty()) pair.fix = "run `xftctl ping --hosts " + from.host.name + "," + to.host.name + "`";
  if (pair.report && !pair.report->fabric.ok && server_failed)
    pair.report->fabric.detail += "; " + to.host.name + ": " + server_error;
  return pair;
}

// A port another program took on the server's host (a service, or an
// ephemeral port when the range overlaps --port) is not the fabric's fault:
// the pair runs again on random ports of the default range.
PairRun run_pair(const FabricFlags& flags, HostProbe& from, HostProbe& to, int port) {
  constexpr int kTries = 3;
  PairRun pair = run_pair_on(flags, from, to, port);
  for (int attempt = 1; attempt < kTries && pair.port_in_use; ++attempt) {
    int other = random_even_port(kFirstDefaultPort, kDefaultPortSpan + 1000);
    spdlog::debug("check fabric: {} -> {}: port {} taken on {}; trying {}", from.host.name, to.host.name, port,
                  to.host.name, other);
    port = other;
    pair = run_pair_on(flags, from, to, port);
  }
  return pair;
}

// Where the pairs stand, on stderr (stdout is the report or the JSON
// document; cli/progress.h): on a terminal one bar redrawn in place, as setup
// hosts draws its progress; otherwise a log line each time another tenth of
// the rounds is done (at most 10 a run, so logs show movement without
// drowning); -q: none.
class PairProgress {
 public:
  PairProgress(std::size_t batches, std::size_t hosts, bool serial, bool quiet)
      : batches_(batches), hosts_(hosts), unit_(serial ? "pair" : "round"),
        progress_(batches == 0 ? ProgressMode::none : progress_mode(quiet),
                  [this](uint64_t, uint64_t, bool bar, size_t) { return bar ? bar_text() : line_text(); }, timing()) {}

  void start_batch(std::size_t pairs) {
    progress_.update([&] {
      ++batch_;
      batch_pairs_ = pairs;
      pairs_done_ = 0;
    }, true);
  }
  void pair_done() {
    progress_.update([&] { ++pairs_done_; });
  }
  void batch_done() {
    bool tenth = false;
    progress_.update([&] {
      std::size_t reached = batch_ * 10 / batches_;
      tenth = reached != tenths_logged_;
      tenths_logged_ = reached;
    });
    if (tenth) progress_.line_now();
  }
  // Clears the bar; the report follows on a clean line.
  void finish() { progress_.finish(); }

 private:
  // Lines by tenths alone; a bar at most every 100 ms (a redraw per pair would flood a slow terminal).
  static ProgressTiming timing() {
    ProgressTiming timing;
    timing.line_every = ProgressTiming::Millis::max();
    return timing;
  }
  // "check fabric [#####...............]  round 17/126, 12/32 pairs"
  std::string bar_text() const {
    if (batch_ == 0) return "";
    std::string text = "check fabric " + progress_bar(batch_ - 1, batches_, 20, '.') + "  " + unit_ + " " +
                       std::to_string(batch_) + "/" + std::to_string(batches_);
    if (unit_ == "round") text += ", " + std::to_string(pairs_done_) + "/" + std::to_string(batch_pairs_) + " pairs";
    return text;
  }
  // "check fabric: round 4/34 done (11%), 17 hosts"
  std::string line_text() const {
    return "check fabric: " + unit_ + " " + std::to_string(batch_) + "/" + std::to_string(batches_) + " done (" +
           std::to_string(batch_ * 100 / batches_) + "%), " + std::to_string(hosts_) + " hosts";
  }

  std::size_t batches_, hosts_;
  std::string unit_;
  std::size_t batch_ = 0, batch_pairs_ = 0, pairs_done_ = 0, tenths_logged_ = 0;
  Progress progress_;
};

void print_check_table(const std::vector<fabric::Check>& checks, bool pairs) {
  std::vector<const fabric::Check*> rows;
  for (const auto& c : checks)
    if (c.pair.empty() != pairs) rows.push_back(&c);
  if (rows.empty()) return;
  std::size_t w_who = 4, w_check = 5;
  for (const auto* c : rows) {
    w_who = std::max(w_who, (pairs ? c->pair : c->host).size());
    w_check = std::max(w_check, c->check.size());
  }
  std::printf("%-*s  %-*s  %-7s  %s\n", int(w_who), pairs ? "PAIR" : "HOST", int(w_check), "CHECK", "VERDICT",
              "OBSERVED");
  for (const auto* c : rows) {
    std::printf("%-*s  %-*s  %-7s  %s\n", int(w_who), (pairs ? c->pair : c->host).c_str(), int(w_check),
                c->check.c_str(), fabric::verdict_name(c->verdict), c->observed.c_str());
    if (!c->fix.empty()) std::printf("%*s  fix: %s\n", int(w_who), "", c->fix.c_str());
  }
  std::printf("\n");
}

// Default: the problems folded, the summary, the matrices (per host past 16
// hosts); --all: every row, each matrix in full.
void print_report(const std::vector<fabric::Check>& checks, bool all, std::size_t hosts, std::size_t pairs,
                  const fabric::PairMatrix& latency, const fabric::PairMatrix& bandwidth,
                  const fabric::LoadedByHost& loaded) {
  if (all) {
    print_check_table(checks, false);
    print_check_table(checks, true);
  } else if (auto problems = fabric::format_problems(checks); !problems.empty()) {
    std::printf("%s\n", problems.c_str());
  }
  std::printf("%s\n", fabric::summary_line(checks, hosts, pairs).c_str());
  std::printf("%s", fabric::format_measured_libfabric(loaded, hosts).c_str());
  if (pairs == 0) return;
  auto matrix = [all](const fabric::PairMatrix& m, int decimals) {
    return all ? fabric::format_matrix(m, decimals) : fabric::format_matrix_for_width(m, decimals);
  };
  std::printf("\n%s\n", matrix(latency, 1).c_str());
  std::printf("%s\n", matrix(bandwidth, 2).c_str());
  std::printf("! = far off the median (latency above 2x, bandwidth below half)\n");
}

std::string size_label(std::size_t size) {
  if (size >= (1u << 20) && size % (1u << 20) == 0) return std::to_string(size >> 20) + " MiB";
  if (size >= 1024 && size % 1024 == 0) return std::to_string(size >> 10) + " KiB";
  return std::to_string(size) + " B";
}

void run_check_fabric(Context& ctx, FabricFlags& flags) {
  std::vector<std::size_t> sizes;
  for (const auto& text : flags.sizes) {
    auto size = parse_size(text);
    if (!size) {
      spdlog::error("check fabric: {}", size.error().message);
      ctx.exit_code = exit_error;
      return;
    }
    sizes.push_back(*size);
  }
  auto hosts = load_selected_hosts(ctx.inventory_flag, flags.reach.hosts);
  if (!hosts) {
    log::error(hosts.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  auto transport = make_ssh_transport(flags.reach);
  std::vector<HostProbe> probes(hosts->size());
  for (std::size_t i = 0; i < hosts->size(); ++i) probes[i].host = (*hosts)[i];
  remote::run_bounded(probes.size(), flags.reach.fanout, [&](std::size_t i) { probe_host(*transport, flags, probes[i]); });

  std::string why_no_plan;
  auto numa = rank_numa_nodes(ctx, flags, why_no_plan);
  std::vector<fabric::Check> checks;
  for (auto& probe : probes) {
    if (!probe.facts) {
      checks.push_back(fabric::unreachable_host_check(probe.host.name, probe.error));
      continue;
    }
    fabric::HostExpectation expect;
    expect.host = probe.host.name;
    expect.provider = provider_of(flags, probe.host);
    expect.iface = probe.host.fabric.iface;
    expect.address = probe.host.address;
    expect.rank_numa_nodes = numa[probe.host.name];
    expect.clock_offset_s = probe.clock_offset_s;
    auto rows = fabric::host_checks(*probe.facts, expect);
    checks.insert(checks.end(), rows.begin(), rows.end());
  }

  // Pairs: every ordered pair of reachable hosts, in rounds where no host is
  // in two pairs (--serial-pairs: one pair at a time).
  std::vector<std::string> names;
  for (auto& probe : probes) names.push_back(probe.host.name);
  std::size_t n = probes.size();
  fabric::PairMatrix latency{"latency, " + size_label(sizes.front()) + ", one way (us; row: from, column: to)",
                               names, {}, false, {}, 0};
  fabric::PairMatrix bandwidth{"bandwidth, " + size_label(sizes.back()) + " ping-pong (GB/s; row: from, column: to)",
                                 names, {}, true, {}, 0};
  latency.values.assign(n, std::vector<std::optional<double>>(n));
  bandwidth.values.assign(n, std::vector<std::optional<double>>(n));
  std::size_t pairs_ran = 0;
  fabric::LoadedByHost loaded;  // what each host's client worker measured with
  if (!flags.no_pairs && n >= 2) {
    int base = flags.port;
    if (base == 0) base = random_even_port(kFirstDefaultPort, kDefaultPortSpan);
    // Servers of earlier rounds have exited: ports come back after 500 rounds.
    std::vector<std::optional<PairRun>> runs(n * n);
    std::vector<int> ports(n * n, 0);
    auto rounds = fabric::pair_rounds(n);
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> batches;
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      for (const auto& [a, b] : rounds[r]) ports[a * n + b] = base + 2 * static_cast<int>(r % 500);
      if (flags.serial_pairs)
        for (const auto& pair : rounds[r]) batches.push_back({pair});
      else
        batches.push_back(rounds[r]);
    }
    PairProgress progress(batches.size(), n, flags.serial_pairs, ctx.quiet);
    for (const auto& batch : batches) {
      std::vector<std::pair<std::size_t, std::size_t>> runnable;
      for (const auto& [a, b] : batch)
        if (probes[a].session && probes[b].session) runnable.emplace_back(a, b);
      pairs_ran += runnable.size();
      progress.start_batch(runnable.size());
      remote::run_bounded(runnable.size(), static_cast<int>(runnable.size()), [&](std::size_t i) {
        auto [a, b] = runnable[i];
        runs[a * n + b] = run_pair(flags, probes[a], probes[b], ports[a * n + b]);
        progress.pair_done();
      });
      progress.batch_done();
    }
    progress.finish();
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b) {
        auto& pair = runs[a * n + b];
        if (!pair) continue;
        if (pair->report && !pair->report->libfabric.path.empty() && (loaded.empty() || loaded.back().first != pair->from))
          loaded.emplace_back(pair->from, pair->report->libfabric);
        std::string provider = provider_of(flags, probes[a].host);
        if (!pair->report) {
          checks.push_back({"", pair->from + " -> " + pair->to, "pair-worker", fabric::Verdict::fail, pair->error,
                            pair->fix});
          continue;
        }
        auto rows = fabric::pair_checks(pair->from, pair->to, provider, *pair->report);
        checks.insert(checks.end(), rows.begin(), rows.end());
        if (pair->report->fabric.ok && !pair->report->sizes.empty()) {
          latency.values[a][b] = pair->report->sizes.front().one_way_us;
          bandwidth.values[a][b] = pair->report->sizes.back().bandwidth_gbps;
        }
      }
    fabric::flag_outliers(latency);
    fabric::flag_outliers(bandwidth);
    auto slow = fabric::outlier_checks(latency, "latency", "us");
    auto thin = fabric::outlier_checks(bandwidth, "bandwidth", "GB/s");
    checks.insert(checks.end(), slow.begin(), slow.end());
    checks.insert(checks.end(), thin.begin(), thin.end());
    fabric::note_measured_libfabric(checks, loaded);
  }

  int counts[3] = {0, 0, 0};
  for (const auto& c : checks) ++counts[static_cast<int>(c.verdict)];
  if (flags.json) {
    nlohmann::ordered_json out;
    out["checks"] = nlohmann::ordered_json::array();
    for (const auto& c : checks) out["checks"].push_back(fabric::check_to_json(c));
    if (pairs_ran) {
      out["libfabric"] = nlohmann::ordered_json::object();
      for (const auto& [host, library] : loaded) out["libfabric"][host] = {{"version", library.version}, {"path", library.path}};
      out["latency_us"] = fabric::matrix_to_json(latency);
      out["bandwidth_gbps"] = fabric::matrix_to_json(bandwidth);
    }
    out["summary"] = {{"pass", counts[0]}, {"warn", counts[1]}, {"fail", counts[2]}, {"hosts", n},
                      {"pairs", pairs_ran}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_report(checks, flags.all, n, pairs_ran, latency, bandwidth, loaded);
  }
  std::fflush(stdout);
  if (!why_no_plan.empty())
    spdlog::warn("check fabric: no rank plan, NIC NUMA not compared: {}", why_no_plan);
  ctx.exit_code = counts[2] > 0 ? exit_error : exit_ok;
}

struct WorkerFlags {
  std::string role;
  fabric::PingPongOptions options;
  std::string sizes = "8,1M";
  int pair_timeout_s = 3;
};

void run_pair_worker(Context& ctx, WorkerFlags& flags) {
  // What this worker writes on stderr becomes the control node's message for
  // the pair ("h02: the pair worker (server) failed: ..."): plain text lines,
  // whatever format and timestamps the SSH session would pick.
  log::setup(spdlog::default_logger()->level(), log::Format::text, false);
  flags.options.sizes.clear();
  std::size_t start = 0;
  while (start <= flags.sizes.size()) {
    std::size_t comma = flags.sizes.find(',', start);
    if (comma == std::string::npos) comma = flags.sizes.size();
    auto size = parse_size(flags.sizes.substr(start, comma - start));
    if (!size) {
      spdlog::error("pair-worker: {}", size.error().message);
      ctx.exit_code = exit_error;
      return;
    }
    flags.options.sizes.push_back(*size);
    start = comma + 1;
  }
  flags.options.connect_timeout = std::chrono::milliseconds(flags.pair_timeout_s * 1000);
  if (flags.role == "server") {
    flags.options.on_listening = [] {
      std::printf("%s\n", kWorkerListening);
      std::fflush(stdout);
    };
    auto served = fabric::serve_pingpong(flags.options);
    if (!served) {
      log::write_located(log::Level::err, served.error().message);
      ctx.exit_code = served.error().port_in_use ? kWorkerPortInUse : exit_error;
    }
    return;
  }
  auto report = fabric::run_pingpong_client(flags.options);
  if (!report) {
    log::write_located(log::Level::err, report.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  std::printf("%s\n", fabric::report_to_json(*report).dump().c_str());
}

}  // namespace

void add_check_commands(CLI::App& app, Context& ctx) {
  auto* check = app.add_subcommand("check", "check that the cluster is ready (fabric)");
  check->require_subcommand(1);

  auto* fabric = check->add_subcommand(
      "fabric",
      "per host: libfabric and the provider, RDMA devices and ports, eadm (eRDMA), memlock, interface, NIC NUMA, "
      "Open MPI, numactl, clock; per ordered pair: TCP, SSH port and a libfabric ping-pong (latency and bandwidth "
      "matrices). Exit 1 when a check FAILs");
  static FabricFlags flags;
  add_reach_flags(*fabric, flags.reach);
  fabric->add_option("--provider", flags.provider, "libfabric provider for every host (default: the inventory's)");
  fabric->add_flag("--json", flags.json, "print a JSON object: checks, latency and bandwidth matrices");
  fabric->add_flag("--all", flags.all,
                   "every check's row, PASS too, and the full matrices (default: the problems folded by host, "
                   "a summary, and per-host matrix rows past 16 hosts)");
  fabric->add_flag("--no-pairs", flags.no_pairs, "per-host checks only");
  fabric->add_flag("--serial-pairs", flags.serial_pairs,
                   "one pair at a time (default: disjoint pairs at once, each host in at most one)");
  fabric->add_flag("--no-plan", flags.no_plan, "do not compute the rank plan (NIC NUMA not compared)");
  fabric->add_option("--sizes", flags.sizes, "message sizes; latency from the smallest, bandwidth from the largest")
      ->delimiter(',')
      ->capture_default_str();
  fabric->add_option("--iterations", flags.iterations, "round trips of the smallest size")->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  fabric->add_option("--pair-timeout", flags.pair_timeout_s,
                     "seconds each step of a pair (TCP, SSH port, first libfabric message) may take")
      ->capture_default_str()->check(CLI::Range(1, 600));
  fabric->add_option("--port", flags.port, "first TCP port of the pairs (each round of pairs takes two; default: random in 61000..64498)")
      ->check(CLI::Range(1024, 65000));
  fabric->add_option("--remote-xftctl", flags.remote_xftctl, "xftctl's path on the hosts (default: this binary's path)");
  fabric->footer("Example: xftctl -i cluster.yaml check fabric --hosts 'node[01-04]'");
  fabric->callback([&ctx] { run_check_fabric(ctx, flags); });

  auto* worker = check->add_subcommand("pair-worker", "one end of a check fabric pair (started by check fabric)");
  worker->group("");  // hidden
  static WorkerFlags worker_flags;
  worker->add_option("--role", worker_flags.role)->required()->check(CLI::IsMember({"server", "client"}));
  worker->add_option("--provider", worker_flags.options.provider);
  worker->add_option("--local", worker_flags.options.local_address)->required();
  worker->add_option("--peer", worker_flags.options.peer_address);
  worker->add_option("--tcp-port", worker_flags.options.tcp_port)->required();
  worker->add_option("--fabric-port", worker_flags.options.fabric_port);
  worker->add_option("--ssh-port", worker_flags.options.ssh_port);
  worker->add_option("--sizes", worker_flags.sizes);
  worker->add_option("--iterations", worker_flags.options.iterations);
  worker->add_option("--pair-timeout", worker_flags.pair_timeout_s);
  worker->callback([&ctx] { run_pair_worker(ctx, worker_flags); });
}

}  // namespace xft::cli
