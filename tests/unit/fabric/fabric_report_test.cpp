// check fabric's human report: problems folded by host and pair, the summary
// line, and matrices that become per-host rows at scale.
#include <gtest/gtest.h>

#include <sstream>

#include "fabric/report.h"

namespace xft::fabric {
namespace {

std::vector<std::string> names(const std::string& prefix, int first, int last) {
  std::vector<std::string> out;
  for (int i = first; i <= last; ++i) {
    char text[16];
    std::snprintf(text, sizeof text, "%s%02d", prefix.c_str(), i);
    out.push_back(text);
  }
  return out;
}

Check memlock_fail(const std::string& host) {
  return {host, "", "memlock", Verdict::fail, "64 KiB (RDMA registration needs unlimited)",
          "add `* - memlock unlimited` to /etc/security/limits.conf and log in again"};
}

Check chrony_warn(const std::string& host) {
  return {host, "", "clock", Verdict::warn, "+0.700 s from the control node", "`systemctl enable --now chrony` on " + host};
}

Check ssh_fail(const std::string& from, const std::string& to) {
  return {"", from + " -> " + to, "ssh", Verdict::fail, "port 22: timed out after 2 s",
          "allow TCP port 22 from " + from + " to " + to + " (security group, firewall)"};
}

std::size_t widest_line(const std::string& text) {
  std::istringstream lines(text);
  std::size_t widest = 0;
  for (std::string line; std::getline(lines, line);) widest = std::max(widest, line.size());
  return widest;
}

TEST(FabricReport, SameProblemOnManyHostsIsOneRowWithTheHostsFolded) {
  std::vector<Check> checks;
  for (const auto& host : names("node", 1, 64)) {
    checks.push_back({host, "", "numactl", Verdict::pass, "present", ""});
    checks.push_back(memlock_fail(host));
    checks.push_back(chrony_warn(host));
  }
  checks.push_back({"node07", "", "open-mpi", Verdict::fail, "mpirun not found", "apt-get install openmpi-bin"});
  EXPECT_EQ(format_problems(checks),
            "WHO          CHECK     VERDICT  OBSERVED\n"
            "node[01-64]  memlock   FAIL     64 KiB (RDMA registration needs unlimited)\n"
            "             fix: add `* - memlock unlimited` to /etc/security/limits.conf and log in again\n"
            "node[01-64]  clock     WARN     +0.700 s from the control node\n"
            "             fix: `systemctl enable --now chrony` on node[01-64]\n"
            "node07       open-mpi  FAIL     mpirun not found\n"
            "             fix: apt-get install openmpi-bin\n");
}

TEST(FabricReport, NamesInsideLongerNamesAreNotTakenForTheHost) {
  // h1's fix names h10: only the whole word h1 is the subject's own name.
  std::vector<Check> checks{{"h1", "", "clock", Verdict::warn, "not measured", "compare with h10 on h1"},
                            {"h2", "", "clock", Verdict::warn, "not measured", "compare with h10 on h2"}};
  auto groups = group_problems(checks);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].hosts, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(groups[0].fix, "compare with h10 on h[1-2]");
}

TEST(FabricReport, DifferentFiguresAreOneProblemShowingTheFirst) {
  std::vector<Check> checks{chrony_warn("h01"), chrony_warn("h02"), chrony_warn("h03")};
  checks[1].observed = "+0.900 s from the control node";
  auto groups = group_problems(checks);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].observed, "h01: +0.700 s from the control node (1 others differ: --all)");
  checks[1].observed = "not measured";
  EXPECT_EQ(group_problems(checks).size(), 2u);
}

TEST(FabricReport, OutliersOfManyPairsAreOneRow) {
  std::vector<Check> checks;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"h01", "h04"}, {"h01", "h05"}, {"h03", "h09"}})
    checks.push_back({"", from + " -> " + to, "latency", Verdict::warn,
                      from == "h03" ? "11595.00 us, median 1086.65 us" : "2933.77 us, median 1086.65 us",
                      "compare the path with the other pairs: `ip route get` and `ethtool` on " + from + " and " + to});
  EXPECT_EQ(format_problems(checks),
            "WHO   CHECK    VERDICT  OBSERVED\n"
            "h01 -> h[04-05]; h03 -> h09\n"
            "      latency  WARN     h01 -> h04: 2933.77 us, median 1086.65 us (1 others differ: --all)\n"
            "      fix: compare the path with the other pairs: `ip route get` and `ethtool` on h[01,03] and\n"
            "           h[04-05,09]\n");
}

TEST(FabricReport, PairsFoldBySenderThenByPeers) {
  EXPECT_EQ(fold_pairs({{"h02", "h03"}}), "h02 -> h03");
  EXPECT_EQ(fold_pairs({{"h01", "h04"}, {"h02", "h04"}, {"h03", "h04"}}), "h[01-03] -> h04");
  EXPECT_EQ(fold_pairs({{"h01", "h02"}, {"h01", "h03"}, {"h04", "h05"}}), "h01 -> h[02-03]; h04 -> h05");
  std::vector<std::pair<std::string, std::string>> every;
  for (const auto& a : names("h", 1, 4))
    for (const auto& b : names("h", 1, 4))
      if (a != b) every.emplace_back(a, b);
  EXPECT_EQ(fold_pairs(every), "h[01-04] (every pair)");
}

