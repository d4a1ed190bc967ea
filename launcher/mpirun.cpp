#include "launcher/mpirun.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include "common/atomic_file.h"

namespace xft::launcher {

namespace {

// The first item of a provider list that is not an exclusion ("^psm3,tcp;ofi_rxm" -> "tcp;ofi_rxm").
std::string first_included(const std::string& provider) {
  for (size_t start = 0; start <= provider.size();) {
    size_t comma = provider.find(',', start);
    if (comma == std::string::npos) comma = provider.size();
    std::string item = provider.substr(start, comma - start);
    if (!item.empty() && item[0] != '^') return item;
    start = comma + 1;
  }
  return "";
}

}  // namespace

std::string first_provider(const std::string& provider) {
  std::string item = first_included(provider);
  return item.substr(0, item.find(';'));
}

FabricKind fabric_kind(const std::string& provider) {
  static const std::set<std::string> tcp_based = {"", "tcp", "tcp;ofi_rxm", "sockets", "shm"};
  const std::string item = first_included(provider);
  if (tcp_based.count(item)) return FabricKind::tcp;
  const std::string first = first_provider(provider);
  if (first == "efa") return FabricKind::efa;
  if (item.find("verbs") != std::string::npos) return FabricKind::verbs;
  if (first == "psm3") return FabricKind::psm3;
  return FabricKind::ofi;
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
    case FabricKind::psm3:  // PSM3_* tuning is the cluster's: fabric.env in the inventory
      env = {{"FI_PROVIDER", "psm3"}};
      break;
    case FabricKind::ofi:
      env = {{"FI_PROVIDER", spec.provider}};
      break;
    case FabricKind::tcp:
      env = {{"FI_PROVIDER", spec.provider.empty() ? "tcp;ofi_rxm" : spec.provider}};
      if (!spec.iface.empty()) env.push_back({"FI_TCP_IFACE", spec.iface});
      break;
  }
  return env;
}

namespace {

bool has_control_character(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// ssh rewrites -i and UserKnownHostsFile paths (%-tokens, ${VAR}); a path that
// holds them would name another file, so it is refused rather than guessed at.
Expected<void> check_ssh_path(const std::string& what, const std::string& path) {
  if (has_control_character(path)) return make_error(what + " path has a control character: " + shell_join({path}));
  if (path.find('%') != std::string::npos || path.find("${") != std::string::npos)
    return make_error(what + " " + path + ": ssh expands % and ${...} in this path; use a path without them");
  return {};
}

}  // namespace

Expected<std::string> ssh_agent_script(const SshAgent& ssh) {
  // BatchMode: never prompt (a prompt would hang every orted launch);
  // StrictHostKeyChecking=yes against xftctl's own known_hosts only.
  // -x: no X11 forwarding (Open MPI adds it itself only to an agent named ssh).
  std::vector<std::string> argv = {"exec", "ssh", "-x", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"};
  if (!ssh.known_hosts.empty()) {
    if (auto ok = check_ssh_path("known_hosts", ssh.known_hosts); !ok) return ok.error();
    // ssh parses an -o value as a config line: double quotes keep a path with spaces one file.
    if (ssh.known_hosts.find_first_of("\"\\") != std::string::npos)
      return make_error("known_hosts path " + ssh.known_hosts + ": ssh cannot take a quote or backslash there");
    argv.insert(argv.end(), {"-o", "UserKnownHostsFile=\"" + ssh.known_hosts + "\""});
  }
  if (!ssh.key.empty()) {
    if (auto ok = check_ssh_path("SSH key", ssh.key); !ok) return ok.error();
    argv.insert(argv.end(), {"-o", "IdentitiesOnly=yes", "-i", ssh.key});
  }
  if (!ssh.user.empty()) argv.insert(argv.end(), {"-l", ssh.user});
  argv.insert(argv.end(), {"-p", std::to_string(ssh.port), "--"});
  return "#!/bin/sh\n"
         "# mpirun's ssh for one xftctl launch; Open MPI runs it as: mpirun-ssh HOST COMMAND...\n" +
         shell_join(argv) + " \"$@\"\n";
}

std::string ssh_agent_dir_template() {
  static const std::regex plain("/[A-Za-z0-9_./-]*");
  std::string dir = "/tmp";
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir && std::regex_match(tmpdir, plain)) dir = tmpdir;
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  return dir + "/xftctl-launch.XXXXXX";
}

Expected<SshAgentFile> SshAgentFile::create(const SshAgent& ssh) {
  auto script = ssh_agent_script(ssh);
  if (!script) return script.error();
  std::string dir = ssh_agent_dir_template();
  if (!::mkdtemp(dir.data()))
    return make_error("cannot create a private directory for mpirun's ssh agent (" + dir + "): " +
                      std::strerror(errno));
  SshAgentFile file(dir, dir + "/" + kSshAgentName);  // from here on, going out of scope cleans up
  if (auto written = write_file_atomic(file.path_, *script, 0700); !written) return written.error();
  return file;
}

SshAgentFile::SshAgentFile(SshAgentFile&& other) noexcept
    : dir_(std::exchange(other.dir_, {})), path_(std::exchange(other.path_, {})) {}

SshAgentFile::~SshAgentFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
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
    // The OFI MTL on the named provider only: left to choose, Open MPI may
    // settle on another one and the ranks never touch the NIC.
    mca(out, spec, "pml", "cm");
    mca(out, spec, "mtl", "ofi");
    mca(out, spec, "mtl_ofi_provider_include", first_provider(spec.provider));
  }
  std::string oob = spec.local_only ? "lo" : !spec.oob_subnet.empty() ? spec.oob_subnet : spec.iface;
  if (!oob.empty()) mca(out, spec, "oob_tcp_if_include", oob);
}

