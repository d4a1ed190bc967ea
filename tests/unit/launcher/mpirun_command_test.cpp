// The mpirun command line, token by token (Open MPI 4.1 and 5.x syntax), and
// the ssh agent script mpirun runs: its exact text, and what ssh receives when
// it runs (a stub ssh on PATH prints its argv).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "launcher/mpirun.h"
#include "tests/unit/support/files.h"

namespace xft::launcher {
namespace {

RankPlacement rank(int id, const std::string& host, const std::string& address, std::vector<int> cpus,
                   std::vector<int> mem) {
  RankPlacement r;
  r.rank = id;
  r.host = host;
  r.address = address;
  r.cpus = std::move(cpus);
  r.memory_nodes = std::move(mem);
  return r;
}

RankPlan two_hosts() {
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0, 2, 4, 6}, {0}), rank(1, "h01", "10.9.0.11", {8, 10, 12, 14}, {0}),
                rank(2, "h02", "10.9.0.12", {0, 1, 2, 3}, {0, 1})};
  return plan;
}

MpirunSpec tcp_spec() {
  MpirunSpec spec;
  spec.as_root = true;
  spec.ssh = {"/root/.config/xftctl/id_ed25519", "/root/.config/xftctl/known_hosts", "root", 22};
  spec.ssh_agent_path = "/tmp/xftctl-launch.AbC123/mpirun-ssh";
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
      "--mca", "plm_rsh_agent", "/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh",
      "--mca", "plm_rsh_no_tree_spawn", "1",
      "-np", "1", "-H", "10.9.0.11:2", "-x", "OMP_NUM_THREADS=4",
      "-x", "FI_PROVIDER=tcp;ofi_rxm", "-x", "FI_TCP_IFACE=eth1",
      "numactl", "-C", "0,2,4,6", "-m", "0", "/opt/xft/xftctl", "rank", "probe",
      ":",
      "-np", "1", "-H", "10.9.0.11:2", "-x", "OMP_NUM_THREADS=4",
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
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok());
  std::vector<std::string> expected = {
      "mpirun", "--bind-to", "none", "--tag-output",
      "--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "verbs",
      "--mca", "oob_tcp_if_include", "10.9.0.0/24",
      "--mca", "plm_rsh_agent", "/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh",
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
  EXPECT_EQ(fabric_kind("sockets"), FabricKind::tcp);
  EXPECT_EQ(fabric_kind("tcp"), FabricKind::tcp);
  EXPECT_EQ(fabric_kind("psm3"), FabricKind::psm3);
  EXPECT_EQ(fabric_kind("cxi"), FabricKind::ofi);
  EXPECT_EQ(first_provider("verbs;ofi_rxm"), "verbs");
  EXPECT_EQ(first_provider("psm3,tcp"), "psm3");
  EXPECT_EQ(first_provider("^psm3,verbs;ofi_rxm"), "verbs");
  EXPECT_EQ(fabric_kind("^psm3,tcp;ofi_rxm"), FabricKind::tcp);
}

// One host whose inventory sets fabric.env, and a -x value that replaces one
// of the preset's: the tokens of one rank for each provider.
std::vector<std::string> one_rank_line(const std::string& provider) {
  MpirunSpec spec = tcp_spec();
  spec.provider = provider;
  spec.as_root = false;
  spec.env = {{"XFT_LOG", "debug"}, {"FI_EFA_USE_DEVICE_RDMA", "0"}};
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0}, {0})};
  PlanHost host;
  host.name = "h01";
  host.fabric_env = {{"PSM3_IDENTIFY", "1"}, {"FI_PROVIDER_PATH", "/opt/psm3/lib"}};
  plan.hosts = {host};
  auto tokens = build_mpirun_command(plan, spec);
  EXPECT_TRUE(tokens.ok()) << tokens.error().message;
  return tokens ? *tokens : std::vector<std::string>{};
}

const std::vector<std::string> kAgent = {"--mca", "oob_tcp_if_include", "10.9.0.0/24",
                                         "--mca", "plm_rsh_agent", "/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh",
                                         "--mca", "plm_rsh_no_tree_spawn", "1"};
const std::vector<std::string> kInventoryEnv = {"-x", "PSM3_IDENTIFY=1", "-x", "FI_PROVIDER_PATH=/opt/psm3/lib",
                                                "-x", "XFT_LOG=debug"};
const std::vector<std::string> kRank = {"numactl", "-C", "0", "-m", "0", "/opt/xft/xftctl", "rank", "probe"};

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(MpirunProvider, Psm3UsesTheOfiMtlOnPsm3) {
  EXPECT_EQ(one_rank_line("psm3"),
            concat({{"mpirun", "--bind-to", "none", "--tag-output", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
                     "--mca", "mtl_ofi_provider_include", "psm3"},
                    kAgent,
                    {"-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=1", "-x", "FI_PROVIDER=psm3"},
                    kInventoryEnv,
                    {"-x", "FI_EFA_USE_DEVICE_RDMA=0"},
                    kRank}));
}

