// The rules of check fabric on hand-built facts, and a real libfabric
// tcp;ofi_rxm ping-pong over loopback (both ends in this process).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "fabric/checks.h"
#include "fabric/pingpong.h"

namespace xft::fabric {
namespace {

FabricFacts erdma_host() {
  FabricFacts facts;
  facts.host = "h01";
  facts.have_libfabric = true;
  facts.libfabric_version = "1.17.0";
  facts.providers = {"verbs", "ofi_rxm", "tcp"};
  facts.endpoints = {{"verbs;ofi_rxm", "IB-0xfe80000000000000", "erdma_0", "FI_EP_RDM"}};
  RdmaDevice device{"erdma_0", "erdma", "0216:3eff:fe0a:0111", 0, "eth0", {{1, "ACTIVE", "LinkUp", "Ethernet"}}};
  facts.devices = {device};
  facts.interfaces = {{"eth0", "00:16:3e:0a:01:11", 1500, 0, {"10.0.0.11/24"}}};
  facts.have_eadm = true;
  facts.eadm_version = "driver 0.2.38";
  facts.congestion_control = {{"erdma_0", 1, "cc: 1"}};
  facts.delayed_ack = {{"erdma_0", 0, "dack: 0"}};
  facts.mpirun_version = "Open MPI 4.1.4";
  facts.have_numactl = true;
  return facts;
}

HostExpectation erdma_expectation() { return {"h01", "verbs;ofi_rxm", "eth0", "10.0.0.11", {0}, 0.002}; }

const Check& find(const std::vector<Check>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.check == name) return c;
  static Check none{"", "", "<missing>", Verdict::fail, "", ""};
  return none;
}

TEST(FabricChecks, HealthyErdmaHostPassesEverything) {
  auto checks = host_checks(erdma_host(), erdma_expectation());
  std::vector<std::string> names;
  for (const auto& c : checks) {
    names.push_back(c.check);
    EXPECT_EQ(c.verdict, Verdict::pass) << c.check << ": " << c.observed;
    EXPECT_EQ(c.fix, "") << c.check;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"libfabric", "provider", "device erdma_0", "eadm", "cc erdma_0",
                                             "delayed-ack erdma_0", "memlock", "interface", "address", "nic-numa",
                                             "open-mpi", "numactl", "clock"}));
  EXPECT_EQ(find(checks, "provider").observed, "verbs;ofi_rxm FI_EP_RDM on erdma_0");
  EXPECT_EQ(find(checks, "device erdma_0").observed, "erdma, port 1 ACTIVE LinkUp, Ethernet, NUMA 0, eth0");
  EXPECT_EQ(find(checks, "cc erdma_0").observed, "1 (CUBIC)");
  EXPECT_EQ(find(checks, "nic-numa").observed, "erdma_0 on node 0, ranks on 0");
  EXPECT_EQ(find(checks, "clock").observed, "+0.002 s from the control node");
}

TEST(FabricChecks, EfasOwnLibfabricIsNamedInTheLibfabricRow) {
  auto facts = erdma_host();
  facts.libfabric_version = "1.18.2amzn1.0";
  facts.efa_libfabric_dir = "/opt/amazon/efa/lib64";
  auto checks = host_checks(facts, erdma_expectation());
  const auto& row = find(checks, "libfabric");
  EXPECT_EQ(row.verdict, Verdict::pass);
  EXPECT_EQ(row.observed, "1.18.2amzn1.0, EFA's in /opt/amazon/efa/lib64");
  EXPECT_EQ(find(host_checks(erdma_host(), erdma_expectation()), "libfabric").observed, "1.17.0");
}

TEST(FabricChecks, CongestionControlNotCubicWarnsWithTheEadmLine) {
  auto facts = erdma_host();
  facts.congestion_control = {{"erdma_0", 0, "cc: 0"}};
  auto cc = find(host_checks(facts, erdma_expectation()), "cc erdma_0");
  EXPECT_EQ(cc.verdict, Verdict::warn);
  EXPECT_EQ(cc.observed, "0 (not CUBIC)");
  EXPECT_EQ(cc.fix, "eadm conf -d erdma_0 -t cc -v 1");
}