using EnvList = std::vector<std::pair<std::string, std::string>>;

// `over` laid on `base`: a name already there keeps its place and takes the new value.
void overlay(EnvList& base, const EnvList& over) {
  for (const auto& [name, value] : over) {
    auto same = std::find_if(base.begin(), base.end(), [&](const auto& e) { return e.first == name; });
    if (same != base.end()) same->second = value;
    else base.emplace_back(name, value);
  }
}

const PlanHost* plan_host_named(const RankPlan& plan, const std::string& name) {
  for (const auto& h : plan.hosts)
    if (h.name == name) return &h;
  return nullptr;
}

bool sets(const EnvList& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const auto& e) { return e.first == name; });
}

// Ranks that load different libfabric builds (EFA's on some hosts, the
// system's or another EFA directory on others) may not understand each
// other's wire format, so the hosts of one launch must agree. A -x
// LD_LIBRARY_PATH of the user's own decides for every rank instead.
Expected<void> check_efa_agreement(const RankPlan& plan, const MpirunSpec& spec) {
  if (sets(spec.env, "LD_LIBRARY_PATH")) return {};
  const PlanHost* first = nullptr;
  auto dir_of = [](const PlanHost* h) {
    return h->facts.efa_libfabric_dir.empty() ? std::string("none") : h->facts.efa_libfabric_dir;
  };
  for (const auto& r : plan.ranks) {
    const PlanHost* h = plan_host_named(plan, r.host);
    if (!h) continue;
    if (!first) first = h;
    if (h->facts.efa_libfabric_dir == first->facts.efa_libfabric_dir) continue;
    return make_error("hosts " + first->name + " and " + h->name + " differ in EFA's libfabric (" + dir_of(first) +
                      " on " + first->name + ", " + dir_of(h) + " on " + h->name +
                      "), so their ranks would load different libfabric builds: install aws-efa-installer on every "
                      "host of the launch or on none, then --refresh the facts, or launch them separately");
  }
  return {};
}