TEST(MpirunProvider, VerbsRxmUsesTheOfiMtlOnVerbs) {
  EXPECT_EQ(one_rank_line("verbs;ofi_rxm"),
            concat({{"mpirun", "--bind-to", "none", "--tag-output", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
                     "--mca", "mtl_ofi_provider_include", "verbs"},
                    kAgent,
                    {"-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=1", "-x", "FI_PROVIDER=verbs;ofi_rxm",
                     "-x", "FI_OFI_RXM_USE_SRX=0", "-x", "FI_VERBS_RX_IOV_LIMIT=1", "-x", "FI_VERBS_IFACE=eth1"},
                    kInventoryEnv,
                    {"-x", "FI_EFA_USE_DEVICE_RDMA=0"},
                    kRank}));
}

TEST(MpirunProvider, EfaUsesTheOfiMtlOnEfaAndMinusXReplacesThePreset) {
  EXPECT_EQ(one_rank_line("efa"),
            concat({{"mpirun", "--bind-to", "none", "--tag-output", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
                     "--mca", "mtl_ofi_provider_include", "efa"},
                    kAgent,
                    {"-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=1", "-x", "FI_PROVIDER=efa", "-x",
                     "FI_EFA_USE_DEVICE_RDMA=0"},
                    kInventoryEnv,
                    kRank}));
}

TEST(MpirunProvider, TcpStaysOnOpenMpisTcpTransport) {
  EXPECT_EQ(one_rank_line("tcp"),
            concat({{"mpirun", "--bind-to", "none", "--tag-output", "--mca", "pml", "ob1", "--mca", "btl",
                     "self,vader,tcp", "--mca", "btl_tcp_if_include", "eth1"},
                    kAgent,
                    {"-np", "1", "-H", "10.9.0.11:1", "-x", "OMP_NUM_THREADS=1", "-x", "FI_PROVIDER=tcp", "-x",
                     "FI_TCP_IFACE=eth1"},
                    kInventoryEnv,
                    {"-x", "FI_EFA_USE_DEVICE_RDMA=0"},
                    kRank}));
}

TEST(MpirunProvider, AnEnvNameThatIsNoVariableIsRefused) {
  MpirunSpec spec = tcp_spec();
  spec.env = {{"1A", "x"}};
  auto tokens = build_mpirun_command(two_hosts(), spec);
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.error().message, "cannot pass -x 1A=x: 1A is not a variable name");
}

TEST(Mpirun, OpenMpi5Syntax) {
  MpirunSpec spec = tcp_spec();
  spec.mpi_major = 5;
  spec.iface = "";
  spec.env = {{"XFT_LOG", "debug"}};
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0, 1}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok());
  std::vector<std::string> expected = {
      "mpirun", "--allow-run-as-root", "--bind-to", "none", "--output", "tag",
      "--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp",
      "--mca", "btl_tcp_if_include", "10.9.0.0/24",
      "--mca", "oob_tcp_if_include", "10.9.0.0/24",
      "--prtemca", "plm_ssh_agent", "/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh",
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
  plan.ranks = {rank(0, "vm", "localhost", {0}, {0}), rank(1, "vm", "localhost", {1}, {0})};
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
  spec = tcp_spec();
  spec.ssh_agent_path.clear();
  EXPECT_EQ(build_mpirun_command(two_hosts(), spec).error().message,
            "no ssh agent script for mpirun (SshAgentFile)");
  spec.ssh_agent_path = "/tmp/my dir/mpirun-ssh";
  EXPECT_EQ(build_mpirun_command(two_hosts(), spec).error().message,
            "ssh agent path '/tmp/my dir/mpirun-ssh' would not reach mpirun as one word; set TMPDIR to a plain path");
}

// Given straight to the launcher (no inventory validation in between).
const std::string kHostileUser = "root -o ProxyCommand=touch${IFS}/tmp/PWNED";

SshAgent hostile_agent() {
  return {"/tmp/key dir/id_ed25519", "/root/.config/xftctl/known_hosts", kHostileUser, 2222};
}

