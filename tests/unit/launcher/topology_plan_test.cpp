// Rank plans on recorded topologies, each with the exact numactl lines.
#include <gtest/gtest.h>

#include "launcher/topology.h"
#include "tests/unit/support/test_paths.h"

namespace xft::launcher {
namespace {

HostFacts facts_of(const std::string& tree) {
  auto facts = probe_local_facts(xft::test::data_dir() + "/sysfs/" + tree, tree);
  EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
  return facts.ok() ? *facts : HostFacts{};
}

PlanHost host(const std::string& name, const std::string& tree, const std::string& ranks,
              const std::string& iface = "") {
  PlanHost h;
  h.name = name;
  h.address = "10.0.0." + std::to_string(name.back() - '0' + 10);
  h.ranks = *parse_ranks(ranks);
  h.fabric_iface = iface;
  h.fabric_provider = "tcp;ofi_rxm";
  h.facts = facts_of(tree);
  return h;
}

// "numactl -C ... -m ..." per rank.
std::vector<std::string> bindings(const std::vector<RankPlacement>& ranks) {
  std::vector<std::string> out;
  for (const auto& r : ranks) {
    std::string line;
    for (const auto& t : r.numactl_tokens()) line += (line.empty() ? "" : " ") + t;
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> plan(const PlanHost& h, PlanOptions options = {}) {
  auto placements = plan_host(h, options);
  EXPECT_TRUE(placements.ok()) << (placements.ok() ? "" : placements.error().message);
  return placements.ok() ? bindings(*placements) : std::vector<std::string>{};
}

std::string every_second(int from, int to) {
  std::string s;
  for (int i = from; i <= to; i += 2) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

TEST(Plan, CloudVmBindsEverySecondCpu) {
  auto h = host("vm1", "cloud-96vcpu", "1");
  EXPECT_EQ(plan(h), (std::vector<std::string>{"numactl -C " + every_second(0, 94) + " -m 0"}));
  auto placements = plan_host(h, {});
  EXPECT_EQ((*placements)[0].omp_threads(), 48);
  EXPECT_EQ((*placements)[0].numa_node, 0);
}

// Allreduce runs on the compute threads, so every bound core runs one.
TEST(Plan, CloudVmTwoRanksEveryBoundCoreComputes) {
  auto placements = plan_host(host("vm1", "cloud-96vcpu", "2"), {});
  ASSERT_TRUE(placements.ok());
  EXPECT_EQ(bindings(*placements), (std::vector<std::string>{
                                        "numactl -C " + every_second(0, 46) + " -m 0",
                                        "numactl -C " + every_second(48, 94) + " -m 0",
                                    }));
  EXPECT_EQ((*placements)[1].omp_threads(), 24);
  EXPECT_EQ(format_cpu_list((*placements)[1].cpus), every_second(48, 94));
}

TEST(Plan, CloudVmWithSmtUsesSiblings) {
  PlanOptions o;
  o.smt = true;
  EXPECT_EQ(plan(host("vm1", "cloud-96vcpu", "2"), o),
            (std::vector<std::string>{"numactl -C 0-47 -m 0", "numactl -C 48-95 -m 0"}));
}

TEST(Plan, SprSnc2PerNuma) {
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "per-numa")), (std::vector<std::string>{
                                                                 "numactl -C 0-27 -m 0",
                                                                 "numactl -C 28-55 -m 1",
                                                                 "numactl -C 56-83 -m 2",
                                                                 "numactl -C 84-111 -m 3",
                                                             }));
}

TEST(Plan, SprSnc2PerSocketSpansTheSocketsTwoNodes) {
  std::vector<std::string> expected = {"numactl -C 0-55 -m 0-1", "numactl -C 56-111 -m 2-3"};
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "per-socket")), expected);
  // Two equal ranks do not fit one SNC node: each spans the two nodes of one socket.
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "2")), expected);
}

TEST(Plan, SprSnc2SmtPerNumaTakesSiblingsFarApart) {
  PlanOptions o;
  o.smt = true;
  auto lines = plan(host("spr1", "spr-2s-snc2", "per-numa"), o);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "numactl -C 0-27,112-139 -m 0");
  EXPECT_EQ(lines[3], "numactl -C 84-111,196-223 -m 3");
}