TEST(FabricChecks, MemlockFailsOnlyForRdmaProviders) {
  auto facts = erdma_host();
  facts.memlock_kib = 64;
  auto memlock = find(host_checks(facts, erdma_expectation()), "memlock");
  EXPECT_EQ(memlock.verdict, Verdict::fail);
  EXPECT_EQ(memlock.observed, "64 KiB (RDMA registration needs unlimited)");
  EXPECT_EQ(memlock.fix, "add `* - memlock unlimited` to /etc/security/limits.conf and log in again");
  auto tcp = erdma_expectation();
  tcp.provider = "tcp;ofi_rxm";
  EXPECT_EQ(find(host_checks(facts, tcp), "memlock").verdict, Verdict::pass);
}

TEST(FabricChecks, MissingProviderAndDeviceFail) {
  auto facts = erdma_host();
  facts.endpoints.clear();
  facts.endpoint_error = "fi_getinfo: -61";
  facts.devices.clear();
  auto checks = host_checks(facts, erdma_expectation());
  EXPECT_EQ(find(checks, "provider").verdict, Verdict::fail);
  EXPECT_EQ(find(checks, "provider").observed, "no FI_EP_RDM endpoint (fi_getinfo: -61); providers: verbs,ofi_rxm,tcp");
  EXPECT_EQ(find(checks, "rdma").verdict, Verdict::fail);
  EXPECT_EQ(find(checks, "eadm").check, "<missing>");  // no eRDMA device, no eadm questions
}

TEST(FabricChecks, TcpProviderOnAnotherInterfaceFails) {
  auto facts = erdma_host();
  facts.endpoints = {{"tcp;ofi_rxm", "10.0.1.0/24", "eth1", "FI_EP_RDM"}, {"tcp;ofi_rxm", "127.0.0.1/32", "lo", "FI_EP_RDM"}};
  auto expect = erdma_expectation();
  expect.provider = "tcp;ofi_rxm";
  auto provider = find(host_checks(facts, expect), "provider");
  EXPECT_EQ(provider.verdict, Verdict::fail);
  EXPECT_EQ(provider.observed, "tcp;ofi_rxm FI_EP_RDM on eth1,lo, not on eth0");
  EXPECT_EQ(provider.fix, "set fabric.iface of h01 in the inventory to eth1");
}

TEST(FabricChecks, WrongAddressNamesTheInterfaceThatHasIt) {
  auto facts = erdma_host();
  facts.interfaces.push_back({"eth1", "00:16:3e:0a:01:12", 1500, 0, {"10.0.1.11/24"}});
  auto expect = erdma_expectation();
  expect.address = "10.0.1.11";
  auto address = find(host_checks(facts, expect), "address");
  EXPECT_EQ(address.verdict, Verdict::fail);
  EXPECT_EQ(address.observed, "eth0 has 10.0.0.11/24, not 10.0.1.11");
  EXPECT_EQ(address.fix, "set fabric.iface of h01 in the inventory to eth1 (it has 10.0.1.11)");
}

TEST(FabricChecks, NicOnAnotherNumaNodeWarns) {
  auto facts = erdma_host();
  facts.devices[0].numa_node = 1;
  auto numa = find(host_checks(facts, erdma_expectation()), "nic-numa");
  EXPECT_EQ(numa.verdict, Verdict::warn);
  EXPECT_EQ(numa.observed, "erdma_0 on node 1, ranks on 0");
}

TEST(FabricChecks, ClockOffsetWarns) {
  auto expect = erdma_expectation();
  expect.clock_offset_s = -2.5;
  auto clock = find(host_checks(erdma_host(), expect), "clock");
  EXPECT_EQ(clock.verdict, Verdict::warn);
  EXPECT_EQ(clock.fix, "`systemctl enable --now chrony` on h01");
}