// Per host: EFA's libfabric ahead of the host's LD_LIBRARY_PATH (the
// system's is what the ranks' xftctl links otherwise), the fabric preset, then
// the host's fabric.env, then -x values.
std::map<std::string, EnvList> rank_env_by_host(const RankPlan& plan, const MpirunSpec& spec) {
  std::map<std::string, EnvList> by_host;
  for (const auto& r : plan.ranks) {
    if (by_host.count(r.host)) continue;
    EnvList env;
    const PlanHost* h = plan_host_named(plan, r.host);
    if (h && !h->facts.efa_libfabric_dir.empty())
      env.emplace_back("LD_LIBRARY_PATH", efa_library_path(h->facts.efa_libfabric_dir, h->facts.ld_library_path));
    overlay(env, fabric_env(spec));
    if (h) overlay(env, h->fabric_env);
    overlay(env, spec.env);
    by_host[r.host] = std::move(env);
  }
  return by_host;
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
  static const std::regex variable("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& name : spec.pass_env)
    if (!std::regex_match(name, variable)) return make_error("cannot forward " + shell_join({name}) + ": not a variable name");
  for (const auto& [name, value] : spec.env)
    if (!std::regex_match(name, variable))
      return make_error("cannot pass -x " + shell_join({name + "=" + value}) + ": " + shell_join({name}) +
                        " is not a variable name");
  if (auto agree = check_efa_agreement(plan, spec); !agree) return agree.error();
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
    if (spec.ssh_agent_path.empty()) return make_error("no ssh agent script for mpirun (SshAgentFile)");
    // Open MPI splits the agent on spaces (and colons), so the path must be one plain word.
    static const std::regex plain_path("/[A-Za-z0-9_./-]+");
    if (!std::regex_match(spec.ssh_agent_path, plain_path))
      return make_error("ssh agent path " + shell_join({spec.ssh_agent_path}) +
                        " would not reach mpirun as one word; set TMPDIR to a plain path");
    // Through /bin/sh, not the script itself: every remote daemon also looks
    // the agent up and fails when it is missing there (this machine's TMPDIR is
    // not the hosts'), and a noexec TMPDIR could not run it.
    launcher_param(out, spec, "agent", "/bin/sh " + spec.ssh_agent_path);
    // mpirun starts every daemon itself: a tree spawn would need the key on the hosts.
    launcher_param(out, spec, "no_tree_spawn", "1");
  }

  auto env_by_host = rank_env_by_host(plan, spec);
  auto slots = ranks_per_host(plan);
  for (const auto& rank : plan.ranks) {
    if (rank.rank > 0) out.push_back(":");
    // -H host:slots: every context names its host with the host's full slot count.
    out.insert(out.end(), {"-np", "1", "-H", rank.address + ":" + std::to_string(slots[rank.address])});
    // -x is per app context in Open MPI, so every context carries the whole environment.
    out.insert(out.end(), {"-x", "OMP_NUM_THREADS=" + std::to_string(rank.omp_threads())});
    for (const auto& [name, value] : env_by_host[rank.host]) out.insert(out.end(), {"-x", name + "=" + value});
    for (const auto& name : spec.pass_env) out.insert(out.end(), {"-x", name});
    for (const auto& t : rank.numactl_tokens()) out.push_back(t);
    out.insert(out.end(), spec.command.begin(), spec.command.end());
  }
  return out;
}

Expected<std::string> describe_mpirun_command(const RankPlan& plan, MpirunSpec spec) {
  std::string script;
  if (!spec.local_only) {
    auto text = ssh_agent_script(spec.ssh);
    if (!text) return text.error();
    script = std::move(*text);
    spec.ssh_agent_path = ssh_agent_dir_template() + "/" + kSshAgentName;
  }
  auto command = build_mpirun_command(plan, spec);
  if (!command) return command.error();
  std::string text = shell_join(*command) + "\n";
  if (!script.empty())
    text += "# " + spec.ssh_agent_path +
            ", mpirun's ssh (made for the launch in a private directory, mode 0700, removed after it):\n" + script;
  return text;
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
