// Builds the Open MPI mpirun command line for a rank plan: one app context per
// rank, each wrapped in its numactl binding, with the fabric's environment and
// MCA settings, and ssh restricted to xftctl's key and known_hosts.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "launcher/topology.h"

namespace xft::launcher {

enum class FabricKind { tcp, verbs, efa };

// "efa" -> efa; anything with "verbs" (eRDMA, RoCE, IB) -> verbs; else tcp.
FabricKind fabric_kind(const std::string& provider);

struct SshAgent {
  std::string key;          // private key file; empty: ssh's default identities
  std::string known_hosts;  // xftctl's known_hosts file
  std::string user;         // empty: the login user of mpirun's side
  int port = 22;
};

struct MpirunSpec {
  std::string mpirun = "mpirun";
  int mpi_major = 4;      // 4: ORTE syntax; 5: PRRTE syntax
  bool as_root = false;   // adds --allow-run-as-root
  bool local_only = false;  // every rank on this machine: no ssh agent
  SshAgent ssh;
  std::string provider = "tcp;ofi_rxm";  // libfabric provider string
  std::string iface;       // fabric interface name on the hosts (FI_*_IFACE, btl_tcp_if_include)
  std::string oob_subnet;  // CIDR or interface for Open MPI's out-of-band channel; empty: Open MPI picks
  std::vector<std::pair<std::string, std::string>> env;  // extra -x VAR=VALUE for every rank
  std::vector<std::string> command;                      // what each rank runs, after numactl
};

// The fabric preset's environment (FI_PROVIDER and friends).
std::vector<std::pair<std::string, std::string>> fabric_env(const MpirunSpec& spec);

// The "ssh -o BatchMode=yes ..." string given to plm_rsh_agent.
std::string ssh_agent_command(const SshAgent& ssh);

// Every token of the mpirun command, in order.
Expected<std::vector<std::string>> build_mpirun_command(const RankPlan& plan, const MpirunSpec& spec);

// Tokens joined for a POSIX shell; a token with anything outside
// [A-Za-z0-9_@%+=:,./-] is single-quoted.
std::string shell_join(const std::vector<std::string>& tokens);

// Major version from `mpirun --version` output ("mpirun (Open MPI) 4.1.4" -> 4); 0 if not Open MPI.
int parse_open_mpi_major(const std::string& version_output);

}  // namespace xft::launcher