TEST(FabricChecks, BlockedPairFailsWithTheFirewallFix) {
  PingPongReport report;
  report.tcp = {false, "port 40000: timed out after 3 s"};
  report.ssh = {false, "port 22: timed out after 3 s"};
  report.fabric = {false, "no answer to the first message within 3 s (waiting for the pong: timed out)"};
  auto checks = pair_checks("h02", "h03", "tcp;ofi_rxm", report);
  ASSERT_EQ(checks.size(), 3u);
  for (const auto& c : checks) {
    EXPECT_EQ(c.pair, "h02 -> h03");
    EXPECT_EQ(c.verdict, Verdict::fail);
  }
  EXPECT_EQ(checks[0].fix,
            "allow all traffic inside the security group (here: new TCP connections from h02 to h03; see `iptables "
            "-S` / `nft list ruleset` on h03)");
  EXPECT_EQ(checks[2].check, "libfabric tcp;ofi_rxm");
}

TEST(FabricChecks, OutliersAreFlaggedAgainstTheMedian) {
  PairMatrix latency{"latency", {"a", "b", "c"}, {}, false, {}, 0};
  latency.values = {{std::nullopt, 10.0, 11.0}, {10.0, std::nullopt, 50.0}, {12.0, 9.0, std::nullopt}};
  flag_outliers(latency);
  EXPECT_DOUBLE_EQ(latency.median, 10.5);
  EXPECT_TRUE(latency.flagged[1][2]);
  EXPECT_FALSE(latency.flagged[0][1]);
  auto rows = outlier_checks(latency, "latency", "us");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].pair, "b -> c");
  EXPECT_EQ(rows[0].observed, "50.00 us, median 10.50 us");
  EXPECT_EQ(format_matrix(latency, 1),
            "latency\n"
            "from \\ to     a     b       c\n"
            "a             -  10.0    11.0\n"
            "b          10.0     -  50.0 !\n"
            "c          12.0   9.0       -\n");
}

