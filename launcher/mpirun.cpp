#include "launcher/mpirun.h"

#include <map>
#include <regex>

namespace xft::launcher {

FabricKind fabric_kind(const std::string& provider) {
  if (provider.find("efa") != std::string::npos) return FabricKind::efa;
  if (provider.find("verbs") != std::string::npos) return FabricKind::verbs;
  return FabricKind::tcp;
}

std::vector<std::pair<std::string, std::string>> fabric_env(const MpirunSpec& spec) {
  std::vector<std::pair<std::string, std::string>> env;
  switch (fabric_kind(spec.provider)) {
    case FabricKind::verbs:  // eRDMA / RoCE through verbs with the RxM utility provider
      env = {{"FI_PROVIDER", "verbs;ofi_rxm"}, {"FI_OFI_RXM_USE_SRX", "0"}, {"FI_VERBS_RX_IOV_LIMIT", "1"}};
      if (!spec.iface.empty()) env.push_back({"FI_VERBS_IFACE", spec.iface});
      break;
    case FabricKind::efa:
      env = {{"FI_PROVIDER", "efa"}, {"FI_EFA_USE_DEVICE_RDMA", "1"}};
      break;
    case FabricKind::tcp:
      env = {{"FI_PROVIDER", spec.provider.empty() ? "tcp;ofi_rxm" : spec.provider}};
      if (!spec.iface.empty()) env.push_back({"FI_TCP_IFACE", spec.iface});
      break;
  }
  return env;
}

std::string ssh_agent_command(const SshAgent& ssh) {
  // BatchMode: never prompt (a prompt would hang every orted launch);
  // StrictHostKeyChecking=yes against xftctl's own known_hosts only.
  std::string agent = "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes";
  if (!ssh.known_hosts.empty()) agent += " -o UserKnownHostsFile=" + ssh.known_hosts;
  if (!ssh.key.empty()) agent += " -o IdentitiesOnly=yes -i " + ssh.key;
  if (!ssh.user.empty()) agent += " -l " + ssh.user;
  if (ssh.port != 22) agent += " -p " + std::to_string(ssh.port);
  return agent;
}

namespace {

void mca(std::vector<std::string>& out, const MpirunSpec& spec, const std::string& name, const std::string& value) {
  out.insert(out.end(), {"--mca", name, value});
}

// Launcher (ssh) parameters live in ORTE (4.x) or PRRTE (5.x).
void launcher_param(std::vector<std::string>& out, const MpirunSpec& spec, const std::string& name,
                    const std::string& value) {
  if (spec.mpi_major >= 5)
    out.insert(out.end(), {"--prtemca", "plm_ssh_" + name, value});
  else
    out.insert(out.end(), {"--mca", "plm_rsh_" + name, value});
}

void transport_params(std::vector<std::string>& out, const MpirunSpec& spec) {
  if (fabric_kind(spec.provider) == FabricKind::tcp) {
    mca(out, spec, "pml", "ob1");
    mca(out, spec, "btl", spec.mpi_major >= 5 ? "self,sm,tcp" : "self,vader,tcp");
    std::string tcp_if = spec.local_only ? "lo" : !spec.iface.empty() ? spec.iface : spec.oob_subnet;
    if (!tcp_if.empty()) mca(out, spec, "btl_tcp_if_include", tcp_if);
  } else {
    mca(out, spec, "pml", "cm");
    mca(out, spec, "mtl", "ofi");
  }
  std::string oob = spec.local_only ? "lo" : !spec.oob_subnet.empty() ? spec.oob_subnet : spec.iface;
  if (!oob.empty()) mca(out, spec, "oob_tcp_if_include", oob);
}

std::map<std::string, int> ranks_per_host(const RankPlan& plan) {
  std::map<std::string, int> count;
  for (const auto& r : plan.ranks) ++count[r.address];
  return count;
}

}  // namespace

Expected<std::vector<std::string>> build_mpirun_command(const RankPlan& plan, const MpirunSpec& spec) {
  if (plan.ranks.empty()) return make_error("the rank plan has no ranks");
  if (spec.command.empty()) return make_error("no command to launch: give it after --");
  std::vector<std::string> out = {spec.mpirun};
  if (spec.as_root) out.push_back("--allow-run-as-root");
  // numactl does the binding; Open MPI's own would fight it.
  out.insert(out.end(), {"--bind-to", "none"});
  if (spec.mpi_major >= 5)
    out.insert(out.end(), {"--output", "tag"});
  else
    out.push_back("--tag-output");
  transport_params(out, spec);
  if (!spec.local_only) {
    launcher_param(out, spec, "agent", ssh_agent_command(spec.ssh));
    // mpirun starts every daemon itself: a tree spawn would need the key on the hosts.
    launcher_param(out, spec, "no_tree_spawn", "1");
  }

  auto env = fabric_env(spec);
  env.insert(env.end(), spec.env.begin(), spec.env.end());
  auto slots = ranks_per_host(plan);
  for (const auto& rank : plan.ranks) {
    if (rank.rank > 0) out.push_back(":");
    // -H host:slots: every context names its host with the host's full slot count.
    out.insert(out.end(), {"-np", "1", "-H", rank.address + ":" + std::to_string(slots[rank.address])});
    // -x is per app context in Open MPI, so every context carries the whole environment.
    out.insert(out.end(), {"-x", "OMP_NUM_THREADS=" + std::to_string(rank.omp_threads())});
    if (!rank.comm_cpus.empty()) out.insert(out.end(), {"-x", "XFT_COMM_CPUS=" + format_cpu_list(rank.comm_cpus)});
    for (const auto& [name, value] : env) out.insert(out.end(), {"-x", name + "=" + value});
    for (const auto& t : rank.numactl_tokens()) out.push_back(t);
    out.insert(out.end(), spec.command.begin(), spec.command.end());
  }
  return out;
}

std::string shell_join(const std::vector<std::string>& tokens) {
  static const std::regex plain("[A-Za-z0-9_@%+=:,./-]+");
  std::string out;
  for (const auto& t : tokens) {
    if (!out.empty()) out += ' ';
    if (std::regex_match(t, plain)) {
      out += t;
      continue;
    }
    out += '\'';
    for (char c : t) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

int parse_open_mpi_major(const std::string& version_output) {
  static const std::regex version(R"(\(Open MPI\) (\d+)\.)");
  std::smatch m;
  if (!std::regex_search(version_output, m, version)) return 0;
  return std::stoi(m[1]);
}

}  // namespace xft::launcher