TEST(Plan, CappedRankGoesNearestTheFabricNic) {
  PlanOptions o;
  o.cores_per_rank = 16;
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "1", "ens5f0"), o),
            (std::vector<std::string>{"numactl -C 56-71 -m 2"}));
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "1", "eno1"), o),
            (std::vector<std::string>{"numactl -C 0-15 -m 0"}));
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "1"), o), (std::vector<std::string>{"numactl -C 0-15 -m 0"}));
  // The second capped rank no longer fits the NIC's node (12 cores left): it goes
  // whole to the nearest other node, the other SNC half of the same socket.
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "2", "ens5f0"), o),
            (std::vector<std::string>{"numactl -C 56-71 -m 2", "numactl -C 84-99 -m 3"}));
  o.cores_per_rank = 14;
  EXPECT_EQ(plan(host("spr1", "spr-2s-snc2", "2", "ens5f0"), o),
            (std::vector<std::string>{"numactl -C 56-69 -m 2", "numactl -C 70-83 -m 2"}));
}

TEST(Plan, FourSocketHost) {
  EXPECT_EQ(plan(host("q1", "xeon-4s", "per-socket")), (std::vector<std::string>{
                                                           "numactl -C 0-23 -m 0",
                                                           "numactl -C 24-47 -m 1",
                                                           "numactl -C 48-71 -m 2",
                                                           "numactl -C 72-95 -m 3",
                                                       }));
  EXPECT_EQ(plan(host("q1", "xeon-4s", "2")),
            (std::vector<std::string>{"numactl -C 0-47 -m 0-1", "numactl -C 48-95 -m 2-3"}));
  EXPECT_EQ(plan(host("q1", "xeon-4s", "8")), (std::vector<std::string>{
                                                  "numactl -C 0-11 -m 0",
                                                  "numactl -C 12-23 -m 0",
                                                  "numactl -C 24-35 -m 1",
                                                  "numactl -C 36-47 -m 1",
                                                  "numactl -C 48-59 -m 2",
                                                  "numactl -C 60-71 -m 2",
                                                  "numactl -C 72-83 -m 3",
                                                  "numactl -C 84-95 -m 3",
                                              }));
}

TEST(Plan, FourSocketOneCappedRankOnTheNicSocket) {
  PlanOptions o;
  o.cores_per_rank = 8;
  EXPECT_EQ(plan(host("q1", "xeon-4s", "1", "ens1f0"), o), (std::vector<std::string>{"numactl -C 72-79 -m 3"}));
}

TEST(Plan, MemorylessNodeBindsMemoryToTheNearestNodeWithMemory) {
  // Node 1 has CPUs but no memory; node 2 (distance 12) is nearer than node 0 (20).
  EXPECT_EQ(plan(host("m1", "memoryless-node", "per-numa")), (std::vector<std::string>{
                                                                  "numactl -C 0-7 -m 0",
                                                                  "numactl -C 8-15 -m 2",
                                                                  "numactl -C 16-31 -m 2",
                                                              }));
  auto placements = plan_host(host("m1", "memoryless-node", "per-numa"), {});
  EXPECT_EQ((*placements)[1].numa_node, 1);
  EXPECT_EQ((*placements)[1].memory_nodes, (std::vector<int>{2}));
}

TEST(Plan, CpusetAllowsOnlyPartOfTheCpus) {
  // Allowed 4-11,20-28; core 12 is usable only through its sibling 28; CPU 31 is offline.
  EXPECT_EQ(plan(host("c1", "cpuset-partial", "1")), (std::vector<std::string>{"numactl -C 4-11,28 -m 0"}));
  PlanOptions smt;
  smt.smt = true;
  EXPECT_EQ(plan(host("c1", "cpuset-partial", "1"), smt),
            (std::vector<std::string>{"numactl -C 4-11,20-28 -m 0"}));
  EXPECT_EQ(plan(host("c1", "cpuset-partial", "2")),
            (std::vector<std::string>{"numactl -C 4-7 -m 0", "numactl -C 8-11 -m 0"}));
}

TEST(Plan, ThisMachineRecorded) {
  EXPECT_EQ(plan(host("me", "this-host-epyc-2cpu", "2")),
            (std::vector<std::string>{"numactl -C 0 -m 0", "numactl -C 1 -m 0"}));
}

