// Builds the Open MPI mpirun command line for a rank plan: one app context per
// rank, each wrapped in its numactl binding, with the fabric's environment and
// MCA settings, and ssh restricted to xftctl's key and known_hosts through a
// generated agent script (Open MPI splits an agent string on spaces, so no
// inventory value may ever be part of one).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "launcher/topology.h"

namespace xft::launcher {

// tcp: Open MPI's own TCP transport (pml ob1); every other kind goes through
// libfabric (pml cm, mtl ofi), with a preset environment for the known ones.
enum class FabricKind { tcp, verbs, efa, psm3, ofi };

// By the list's first item that is not an exclusion (^NAME): "", "tcp",
// "tcp;ofi_rxm", "sockets", "shm" -> tcp; "efa" -> efa; anything with "verbs"
// (eRDMA, RoCE, IB) -> verbs; "psm3" -> psm3; any other provider -> ofi.
FabricKind fabric_kind(const std::string& provider);
// The first provider of a list ("verbs;ofi_rxm" -> "verbs"): what Open MPI's
// mtl_ofi_provider_include matches (a layered provider by its core name).
std::string first_provider(const std::string& provider);

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
  // Where ssh_agent_script(ssh) is written for this launch (SshAgentFile);
  // plm_rsh_agent / plm_ssh_agent is "/bin/sh PATH". Required unless local_only.
  std::string ssh_agent_path;
  std::string provider = "tcp;ofi_rxm";  // libfabric provider string
  std::string iface;       // fabric interface name on the hosts (FI_*_IFACE, btl_tcp_if_include)
  std::string oob_subnet;  // CIDR or interface for Open MPI's out-of-band channel; empty: Open MPI picks
  // extra -x VAR=VALUE for every rank (launch -x, bench -x); replaces a fabric
  // preset or fabric.env value of the same name
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> pass_env;  // -x NAME: value taken from mpirun's own environment, never on a command line
  std::vector<std::string> command;                      // what each rank runs, after numactl
};

// The fabric preset's environment (FI_PROVIDER and friends).
std::vector<std::pair<std::string, std::string>> fabric_env(const MpirunSpec& spec);

// The sh script mpirun runs as its ssh: `exec ssh OPTIONS -- "$@"` where the
// user, key and known_hosts path are each one single-quoted argument. An error
// for a path ssh itself would rewrite (% and ${} expansion, control characters;
// quotes and backslash in known_hosts, which ssh parses as a config line).
Expected<std::string> ssh_agent_script(const SshAgent& ssh);

// The mkdtemp template of the private directory that holds the agent script:
// $TMPDIR (when absolute and plain: Open MPI splits the agent on spaces and
// colons and passes it to the hosts' shells in double quotes), else /tmp.
std::string ssh_agent_dir_template();
inline constexpr const char* kSshAgentName = "mpirun-ssh";

// The agent script written for one launch: a directory made by mkdtemp (0700)
// holding the script (0700); both are removed when this goes away.
class SshAgentFile {
 public:
  static Expected<SshAgentFile> create(const SshAgent& ssh);
  SshAgentFile(SshAgentFile&& other) noexcept;
  SshAgentFile& operator=(SshAgentFile&&) = delete;
  SshAgentFile(const SshAgentFile&) = delete;
  ~SshAgentFile();
  const std::string& path() const { return path_; }

 private:
  SshAgentFile(std::string dir, std::string path) : dir_(std::move(dir)), path_(std::move(path)) {}
  std::string dir_, path_;
};

// Every token of the mpirun command, in order. Ranks on hosts whose facts
// found EFA's libfabric get -x LD_LIBRARY_PATH=EFA_DIR[:the host's own]; an
// error when the hosts of the plan disagree on it (unless spec.env sets
// LD_LIBRARY_PATH).
Expected<std::vector<std::string>> build_mpirun_command(const RankPlan& plan, const MpirunSpec& spec);

// What --dry-run prints: the mpirun command (the agent at its template path)
// and, when ssh is used, the agent script. pass_env names appear as `-x NAME`.
Expected<std::string> describe_mpirun_command(const RankPlan& plan, MpirunSpec spec);

// Tokens joined for a POSIX shell; a token with anything outside
// [A-Za-z0-9_@%+=:,./-] is single-quoted.
std::string shell_join(const std::vector<std::string>& tokens);

// Major version from `mpirun --version` output ("mpirun (Open MPI) 4.1.4" -> 4); 0 if not Open MPI.
int parse_open_mpi_major(const std::string& version_output);

}  // namespace xft::launcher