TEST(FabricChecks, PairRoundsCoverEveryOrderedPairOnceWithNoHostTwiceInARound) {
  for (std::size_t n : {2u, 3u, 4u, 5u, 8u}) {
    auto rounds = pair_rounds(n);
    EXPECT_EQ(rounds.size(), n % 2 ? 2 * n : 2 * (n - 1)) << n;
    std::set<std::pair<std::size_t, std::size_t>> seen;
    for (const auto& round : rounds) {
      std::set<std::size_t> busy;
      for (const auto& [a, b] : round) {
        EXPECT_NE(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "a host twice in one round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << a << "->" << b << " twice, n=" << n;
      }
    }
    EXPECT_EQ(seen.size(), n * (n - 1)) << n;
  }
  EXPECT_TRUE(pair_rounds(1).empty());
  EXPECT_EQ(pair_rounds(2), (std::vector<std::vector<std::pair<std::size_t, std::size_t>>>{{{0, 1}}, {{1, 0}}}));
}

TEST(FabricPingPong, IterationsAreCappedForLargeMessages) {
  EXPECT_EQ(iterations_for(8, 200), 200);
  EXPECT_EQ(iterations_for(1 << 20, 200), 64);
  EXPECT_EQ(iterations_for(64 << 20, 200), 5);
}

// A real tcp;ofi_rxm exchange on loopback: the server in a thread, the client here.
TEST(FabricPingPong, LoopbackTcpRxmMeasuresEverySize) {
  PingPongOptions options;
  options.local_address = "127.0.0.1";
  options.peer_address = "127.0.0.1";
  // Above Linux's default ephemeral range, where no outgoing connection holds a port.
  options.tcp_port = 61000 + static_cast<int>(::getpid() % 1000) * 2;
  options.fabric_port = options.tcp_port + 1;
  options.ssh_port = options.tcp_port;  // nothing listens on 22 here: the TCP port stands in
  options.sizes = {8, 65536};
  options.iterations = 20;
  options.connect_timeout = std::chrono::milliseconds(5000);
  Expected<void, ServeError> served;
  std::thread server([&] { served = serve_pingpong(options); });
  // As check fabric does: start the client once the server listens.
  for (int i = 0; i < 200 && !probe_tcp("127.0.0.1", options.tcp_port, std::chrono::milliseconds(100)).ok; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto report = run_pingpong_client(options);
  server.join();
  ASSERT_TRUE(served) << served.error().message;
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->tcp.ok) << report->tcp.detail;
  EXPECT_TRUE(report->fabric.ok) << report->fabric.detail;
  ASSERT_EQ(report->sizes.size(), 2u);
  EXPECT_EQ(report->sizes[0].size, 8u);
  EXPECT_EQ(report->sizes[0].iterations, 20);
  EXPECT_GT(report->sizes[0].one_way_us, 0);
  EXPECT_GT(report->sizes[1].bandwidth_gbps, 0);
  auto round_trip = report_from_json(report_to_json(*report).dump());
  ASSERT_TRUE(round_trip);
  EXPECT_EQ(round_trip->sizes[1].size, 65536u);
  EXPECT_EQ(round_trip->libfabric.version, report->libfabric.version);
  EXPECT_EQ(round_trip->libfabric.path, report->libfabric.path);
}

// The first line of a shell command's output.
std::string first_output_line(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    if (fgets(buffer, sizeof buffer, pipe)) out = buffer;
    pclose(pipe);
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The library this test loaded, as the dynamic loader and fi_info tell it:
// the file mapped into this process (/proc/self/maps shows its real name,
// libfabric.so.1.x.y) and the release fi_info prints (the same package).
TEST(FabricPingPong, LoadedLibfabricIsTheMappedFileAndItsRelease) {
  auto loaded = loaded_libfabric();
  std::string mapped = first_output_line("awk '$6 ~ /\\/libfabric\\.so/ { print $6; exit }' /proc/" +
                                         std::to_string(::getpid()) + "/maps");
  ASSERT_FALSE(mapped.empty()) << "libfabric not mapped into this process";
  ASSERT_FALSE(loaded.path.empty());
  EXPECT_EQ(loaded.path.substr(loaded.path.rfind('/')), "/libfabric.so.1");  // the soname the loader looked up
  EXPECT_TRUE(std::filesystem::equivalent(loaded.path, mapped)) << loaded.path << " vs " << mapped;
  EXPECT_EQ(loaded.version, parse_libfabric_version(first_output_line("fi_info --version | grep '^libfabric:'")));
}

// A socket bound to 127.0.0.1:port, listening, so the server's bind of the same port fails.
int hold_port(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Either of the server's ports taken on its host: it fails at once and says
// so, which check fabric reads as "run this pair again on other ports".
TEST(FabricPingPong, ATakenPortIsReportedAsInUse) {
  for (int taken : {0, 1}) {
    PingPongOptions options;
    options.local_address = "127.0.0.1";
    options.tcp_port = 63000 + static_cast<int>(::getpid() % 500) * 4 + taken * 2;
    options.fabric_port = options.tcp_port + 1;
    options.sizes = {8};
    options.connect_timeout = std::chrono::milliseconds(1000);
    int holder = hold_port(taken == 0 ? options.tcp_port : options.fabric_port);
    ASSERT_GE(holder, 0) << std::strerror(errno);
    auto served = serve_pingpong(options);
    ::close(holder);
    ASSERT_FALSE(served) << taken;
    EXPECT_TRUE(served.error().port_in_use) << served.error().message;
    if (taken == 0) {
      EXPECT_EQ(served.error().message,
                "cannot listen on 127.0.0.1:" + std::to_string(options.tcp_port) + ": Address already in use");
    }
  }
}

TEST(FabricPingPong, NoServerFailsInBoundedTime) {
  PingPongOptions options;
  options.local_address = "127.0.0.1";
  options.peer_address = "127.0.0.1";
  options.tcp_port = 46000 + static_cast<int>(::getpid() % 1000) * 2;
  options.fabric_port = options.tcp_port + 1;
  options.ssh_port = options.tcp_port;
  options.connect_timeout = std::chrono::milliseconds(1000);
  auto report = run_pingpong_client(options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(report->tcp.ok);
  EXPECT_EQ(report->tcp.detail, "port " + std::to_string(options.tcp_port) + ": refused (nothing listens on the port)");
  EXPECT_FALSE(report->fabric.ok);
  EXPECT_NE(report->fabric.detail.find("no answer to the first message within 1 s"), std::string::npos)
      << report->fabric.detail;
}

}  // namespace
}  // namespace xft::fabric