TEST(MpirunSshAgent, EveryValueIsOneSingleQuotedArgument) {
  auto script = ssh_agent_script(hostile_agent());
  ASSERT_TRUE(script.ok()) << script.error().message;
  EXPECT_EQ(*script,
            "#!/bin/sh\n"
            "# mpirun's ssh for one xftctl launch; Open MPI runs it as: mpirun-ssh HOST COMMAND...\n"
            "exec ssh -x -o BatchMode=yes -o StrictHostKeyChecking=yes "
            "-o 'UserKnownHostsFile=\"/root/.config/xftctl/known_hosts\"' -o IdentitiesOnly=yes "
            "-i '/tmp/key dir/id_ed25519' -l 'root -o ProxyCommand=touch${IFS}/tmp/PWNED' -p 2222 -- \"$@\"\n");
}

TEST(MpirunSshAgent, WithoutKeyUserOrKnownHosts) {
  auto script = ssh_agent_script(SshAgent{});
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(*script,
            "#!/bin/sh\n"
            "# mpirun's ssh for one xftctl launch; Open MPI runs it as: mpirun-ssh HOST COMMAND...\n"
            "exec ssh -x -o BatchMode=yes -o StrictHostKeyChecking=yes -p 22 -- \"$@\"\n");
}

TEST(MpirunSshAgent, PathsSshWouldRewriteAreRefused) {
  SshAgent ssh = hostile_agent();
  ssh.key = "/keys/%h/id";
  EXPECT_EQ(ssh_agent_script(ssh).error().message,
            "SSH key /keys/%h/id: ssh expands % and ${...} in this path; use a path without them");
  ssh.key = "/keys/${HOME}/id";
  EXPECT_EQ(ssh_agent_script(ssh).error().message,
            "SSH key /keys/${HOME}/id: ssh expands % and ${...} in this path; use a path without them");
  ssh.key = "/keys/a\nb";
  EXPECT_EQ(ssh_agent_script(ssh).error().message, "SSH key path has a control character: '/keys/a\nb'");
  ssh.key = "/keys/$dollar/id";  // a lone $ is plain text to ssh
  EXPECT_TRUE(ssh_agent_script(ssh).ok());
  ssh.known_hosts = "/kh/\"quoted\"";
  EXPECT_EQ(ssh_agent_script(ssh).error().message,
            "known_hosts path /kh/\"quoted\": ssh cannot take a quote or backslash there");
}

// A scratch directory, TMPDIR pointing at it while the test runs.
class AgentDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xft-agent-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (const char* old = std::getenv("TMPDIR")) old_tmpdir_ = old;
    ::setenv("TMPDIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_tmpdir_) ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
    else ::unsetenv("TMPDIR");
    std::filesystem::remove_all(dir_);
  }
  // A stub `ssh` in DIR/bin that prints each argument on a line of its own.
  std::string stub_ssh() {
    std::string bin = dir_ + "/bin";
    std::filesystem::create_directories(bin);
    std::ofstream(bin + "/ssh") << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n";
    ::chmod((bin + "/ssh").c_str(), 0755);
    return bin;
  }
  std::string dir_;
  std::optional<std::string> old_tmpdir_;
};

std::string run_shell(const std::string& command, int& status) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  status = ::pclose(pipe);
  return out;
}

using xft::test::mode_of;

TEST_F(AgentDir, DirectoryTemplateIsUnderAPlainTmpdirElseTmp) {
  EXPECT_EQ(ssh_agent_dir_template(), dir_ + "/xftctl-launch.XXXXXX");
  ::setenv("TMPDIR", "/tmp/with space", 1);  // Open MPI would split the agent there
  EXPECT_EQ(ssh_agent_dir_template(), "/tmp/xftctl-launch.XXXXXX");
  ::setenv("TMPDIR", "/tmp/a:b", 1);  // ...and there
  EXPECT_EQ(ssh_agent_dir_template(), "/tmp/xftctl-launch.XXXXXX");
  ::setenv("TMPDIR", "relative", 1);
  EXPECT_EQ(ssh_agent_dir_template(), "/tmp/xftctl-launch.XXXXXX");
}