TEST(Plan, MixedHostsInOnePlan) {
  PlanOptions o;
  std::vector<PlanHost> hosts = {host("h1", "cloud-96vcpu", "1"), host("h2", "spr-2s-snc2", "per-socket"),
                                 host("h3", "memoryless-node", "per-numa")};
  hosts[2].fabric_provider = "verbs;ofi_rxm";
  auto p = plan_ranks(hosts, o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->size(), 6);
  EXPECT_EQ(bindings(p->ranks), (std::vector<std::string>{
                                    "numactl -C " + every_second(0, 94) + " -m 0",
                                    "numactl -C 0-55 -m 0-1",
                                    "numactl -C 56-111 -m 2-3",
                                    "numactl -C 0-7 -m 0",
                                    "numactl -C 8-15 -m 2",
                                    "numactl -C 16-31 -m 2",
                                }));
  std::vector<std::string> hosts_of;
  std::vector<int> local;
  for (const auto& r : p->ranks) {
    hosts_of.push_back(r.host);
    local.push_back(r.local_rank);
  }
  EXPECT_EQ(hosts_of, (std::vector<std::string>{"h1", "h2", "h2", "h3", "h3", "h3"}));
  EXPECT_EQ(local, (std::vector<int>{0, 0, 1, 0, 1, 2}));
  EXPECT_EQ(p->transport(1, 2), "shm");
  EXPECT_EQ(p->transport(0, 1), "tcp;ofi_rxm");
  EXPECT_EQ(p->transport(3, 0), "verbs;ofi_rxm");
}

TEST(Plan, RankMapText) {
  PlanOptions o;
  o.cores_per_rank = 4;
  auto p = plan_ranks({host("h1", "cloud-96vcpu", "2"), host("h2", "xeon-4s", "1")}, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(format_rank_map(*p),
            "Rank map (2 hosts, 3 ranks)\n"
            "ID | Node name | IP        | Ranks\n"
            "0  | h1        | 10.0.0.11 | 0-1\n"
            "1  | h2        | 10.0.0.12 | 2\n"
            "\n"
            "Transport (rank to rank)\n"
            "   0            1            2\n"
            "0  -            shm          tcp;ofi_rxm\n"
            "1  shm          -            tcp;ofi_rxm\n"
            "2  tcp;ofi_rxm  tcp;ofi_rxm  -\n"
            "\n"
            "Bindings\n"
            "RANK  HOST  LOCAL  NUMA  OMP_NUM_THREADS  BINDING\n"
            "0     h1    0      0     4                numactl -C 0,2,4,6 -m 0\n"
            "1     h1    1      0     4                numactl -C 8,10,12,14 -m 0\n"
            "2     h2    0      0     4                numactl -C 0-3 -m 0\n");
}

TEST(Plan, JsonHasCpusPerRank) {
  auto p = plan_ranks({host("h1", "memoryless-node", "per-numa")}, {});
  ASSERT_TRUE(p.ok());
  auto j = plan_to_json(*p);
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_EQ(j["ranks"][1]["numa_node"], 1);
  EXPECT_EQ(j["ranks"][1]["memory_nodes"], nlohmann::json({2}));
  EXPECT_EQ(j["ranks"][1]["cpus"], nlohmann::json({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_FALSE(j["ranks"][1].contains("comm_cpus"));
  EXPECT_EQ(j["ranks"][1]["omp_num_threads"], 8);
  EXPECT_EQ(j["ranks"][1]["numactl"], "numactl -C 8-15 -m 2");
  EXPECT_EQ(j["transport"][0][1], "shm");
}

TEST(Plan, TooManyRanksIsAnError) {
  auto p = plan_host(host("h1", "this-host-epyc-2cpu", "3"), {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "host h1: 3 ranks need at least one core each, but only 2 usable (online, allowed) cores exist; lower ranks");
}

TEST(Plan, RanksText) {
  EXPECT_EQ(parse_ranks("per-socket")->kind, inventory::RanksKind::per_socket);
  EXPECT_EQ(parse_ranks("per-numa")->kind, inventory::RanksKind::per_numa);
  EXPECT_EQ(parse_ranks("4")->count, 4);
  ASSERT_FALSE(parse_ranks("4x").ok());
  EXPECT_EQ(parse_ranks("0").error().message,
            "ranks per host \"0\": expected a positive number, per-socket or per-numa");
}

}  // namespace
}  // namespace xft::launcher
