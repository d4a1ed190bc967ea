// The mpirun command line, token by token (Open MPI 4.1 and 5.x syntax).
#include <gtest/gtest.h>

#include "launcher/mpirun.h"

namespace xft::launcher {
namespace {

RankPlacement rank(int id, const std::string& host, const std::string& address, std::vector<int> cpus,
                   std::vector<int> comm, std::vector<int> mem) {
  RankPlacement r;
  r.rank = id;
  r.host = host;
  r.address = address;
  r.cpus = std::move(cpus);
  r.comm_cpus = std::move(comm);
  r.memory_nodes = std::move(mem);
  return r;
}

RankPlan two_hosts() {
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0, 2, 4}, {6}, {0}), rank(1, "h01", "10.9.0.11", {8, 10, 12}, {14}, {0}),
                rank(2, "h02", "10.9.0.12", {0, 1, 2, 3}, {}, {0, 1})};
  return plan;
}

MpirunSpec tcp_spec() {
  MpirunSpec spec;
  spec.as_root = true;
  spec.ssh = {"/root/.config/xftctl/id_ed25519", "/root/.config/xftctl/known_hosts", "root", 22};
  spec.provider = "tcp;ofi_rxm";
  spec.iface = "eth1";
  spec.oob_subnet = "10.9.0.0/24";
  spec.command = {"/opt/xft/xftctl", "rank", "probe"};
  return spec;
}

TEST(Mpirun, OpenMpi41TcpTokens) {
  auto tokens = build_mpirun_command(two_hosts(), tcp_spec());
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  std::vector<std::string> expected = {
      "mpirun", "--allow-run-as-root", "--bind-to", "none", "--tag-output",
      "--mca", "pml", "ob1",
      "--mca", "btl", "self,vader,tcp",
      "--mca", "btl_tcp_if_include", "eth1",
      "--mca", "oob_tcp_if_include", "10.9.0.0/24",
      "--mca", "plm_rsh_agent",
      "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/root/.config/xftctl/known_hosts "
      "-o IdentitiesOnly=yes -i /root/.config/xftctl/id_ed25519 -l root",
      "--mca", "plm_rsh_no_tree_spawn", "1",
      "-np", "1", "-H", "10.9.0.11:2", "-x", "OMP_NUM_THREADS=3", "-x", "XFT_COMM_CPUS=6",
      "-x", "FI_PROVIDER=tcp;ofi_rxm", "-x", "FI_TCP_IFACE=eth1",
      "numactl", "-C", "0,2,4,6", "-m", "0", "/opt/xft/xftctl", "rank", "probe",
      ":",
      "-np", "1", "-H", "10.9.0.11:2", "-x", "OMP_NUM_THREADS=3", "-x", "XFT_COMM_CPUS=14",
      "-x", "FI_PROVIDER=tcp;ofi_rxm", "-x", "FI_TCP_IFACE=eth1",
      "numactl", "-C", "8,10,12,14", "-m", "0", "/opt/xft/xftctl", "rank", "probe",
      ":",
      "-np", "1", "-H", "10.9.0.12:1", "-x", "OMP_NUM_THREADS=4",
      "-x", "FI_PROVIDER=tcp;ofi_rxm", "-x", "FI_TCP_IFACE=eth1",
      "numactl", "-C", "0-3", "-m", "0-1", "/opt/xft/xftctl", "rank", "probe",
  };
  EXPECT_EQ(*tokens, expected);
}

TEST(Mpirun, ErdmaVerbsPreset) {
  MpirunSpec spec = tcp_spec();
  spec.provider = "verbs;ofi_rxm";
  spec.as_root = false;
  spec.ssh.user = "";
  spec.ssh.port = 2222;
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0}, {}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok());
  std::vector<std::string> expected = {
      "mpirun", "--bind-to", "none", "--tag-output",
      "--mca", "pml", "cm", "--mca", "mtl", "ofi",
      "--mca", "oob_tcp_if_include", "10.9.0.0/24",
      "--mca", "plm_rsh_agent",
      "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/root/.config/xftctl/known_hosts "
      "-o IdentitiesOnly=yes -i /root/.config/xftctl/id_ed25519 -p 2222",
      "--mca", "plm_rsh_no_tree_spawn", "1",
      "-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=1",
      "-x", "FI_PROVIDER=verbs;ofi_rxm", "-x", "FI_OFI_RXM_USE_SRX=0", "-x", "FI_VERBS_RX_IOV_LIMIT=1",
      "-x", "FI_VERBS_IFACE=eth1",
      "numactl", "-C", "0", "-m", "0", "/opt/xft/xftctl", "rank", "probe",
  };
  EXPECT_EQ(*tokens, expected);
}

