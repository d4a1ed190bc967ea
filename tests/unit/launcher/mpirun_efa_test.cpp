// Ranks on hosts with EFA's own libfabric load it: the exact mpirun tokens
// for EFA hosts, hosts without it, and hosts that disagree.
#include <gtest/gtest.h>

#include "launcher/mpirun.h"

namespace xft::launcher {
namespace {

RankPlacement rank(int id, const std::string& host, const std::string& address) {
  RankPlacement r;
  r.rank = id;
  r.host = host;
  r.address = address;
  r.cpus = {0, 1};
  r.memory_nodes = {0};
  return r;
}

PlanHost host(const std::string& name, const std::string& efa_dir, const std::string& ld_library_path) {
  PlanHost h;
  h.name = name;
  h.facts.efa_libfabric_dir = efa_dir;
  h.facts.ld_library_path = ld_library_path;
  return h;
}

RankPlan plan_of(std::vector<PlanHost> hosts) {
  RankPlan plan;
  for (const auto& h : hosts) {
    int id = static_cast<int>(plan.ranks.size());
    plan.ranks.push_back(rank(id, h.name, "10.9.0." + std::to_string(12 + id)));
  }
  plan.hosts = std::move(hosts);
  return plan;
}

MpirunSpec efa_spec() {
  MpirunSpec spec;
  spec.ssh = {"/root/.config/xftctl/id_ed25519", "/root/.config/xftctl/known_hosts", "root", 22};
  spec.ssh_agent_path = "/tmp/xftctl-launch.AbC123/mpirun-ssh";
  spec.provider = "efa";
  spec.command = {"/opt/xft/xftctl", "rank", "probe"};
  return spec;
}

const std::vector<std::string> kHead = {
    "mpirun", "--bind-to", "none", "--tag-output", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
    "--mca", "mtl_ofi_provider_include", "efa",
    "--mca", "plm_rsh_agent", "/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh",
    "--mca", "plm_rsh_no_tree_spawn", "1"};
const std::vector<std::string> kPreset = {"-x", "FI_PROVIDER=efa", "-x", "FI_EFA_USE_DEVICE_RDMA=1"};
const std::vector<std::string> kRank = {"numactl", "-C", "0-1", "-m", "0", "/opt/xft/xftctl", "rank", "probe"};

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(MpirunEfa, EachHostsRanksGetEfasLibfabricAheadOfTheirOwnLibraryPath) {
  auto tokens = build_mpirun_command(
      plan_of({host("h01", "/opt/amazon/efa/lib64", "/usr/local/cuda/lib64"), host("h02", "/opt/amazon/efa/lib64", "")}),
      efa_spec());
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(*tokens,
            concat({kHead,
                    {"-np", "1", "-H", "10.9.0.12:1", "-x", "OMP_NUM_THREADS=2", "-x",
                     "LD_LIBRARY_PATH=/opt/amazon/efa/lib64:/usr/local/cuda/lib64"},
                    kPreset, kRank, {":"},
                    {"-np", "1", "-H", "10.9.0.13:1", "-x", "OMP_NUM_THREADS=2", "-x",
                     "LD_LIBRARY_PATH=/opt/amazon/efa/lib64"},
                    kPreset, kRank}));
}

TEST(MpirunEfa, WithoutEfasLibfabricNoLibraryPathIsSet) {
  auto tokens = build_mpirun_command(plan_of({host("h01", "", ""), host("h02", "", "")}), efa_spec());
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(*tokens, concat({kHead, {"-np", "1", "-H", "10.9.0.12:1", "-x", "OMP_NUM_THREADS=2"}, kPreset, kRank,
                             {":"}, {"-np", "1", "-H", "10.9.0.13:1", "-x", "OMP_NUM_THREADS=2"}, kPreset, kRank}));
}

TEST(MpirunEfa, HostsWithAndWithoutEfasLibfabricAreRefused) {
  auto tokens = build_mpirun_command(
      plan_of({host("h01", "/opt/amazon/efa/lib64", ""), host("h02", "/opt/amazon/efa/lib64", ""),
               host("h03", "", "/usr/lib")}),
      efa_spec());
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.error().message,
            "hosts h01 and h03 differ in EFA's libfabric (/opt/amazon/efa/lib64 on h01, none on h03), so their "
            "ranks would load different libfabric builds: install aws-efa-installer on every host of the launch "
            "or on none, then --refresh the facts, or launch them separately");
}

TEST(MpirunEfa, HostsWithEfasLibfabricInDifferentDirectoriesAreRefused) {
  auto tokens = build_mpirun_command(
      plan_of({host("h01", "/opt/amazon/efa/lib64", ""), host("h02", "/opt/amazon/efa/lib", "")}), efa_spec());
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.error().message,
            "hosts h01 and h02 differ in EFA's libfabric (/opt/amazon/efa/lib64 on h01, /opt/amazon/efa/lib on "
            "h02), so their ranks would load different libfabric builds: install aws-efa-installer on every host "
            "of the launch or on none, then --refresh the facts, or launch them separately");
}

// The user's own -x LD_LIBRARY_PATH decides for every rank, agreeing or not.
TEST(MpirunEfa, MinusXLibraryPathReplacesEfasAndLiftsTheAgreement) {
  MpirunSpec spec = efa_spec();
  spec.env = {{"LD_LIBRARY_PATH", "/opt/mine"}};
  auto tokens = build_mpirun_command(plan_of({host("h01", "/opt/amazon/efa/lib64", ""), host("h02", "", "")}), spec);
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(*tokens, concat({kHead, {"-np", "1", "-H", "10.9.0.12:1", "-x", "OMP_NUM_THREADS=2", "-x",
                                     "LD_LIBRARY_PATH=/opt/mine"},
                             kPreset, kRank, {":"},
                             {"-np", "1", "-H", "10.9.0.13:1", "-x", "OMP_NUM_THREADS=2"}, kPreset,
                             {"-x", "LD_LIBRARY_PATH=/opt/mine"}, kRank}));
}

}  // namespace
}  // namespace xft::launcher