TEST(FabricReport, PairProblemsFoldWithTheirFixNamingTheSets) {
  std::vector<Check> checks{ssh_fail("h01", "h04"), ssh_fail("h02", "h04"), ssh_fail("h03", "h04"),
                            {"", "h04 -> h01", "ssh", Verdict::pass, "connected in 0.2 ms", ""}};
  EXPECT_EQ(format_problems(checks),
            "WHO              CHECK  VERDICT  OBSERVED\n"
            "h[01-03] -> h04  ssh    FAIL     port 22: timed out after 2 s\n"
            "                 fix: allow TCP port 22 from h[01-03] to h04 (security group, firewall)\n");
}

TEST(FabricReport, SubjectsTooLongForTheColumnGetLinesOfTheirOwn) {
  std::vector<Check> checks;
  std::vector<std::string> hosts;
  for (int i = 1; i <= 40; i += 2) hosts.push_back(names("node", i, i)[0]);  // every other: no range folds
  for (const auto& host : hosts) checks.push_back(memlock_fail(host));
  auto text = format_problems(checks, 60);
  EXPECT_LE(widest_line(text), 60u) << text;
  EXPECT_EQ(text,
            "WHO   CHECK    VERDICT  OBSERVED\n"
            "node[01,03,05,07,09,11,13,15,17,19,21,23,25,27,29,31,33,35],\n"
            "node[37,39]\n"
            "      memlock  FAIL     64 KiB (RDMA registration needs\n"
            "                        unlimited)\n"
            "      fix: add `* - memlock unlimited` to\n"
            "           /etc/security/limits.conf and log in again\n");
}

TEST(FabricReport, LongObservationsAndFixesWrapAtSpacesAndCommas) {
  std::vector<Check> checks{{"h01", "", "provider", Verdict::fail,
                             "no FI_EP_RDM endpoint; providers: psm2,psm,ofi_rxm,ofi_rxd,shm,udp,tcp,sockets",
                             "install the eRDMA driver and rdma-core, then `fi_info -p 'verbs;ofi_rxm' -t FI_EP_RDM`"}};
  EXPECT_EQ(format_problems(checks, 50),
            "WHO   CHECK     VERDICT  OBSERVED\n"
            "h01   provider  FAIL     no FI_EP_RDM endpoint;\n"
            "                         providers:\n"
            "                         psm2,psm,ofi_rxm,ofi_rxd,\n"
            "                         shm,udp,tcp,sockets\n"
            "      fix: install the eRDMA driver and rdma-core,\n"
            "           then `fi_info -p 'verbs;ofi_rxm' -t\n"
            "           FI_EP_RDM`\n");
}

TEST(FabricReport, FoldedHostLinesGiveTheWholeSetBack) {
  auto lines = fold_host_lines(names("h", 1, 3), 100);
  EXPECT_EQ(lines, (std::vector<std::string>{"h[01-03]"}));
  lines = fold_host_lines({"a01", "b02", "c03"}, 8);
  EXPECT_EQ(lines, (std::vector<std::string>{"a01,b02,", "c03"}));
}

TEST(FabricReport, NoProblemsNoTable) {
  EXPECT_EQ(format_problems({{"h01", "", "numactl", Verdict::pass, "present", ""}}), "");
}

TEST(FabricReport, SummaryCountsVerdictsHostsAndPairs) {
  std::vector<Check> checks{memlock_fail("h01"), chrony_warn("h01"), {"h02", "", "numactl", Verdict::pass, "present", ""}};
  EXPECT_EQ(summary_line(checks, 2, 2), "2 hosts, 2 pairs: 1 PASS, 1 WARN, 1 FAIL");
  EXPECT_EQ(summary_line(checks, 1, 0), "1 host, no pairs: 1 PASS, 1 WARN, 1 FAIL");
}

const LoadedLibfabric kSystem{"1.17.0", "/lib/x86_64-linux-gnu/libfabric.so.1"};
const LoadedLibfabric kEfa{"1.18.2amzn1.0", "/opt/amazon/efa/lib64/libfabric.so.1"};

TEST(FabricReport, OneLibfabricOnEveryHostIsOneLine) {
  LoadedByHost loaded{{"h01", kSystem}, {"h02", kSystem}, {"h03", kSystem}};
  EXPECT_EQ(format_measured_libfabric(loaded, 3), "libfabric measured: 1.17.0 (/lib/x86_64-linux-gnu/libfabric.so.1)\n");
  // A host whose worker never ran is not counted as measured.
  EXPECT_EQ(format_measured_libfabric(loaded, 4),
            "libfabric measured: 1.17.0 (/lib/x86_64-linux-gnu/libfabric.so.1) on h[01-03]\n");
  EXPECT_EQ(format_measured_libfabric({}, 4), "");
}