TEST(Mpirun, EfaPresetEnvironment) {
  MpirunSpec spec = tcp_spec();
  spec.provider = "efa";
  EXPECT_EQ(fabric_env(spec), (std::vector<std::pair<std::string, std::string>>{
                                  {"FI_PROVIDER", "efa"}, {"FI_EFA_USE_DEVICE_RDMA", "1"}}));
  EXPECT_EQ(fabric_kind("efa"), FabricKind::efa);
  EXPECT_EQ(fabric_kind("verbs;ofi_rxm"), FabricKind::verbs);
  EXPECT_EQ(fabric_kind("tcp;ofi_rxm"), FabricKind::tcp);
  EXPECT_EQ(fabric_kind("shm"), FabricKind::tcp);
}

TEST(Mpirun, OpenMpi5Syntax) {
  MpirunSpec spec = tcp_spec();
  spec.mpi_major = 5;
  spec.iface = "";
  spec.env = {{"XFT_LOG", "debug"}};
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0, 1}, {}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok());
  std::vector<std::string> expected = {
      "mpirun", "--allow-run-as-root", "--bind-to", "none", "--output", "tag",
      "--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp",
      "--mca", "btl_tcp_if_include", "10.9.0.0/24",
      "--mca", "oob_tcp_if_include", "10.9.0.0/24",
      "--prtemca", "plm_ssh_agent",
      "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/root/.config/xftctl/known_hosts "
      "-o IdentitiesOnly=yes -i /root/.config/xftctl/id_ed25519 -l root",
      "--prtemca", "plm_ssh_no_tree_spawn", "1",
      "-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=2", "-x", "FI_PROVIDER=tcp;ofi_rxm",
      "-x", "XFT_LOG=debug",
      "numactl", "-C", "0-1", "-m", "0", "/opt/xft/xftctl", "rank", "probe",
  };
  EXPECT_EQ(*tokens, expected);
}

TEST(Mpirun, LocalOnlyHasNoSshAgentAndStaysOnLoopback) {
  MpirunSpec spec;
  spec.local_only = true;
  spec.provider = "shm";
  spec.command = {"true"};
  RankPlan plan;
  plan.ranks = {rank(0, "vm", "localhost", {0}, {}, {0}), rank(1, "vm", "localhost", {1}, {}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(shell_join(*tokens),
            "mpirun --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include lo "
            "--mca oob_tcp_if_include lo "
            "-np 1 -H localhost:2 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=shm numactl -C 0 -m 0 true : "
            "-np 1 -H localhost:2 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=shm numactl -C 1 -m 0 true");
}

TEST(Mpirun, Errors) {
  MpirunSpec spec = tcp_spec();
  EXPECT_EQ(build_mpirun_command(RankPlan{}, spec).error().message, "the rank plan has no ranks");
  spec.command.clear();
  EXPECT_EQ(build_mpirun_command(two_hosts(), spec).error().message, "no command to launch: give it after --");
}

TEST(Mpirun, ShellJoinQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_join({"-x", "FI_PROVIDER=verbs;ofi_rxm", "a b", "it's", "0-3,8"}),
            "-x 'FI_PROVIDER=verbs;ofi_rxm' 'a b' 'it'\\''s' 0-3,8");
}

TEST(Mpirun, VersionParsing) {
  EXPECT_EQ(parse_open_mpi_major("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/"), 4);
  EXPECT_EQ(parse_open_mpi_major("mpirun (Open MPI) 5.0.3\n"), 5);
  EXPECT_EQ(parse_open_mpi_major("HYDRA build details:\n    Version: 4.0.2\n"), 0);
}

}  // namespace
}  // namespace xft::launcher