TEST_F(AgentDir, ScriptFileIsPrivateAndRemovedWithItsDirectory) {
  std::string path, dir;
  {
    auto agent = SshAgentFile::create(hostile_agent());
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    path = agent->path();
    dir = path.substr(0, path.rfind('/'));
    EXPECT_EQ(dir.substr(0, dir.size() - 6), dir_ + "/xftctl-launch.");
    EXPECT_EQ(path, dir + "/mpirun-ssh");
    EXPECT_EQ(mode_of(dir), 0700u);
    EXPECT_EQ(mode_of(path), 0700u);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, *ssh_agent_script(hostile_agent()));
    int status = 0;
    run_shell("sh -n '" + path + "' 2>&1", status);
    EXPECT_EQ(status, 0) << "sh -n rejects the script";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(AgentDir, SshGetsEachValueAsOneArgumentAndNothingRuns) {
  std::string marker = dir_ + "/PWNED";
  SshAgent ssh = hostile_agent();
  ssh.user = "root -o ProxyCommand=touch${IFS}" + marker + " $(touch " + marker + ") `touch " + marker + "`";
  auto agent = SshAgentFile::create(ssh);
  ASSERT_TRUE(agent.ok()) << agent.error().message;
  std::string bin = stub_ssh();
  // As Open MPI runs it: the host, then the orted command's words.
  int status = 0;
  std::string out = run_shell("PATH='" + bin + "':\"$PATH\" '" + agent->path() +
                                  "' 10.9.0.11 ' orted' --daemonize -mca ess '\"env\"' 'a b;$(touch " + marker + ")'",
                              status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out,
            "-x\n-o\nBatchMode=yes\n-o\nStrictHostKeyChecking=yes\n"
            "-o\nUserKnownHostsFile=\"/root/.config/xftctl/known_hosts\"\n-o\nIdentitiesOnly=yes\n"
            "-i\n/tmp/key dir/id_ed25519\n"
            "-l\n" + ssh.user + "\n"
            "-p\n2222\n--\n10.9.0.11\n orted\n--daemonize\n-mca\ness\n\"env\"\na b;$(touch " + marker + ")\n");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a value ran as a command";
}

TEST(Mpirun, PassEnvForwardsNamesOnly) {
  MpirunSpec spec = tcp_spec();
  spec.pass_env = {"XFTCTL_API_KEY"};
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0}, {0}), rank(1, "h02", "10.9.0.12", {0}, {0})};
  auto tokens = build_mpirun_command(plan, spec);
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(shell_join(*tokens),
            "mpirun --allow-run-as-root --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp "
            "--mca btl_tcp_if_include eth1 --mca oob_tcp_if_include 10.9.0.0/24 "
            "--mca plm_rsh_agent '/bin/sh /tmp/xftctl-launch.AbC123/mpirun-ssh' --mca plm_rsh_no_tree_spawn 1 "
            "-np 1 -H 10.9.0.11:1 -x OMP_NUM_THREADS=1 -x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth1 "
            "-x XFTCTL_API_KEY numactl -C 0 -m 0 /opt/xft/xftctl rank probe : "
            "-np 1 -H 10.9.0.12:1 -x OMP_NUM_THREADS=1 -x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth1 "
            "-x XFTCTL_API_KEY numactl -C 0 -m 0 /opt/xft/xftctl rank probe");
  spec.pass_env = {"NOT=A NAME"};
  EXPECT_EQ(build_mpirun_command(plan, spec).error().message, "cannot forward 'NOT=A NAME': not a variable name");
}

TEST_F(AgentDir, DryRunTextShowsTheCommandAndTheAgentScript) {
  ::setenv("TMPDIR", "/var/tmp", 1);  // the fixture puts it back
  MpirunSpec spec = tcp_spec();
  spec.ssh = hostile_agent();
  spec.ssh_agent_path.clear();  // launch() fills it; the description shows the template
  spec.pass_env = {"XFTCTL_API_KEY"};
  RankPlan plan;
  plan.ranks = {rank(0, "h01", "10.9.0.11", {0}, {0})};
  auto text = describe_mpirun_command(plan, spec);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text,
            "mpirun --allow-run-as-root --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp "
            "--mca btl_tcp_if_include eth1 --mca oob_tcp_if_include 10.9.0.0/24 "
            "--mca plm_rsh_agent '/bin/sh /var/tmp/xftctl-launch.XXXXXX/mpirun-ssh' --mca plm_rsh_no_tree_spawn 1 "
            "-np 1 -H 10.9.0.11:1 -x OMP_NUM_THREADS=1 -x 'FI_PROVIDER=tcp;ofi_rxm' -x FI_TCP_IFACE=eth1 "
            "-x XFTCTL_API_KEY numactl -C 0 -m 0 /opt/xft/xftctl rank probe\n"
            "# /var/tmp/xftctl-launch.XXXXXX/mpirun-ssh, mpirun's ssh (made for the launch in a private "
            "directory, mode 0700, removed after it):\n" +
                *ssh_agent_script(hostile_agent()));
}

TEST(Mpirun, DryRunTextOfALocalLaunchHasNoScript) {
  MpirunSpec spec;
  spec.local_only = true;
  spec.provider = "shm";
  spec.command = {"true"};
  RankPlan plan;
  plan.ranks = {rank(0, "vm", "localhost", {0}, {0})};
  EXPECT_EQ(*describe_mpirun_command(plan, spec),
            "mpirun --bind-to none --tag-output --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include lo "
            "--mca oob_tcp_if_include lo -np 1 -H localhost:1 -x OMP_NUM_THREADS=1 -x FI_PROVIDER=shm "
            "numactl -C 0 -m 0 true\n");
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