TEST(FabricReport, DifferentLibfabricsAreALineEachWithTheirHosts) {
  LoadedByHost loaded{{"h01", kSystem}, {"h02", kEfa}, {"h03", kSystem}, {"h04", kSystem}};
  EXPECT_EQ(format_measured_libfabric(loaded, 4),
            "libfabric measured: 1.17.0 (/lib/x86_64-linux-gnu/libfabric.so.1) on h[01,03-04]\n"
            "libfabric measured: 1.18.2amzn1.0 (/opt/amazon/efa/lib64/libfabric.so.1) on h02\n");
}

TEST(FabricReport, ManyHostsOfOneLibfabricFoldWithinTheWidth) {
  LoadedByHost loaded;
  for (int i = 1; i <= 40; i += 2)  // every other host: no range to fold into
    loaded.push_back({names("node", i, i).front(), kSystem});
  loaded.push_back({"a00", kEfa});
  auto text = format_measured_libfabric(loaded, 41);
  EXPECT_LE(widest_line(text), kFabricReportWidth) << text;
  EXPECT_EQ(text.rfind("libfabric measured: 1.17.0 (/lib/x86_64-linux-gnu/libfabric.so.1) on node[01,03,", 0), 0u)
      << text;
  EXPECT_NE(text.find("\n    node[") , std::string::npos) << "continuation lines indented: " << text;
  EXPECT_NE(text.find(",39]\nlibfabric measured: 1.18.2amzn1.0 (/opt/amazon/efa/lib64/libfabric.so.1) on a00\n"),
            std::string::npos)
      << text;
}

TEST(FabricReport, MeasuredLibfabricReplacesTheProbesWordInTheHostRow) {
  std::vector<Check> checks{{"h01", "", "libfabric", Verdict::pass, "1.17.0", ""},
                            {"h02", "", "libfabric", Verdict::pass, "1.18.2amzn1.0, EFA's in /opt/amazon/efa/lib64", ""},
                            {"h03", "", "libfabric", Verdict::pass, "1.17.0", ""},
                            {"", "h01 -> h02", "libfabric", Verdict::pass, "12.0 us at 8 B", ""}};
  note_measured_libfabric(checks, {{"h01", kSystem}, {"h02", kEfa}});
  EXPECT_EQ(checks[0].observed, "1.17.0 (/lib/x86_64-linux-gnu/libfabric.so.1)");
  EXPECT_EQ(checks[1].observed, "1.18.2amzn1.0 (/opt/amazon/efa/lib64/libfabric.so.1)");
  EXPECT_EQ(checks[2].observed, "1.17.0");  // its worker never ran: the probe's word stays
  EXPECT_EQ(checks[3].observed, "12.0 us at 8 B");
}

PairMatrix latency_matrix(std::size_t n) {
  PairMatrix m{"latency, 8 B, one way (us; row: from, column: to)", names("node", 1, static_cast<int>(n)), {}, false, {}, 0};
  m.values.assign(n, std::vector<std::optional<double>>(n));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c)
      if (r != c) m.values[r][c] = 10.0 + static_cast<double>((r + c) % 3);
  return m;
}

TEST(FabricReport, SmallMatrixStaysFull) {
  auto m = latency_matrix(3);
  flag_outliers(m);
  EXPECT_EQ(format_matrix_for_width(m, 1), format_matrix(m, 1));
}

TEST(FabricReport, PastSixteenHostsEachHostIsOneRow) {
  auto m = latency_matrix(24);
  m.values[2][5] = 95.0;  // one slow path
  m.values[3][0] = std::nullopt;  // and one pair that gave no figure
  m.values[3][1] = std::nullopt;
  flag_outliers(m);
  auto text = format_matrix_for_width(m, 1);
  EXPECT_EQ(text, format_matrix_per_host(m, 1));
  EXPECT_LE(widest_line(text), kFabricReportWidth);
  std::istringstream lines(text);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 26u);  // title, header, 24 hosts
  EXPECT_EQ(rows[0], "latency, 8 B, one way (us; per host, to the other hosts)");
  EXPECT_EQ(rows[1], "from     min  median   max  worst to");
  EXPECT_EQ(rows[2], "node01  10.0    11.0  12.0  node03 12.0");
  EXPECT_EQ(rows[4], "node03  10.0    11.0  95.0  node06 95.0 !");
  EXPECT_EQ(rows[5], "node04  10.0    11.0  12.0  no figure: node[01-02]");
}

TEST(FabricReport, BandwidthWorstIsTheLowest) {
  PairMatrix m{"bandwidth, 1 MiB ping-pong (GB/s; row: from, column: to)", names("h", 1, 20), {}, true, {}, 0};
  m.values.assign(20, std::vector<std::optional<double>>(20));
  for (std::size_t r = 0; r < 20; ++r)
    for (std::size_t c = 0; c < 20; ++c)
      if (r != c) m.values[r][c] = 2.0;
  m.values[0][7] = 0.5;
  flag_outliers(m);
  auto text = format_matrix_for_width(m, 2);
  EXPECT_NE(text.find("\nh01   0.50    2.00  2.00  h08 0.50 !\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nh02   2.00    2.00  2.00  h01 2.00\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace xft::fabric
