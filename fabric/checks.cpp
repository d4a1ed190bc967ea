#include "fabric/checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <arpa/inet.h>

namespace xft::fabric {
namespace {

Check host_check(const std::string& host, std::string check, Verdict verdict, std::string observed,
                 std::string fix = "") {
  return Check{host, "", std::move(check), verdict, std::move(observed), std::move(fix)};
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string join_ints(const std::vector<int>& items) {
  std::vector<std::string> words;
  for (int i : items) words.push_back(std::to_string(i));
  return join(words, ",");
}

bool is_ip_literal(const std::string& address) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, address.c_str(), buffer) == 1 || inet_pton(AF_INET6, address.c_str(), buffer) == 1;
}

std::string without_prefix_length(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// The driver a provider runs on, for "no device" fixes.
std::string install_hint(const std::string& provider) {
  if (provider.rfind("verbs", 0) == 0)
    return "install the eRDMA driver (erdma_installer from Alibaba Cloud; `modprobe erdma`) and rdma-core";
  if (provider == "efa") return "install the EFA driver and libfabric (aws-efa-installer: `sudo ./efa_installer.sh -y`)";
  if (provider == "psm3") return "load the irdma driver (`modprobe irdma`) and install libfabric with psm3 (Intel oneAPI)";
  return "apt-get install libfabric1 libfabric-bin";
}

// tcp names its domain after the interface; verbs after the RDMA device,
// which belongs to an interface. efa (no interface of its own), psm3 (one
// domain for all devices) and shm are not tied to the interface.
bool endpoint_on_iface(const FiEndpoint& endpoint, const FabricFacts& facts, const std::string& iface) {
  if (iface.empty() || endpoint.domain == iface) return true;
  if (endpoint.provider.rfind("tcp", 0) == 0) return false;
  if (endpoint.provider.rfind("verbs", 0) == 0) {
    for (const auto& device : facts.devices)
      if (device.netdev == iface && endpoint.domain.rfind(device.name, 0) == 0) return true;
    return false;
  }
  return true;
}

Check provider_check(const FabricFacts& facts, const HostExpectation& expect) {
  const std::string& provider = expect.provider;
  std::string query = "`fi_info -p '" + provider + "' -t FI_EP_RDM`";
  std::vector<std::string> domains;
  for (const auto& endpoint : facts.endpoints)
    if (endpoint.type == "FI_EP_RDM") domains.push_back(endpoint.domain);
  if (domains.empty()) {
    std::string observed = "no FI_EP_RDM endpoint";
    if (!facts.endpoint_error.empty()) observed += " (" + facts.endpoint_error + ")";
    observed += "; providers: " + (facts.providers.empty() ? std::string("none") : join(facts.providers, ","));
    return host_check(facts.host, "provider", Verdict::fail, observed, install_hint(provider) + ", then " + query);
  }
  for (const auto& endpoint : facts.endpoints)
    if (endpoint.type == "FI_EP_RDM" && endpoint_on_iface(endpoint, facts, expect.iface))
      return host_check(facts.host, "provider", Verdict::pass, provider + " FI_EP_RDM on " + endpoint.domain);
  std::sort(domains.begin(), domains.end());
  domains.erase(std::unique(domains.begin(), domains.end()), domains.end());
  std::string target = domains.front();
  for (const auto& domain : domains)
    if (domain != "lo") {
      target = domain;
      break;
    }
  bool tcp = provider.rfind("tcp", 0) == 0;  // its domain is the interface itself
  return host_check(facts.host, "provider", Verdict::fail,
                    provider + " FI_EP_RDM on " + join(domains, ",") + ", not on " + expect.iface,
                    "set fabric.iface of " + facts.host + " in the inventory to " +
                        (tcp ? target : "the interface of " + target));
}

std::string port_text(const RdmaPort& port) {
  return "port " + std::to_string(port.number) + " " + port.state + " " + port.phys_state;
}

Check device_check(const FabricFacts& facts, const RdmaDevice& device) {
  std::vector<std::string> parts{device.driver.empty() ? "driver ?" : device.driver};
  const RdmaPort* bad = nullptr;
  for (const auto& port : device.ports) {
    parts.push_back(port_text(port));
    if (port.state != "ACTIVE" && !bad) bad = &port;
  }
  if (device.ports.empty()) parts.push_back("no ports");
  if (!device.ports.empty() && !device.ports.front().link_layer.empty()) parts.push_back(device.ports.front().link_layer);
  parts.push_back("NUMA " + std::to_string(device.numa_node));
  parts.push_back(device.netdev.empty() ? "no interface" : device.netdev);
  std::string observed = join(parts, ", ");
  std::string check = "device " + device.name;
  if (device.ports.empty())
    return host_check(facts.host, check, Verdict::fail, observed, "reload the driver: `modprobe -r " + device.driver +
                                                                     " && modprobe " + device.driver + "`");
  if (bad) {
    std::string fix = device.netdev.empty()
                          ? "bring the link up: check the cable/attachment of " + device.name + ", then `ibv_devinfo -d " + device.name + "`"
                          : "bring the link up: `ip link set " + device.netdev + " up`";
    if (device.driver == "erdma")
      fix += "; if it stays " + bad->state + ", the ERI is not attached to the instance (ECS console: bind an eRDMA interface)";
    return host_check(facts.host, check, Verdict::fail, observed, fix);
  }
  return host_check(facts.host, check, Verdict::pass, observed);
}

void add_erdma_checks(const FabricFacts& facts, std::vector<Check>& checks) {
  bool any_erdma = std::any_of(facts.devices.begin(), facts.devices.end(), [](auto& d) { return d.driver == "erdma"; });
  if (!any_erdma) return;
  if (!facts.have_eadm || facts.eadm_version.empty()) {
    checks.push_back(host_check(facts.host, "eadm", Verdict::fail, facts.have_eadm ? "eadm ver printed no version" : "eadm not found",
                                "reinstall the eRDMA driver package (erdma_installer), which installs eadm"));
    return;
  }
  checks.push_back(host_check(facts.host, "eadm", Verdict::pass, facts.eadm_version));
  for (const auto& cc : facts.congestion_control) {
    std::string fix = "eadm conf -d " + cc.device + " -t cc -v 1";
    if (!cc.value)
      checks.push_back(host_check(facts.host, "cc " + cc.device, Verdict::warn, "unknown (" + cc.raw + ")", fix));
    else if (*cc.value == 1)
      checks.push_back(host_check(facts.host, "cc " + cc.device, Verdict::pass, "1 (CUBIC)"));
    else
      checks.push_back(host_check(facts.host, "cc " + cc.device, Verdict::warn,
                                  std::to_string(*cc.value) + " (not CUBIC)", fix));
  }
  for (const auto& dack : facts.delayed_ack) {
    std::string fix = "eadm conf -d " + dack.device + " -t dack -v 0";
    if (!dack.value)
      checks.push_back(host_check(facts.host, "delayed-ack " + dack.device, Verdict::warn, "unknown (" + dack.raw + ")", fix));
    else if (*dack.value == 0)
      checks.push_back(host_check(facts.host, "delayed-ack " + dack.device, Verdict::pass, "0 (off)"));
    else
      checks.push_back(host_check(facts.host, "delayed-ack " + dack.device, Verdict::warn,
                                  std::to_string(*dack.value) + " (on: small messages wait for the ACK timer)", fix));
  }
}

Check memlock_check(const FabricFacts& facts, const HostExpectation& expect) {
  if (!facts.memlock_kib) return host_check(facts.host, "memlock", Verdict::pass, "unlimited");
  std::string observed = std::to_string(*facts.memlock_kib) + " KiB";
  if (!is_rdma_provider(expect.provider))
    return host_check(facts.host, "memlock", Verdict::pass, observed + " (" + expect.provider + " registers no memory)");
  return host_check(facts.host, "memlock", Verdict::fail, observed + " (RDMA registration needs unlimited)",
                    "add `* - memlock unlimited` to /etc/security/limits.conf and log in again");
}

// The interface, its MTU and the inventory's address on it.
void add_interface_checks(const FabricFacts& facts, const HostExpectation& expect, std::vector<Check>& checks) {
  if (expect.iface.empty()) return;
  const NetInterface* iface = facts.interface(expect.iface);
  if (!iface) {
    std::vector<std::string> names;
    for (const auto& i : facts.interfaces)
      if (i.name != "lo") names.push_back(i.name);
    checks.push_back(host_check(facts.host, "interface", Verdict::fail, "no interface " + expect.iface,
                                "set fabric.iface of " + facts.host + " in the inventory to one of: " + join(names, ", ")));
    return;
  }
  std::string observed = iface->name + " mtu " + std::to_string(iface->mtu);
  if (iface->mtu < 1500)
    checks.push_back(host_check(facts.host, "interface", Verdict::warn, observed,
                                "`ip link set " + iface->name + " mtu 1500` (and in the network configuration)"));
  else
    checks.push_back(host_check(facts.host, "interface", Verdict::pass, observed));

  if (!is_ip_literal(expect.address)) {
    checks.push_back(host_check(facts.host, "address", Verdict::pass, expect.address + " is a name; not compared"));
    return;
  }
  for (const auto& address : iface->addresses)
    if (without_prefix_length(address) == expect.address) {
      checks.push_back(host_check(facts.host, "address", Verdict::pass, address + " on " + iface->name));
      return;
    }
  std::string holder;
  for (const auto& other : facts.interfaces)
    for (const auto& address : other.addresses)
      if (without_prefix_length(address) == expect.address) holder = other.name;
  std::string observed_address = iface->name + " has " + (iface->addresses.empty() ? "no address" : join(iface->addresses, ","));
  checks.push_back(host_check(
      facts.host, "address", Verdict::fail, observed_address + ", not " + expect.address,
      holder.empty() ? "set address of " + facts.host + " in the inventory to an address of " + iface->name
                     : "set fabric.iface of " + facts.host + " in the inventory to " + holder + " (it has " + expect.address + ")"));
}

Check nic_numa_check(const FabricFacts& facts, const HostExpectation& expect) {
  std::string nic = expect.iface;
  int node = -1;
  if (const NetInterface* iface = facts.interface(expect.iface)) node = iface->numa_node;
  for (const auto& device : facts.devices)
    if (device.netdev == expect.iface || (expect.iface.empty() && is_rdma_provider(expect.provider))) {
      nic = device.name;
      node = device.numa_node;
      break;
    }
  if (node < 0) return host_check(facts.host, "nic-numa", Verdict::pass, nic + ": the firmware names no NUMA node");
  std::string observed = nic + " on node " + std::to_string(node);
  if (expect.rank_numa_nodes.empty()) return host_check(facts.host, "nic-numa", Verdict::pass, observed + " (no rank plan)");
  observed += ", ranks on " + join_ints(expect.rank_numa_nodes);
  if (std::find(expect.rank_numa_nodes.begin(), expect.rank_numa_nodes.end(), node) != expect.rank_numa_nodes.end())
    return host_check(facts.host, "nic-numa", Verdict::pass, observed);
  return host_check(facts.host, "nic-numa", Verdict::warn, observed,
                    "put a rank beside the NIC: `ranks: per-numa` for " + facts.host + " in the inventory");
}

Check clock_check(const FabricFacts& facts, const HostExpectation& expect) {
  if (!expect.clock_offset_s) return host_check(facts.host, "clock", Verdict::warn, "not measured", "check that `date +%s.%N` works on " + facts.host);
  char text[48];
  std::snprintf(text, sizeof text, "%+.3f s from the control node", *expect.clock_offset_s);
  if (std::fabs(*expect.clock_offset_s) > 0.5)
    return host_check(facts.host, "clock", Verdict::warn, text, "`systemctl enable --now chrony` on " + facts.host);
  return host_check(facts.host, "clock", Verdict::pass, text);
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass: return "PASS";
    case Verdict::warn: return "WARN";
    case Verdict::fail: return "FAIL";
  }
  return "?";
}

bool is_rdma_provider(const std::string& provider) {
  return provider.rfind("verbs", 0) == 0 || provider == "efa" || provider.rfind("psm3", 0) == 0;
}

std::vector<Check> host_checks(const FabricFacts& facts, const HostExpectation& expect) {
  std::vector<Check> checks;
  if (!facts.have_libfabric) {
    checks.push_back(host_check(facts.host, "libfabric", Verdict::fail, "fi_info not found",
                                "apt-get install libfabric1 libfabric-bin (dnf install libfabric on Alibaba Cloud Linux)"));
  } else {
    // The probe's word; check fabric puts the pair workers' own (version and
    // file loaded) in its place once pairs ran.
    std::string observed = facts.libfabric_version;
    if (!facts.efa_libfabric_dir.empty()) observed += ", EFA's in " + facts.efa_libfabric_dir;
    checks.push_back(host_check(facts.host, "libfabric", Verdict::pass, observed));
    checks.push_back(provider_check(facts, expect));
  }
  if (is_rdma_provider(expect.provider) && facts.devices.empty())
    checks.push_back(host_check(facts.host, "rdma", Verdict::fail, "no device in /sys/class/infiniband",
                                install_hint(expect.provider)));
  for (const auto& device : facts.devices) checks.push_back(device_check(facts, device));
  add_erdma_checks(facts, checks);
  checks.push_back(memlock_check(facts, expect));
  add_interface_checks(facts, expect, checks);
  checks.push_back(nic_numa_check(facts, expect));
  if (facts.mpirun_version.empty())
    checks.push_back(host_check(facts.host, "open-mpi", Verdict::fail, "mpirun not found", "apt-get install openmpi-bin"));
  else
    checks.push_back(host_check(facts.host, "open-mpi", Verdict::pass, facts.mpirun_version));
  if (facts.have_numactl)
    checks.push_back(host_check(facts.host, "numactl", Verdict::pass, "present"));
  else
    checks.push_back(host_check(facts.host, "numactl", Verdict::fail, "numactl not found", "apt-get install numactl"));
  checks.push_back(clock_check(facts, expect));
  return checks;
}

Check unreachable_host_check(const std::string& host, const std::string& why) {
  return host_check(host, "ssh", Verdict::fail, why, "run `xftctl ping --hosts " + host + "` and fix what it reports");
}

std::vector<Check> pair_checks(const std::string& from, const std::string& to, const std::string& provider,
                               const PingPongReport& report) {
  std::string pair = from + " -> " + to;
  std::string firewall = "allow all traffic inside the security group (here: new TCP connections from " + from + " to " +
                         to + "; see `iptables -S` / `nft list ruleset` on " + to + ")";
  std::vector<Check> checks;
  checks.push_back({"", pair, "tcp", report.tcp.ok ? Verdict::pass : Verdict::fail, report.tcp.detail,
                    report.tcp.ok ? "" : firewall});
  checks.push_back({"", pair, "ssh", report.ssh.ok ? Verdict::pass : Verdict::fail, report.ssh.detail,
                    report.ssh.ok ? "" : "allow TCP port 22 from " + from + " to " + to + " (security group, firewall)"});
  std::string fabric_fix;
  if (!report.fabric.ok)
    fabric_fix = report.tcp.ok ? "run `FI_LOG_LEVEL=warn fi_info -p '" + provider + "' -t FI_EP_RDM` on " + from + " and " + to
                               : firewall;
  std::string observed = report.fabric.detail;
  if (report.fabric.ok && !report.sizes.empty()) {
    char text[96];
    std::snprintf(text, sizeof text, "%.1f us at %zu B, %.2f GB/s at %zu B", report.sizes.front().one_way_us,
                  report.sizes.front().size, report.sizes.back().bandwidth_gbps, report.sizes.back().size);
    observed = text;
  }
  checks.push_back({"", pair, "libfabric " + provider, report.fabric.ok ? Verdict::pass : Verdict::fail, observed,
                    fabric_fix});
  return checks;
}

std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pair_rounds(std::size_t n) {
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> rounds;
  if (n < 2) return rounds;
  std::size_t m = n % 2 ? n + 1 : n;  // an odd count gets a bye: the extra slot m-1
  std::vector<std::size_t> slots(m);
  for (std::size_t i = 0; i < m; ++i) slots[i] = i;
  for (std::size_t r = 0; r + 1 < m; ++r) {
    std::vector<std::pair<std::size_t, std::size_t>> round;
    for (std::size_t i = 0; i < m / 2; ++i) {
      std::size_t a = slots[i], b = slots[m - 1 - i];
      if (a >= n || b >= n) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(round);
    std::rotate(slots.begin() + 1, slots.end() - 1, slots.end());  // slot 0 stays, the rest turn
  }
  std::size_t forward = rounds.size();
  for (std::size_t r = 0; r < forward; ++r) {
    auto reversed = rounds[r];
    for (auto& [a, b] : reversed) std::swap(a, b);
    rounds.push_back(reversed);
  }
  return rounds;
}

void flag_outliers(PairMatrix& matrix) {
  std::vector<double> values;
  for (const auto& row : matrix.values)
    for (const auto& cell : row)
      if (cell) values.push_back(*cell);
  matrix.flagged.assign(matrix.values.size(), std::vector<bool>(matrix.values.size(), false));
  if (values.empty()) return;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  matrix.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  for (std::size_t r = 0; r < matrix.values.size(); ++r)
    for (std::size_t c = 0; c < matrix.values[r].size(); ++c) {
      const auto& cell = matrix.values[r][c];
      if (!cell) continue;
      matrix.flagged[r][c] = matrix.higher_is_better ? *cell < matrix.median / 2 : *cell > matrix.median * 2;
    }
}

std::vector<Check> outlier_checks(const PairMatrix& matrix, const std::string& check, const std::string& unit) {
  std::vector<Check> checks;
  for (std::size_t r = 0; r < matrix.flagged.size(); ++r)
    for (std::size_t c = 0; c < matrix.flagged[r].size(); ++c) {
      if (!matrix.flagged[r][c]) continue;
      char text[96];
      std::snprintf(text, sizeof text, "%.2f %s, median %.2f %s", *matrix.values[r][c], unit.c_str(), matrix.median,
                    unit.c_str());
      checks.push_back({"", matrix.hosts[r] + " -> " + matrix.hosts[c], check, Verdict::warn, text,
                        "compare the path with the other pairs: `ip route get` and `ethtool` on " + matrix.hosts[r] +
                            " and " + matrix.hosts[c] + " (MTU, link speed, a host under load)"});
    }
  return checks;
}

std::string format_matrix(const PairMatrix& matrix, int decimals) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header{"from \\ to"};
  for (const auto& host : matrix.hosts) header.push_back(host);
  cells.push_back(header);
  for (std::size_t r = 0; r < matrix.hosts.size(); ++r) {
    std::vector<std::string> row{matrix.hosts[r]};
    for (std::size_t c = 0; c < matrix.hosts.size(); ++c) {
      if (r == c) {
        row.push_back("-");
      } else if (!matrix.values[r][c]) {
        row.push_back("FAIL");
      } else {
        char text[32];
        std::snprintf(text, sizeof text, "%.*f%s", decimals, *matrix.values[r][c],
                      !matrix.flagged.empty() && matrix.flagged[r][c] ? " !" : "");
        row.push_back(text);
      }
    }
    cells.push_back(row);
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  std::string text = matrix.title + "\n";
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string pad(widths[c] - row[c].size(), ' ');
      line += c == 0 ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    text += line + "\n";
  }
  return text;
}

nlohmann::ordered_json matrix_to_json(const PairMatrix& matrix) {
  nlohmann::ordered_json values = nlohmann::ordered_json::array();
  for (const auto& row : matrix.values) {
    nlohmann::ordered_json line = nlohmann::ordered_json::array();
    for (const auto& cell : row) line.push_back(cell ? nlohmann::ordered_json(*cell) : nlohmann::ordered_json());
    values.push_back(line);
  }
  nlohmann::ordered_json flagged = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < matrix.flagged.size(); ++r)
    for (std::size_t c = 0; c < matrix.flagged[r].size(); ++c)
      if (matrix.flagged[r][c]) flagged.push_back(matrix.hosts[r] + " -> " + matrix.hosts[c]);
  return {{"title", matrix.title}, {"hosts", matrix.hosts}, {"values", values}, {"median", matrix.median},
          {"flagged", flagged}};
}

nlohmann::ordered_json check_to_json(const Check& check) {
  nlohmann::ordered_json json;
  if (check.pair.empty()) json["host"] = check.host;
  else json["pair"] = check.pair;
  json["check"] = check.check;
  json["verdict"] = verdict_name(check.verdict);
  json["observed"] = check.observed;
  json["fix"] = check.fix;
  return json;
}

}  // namespace xft::fabric
