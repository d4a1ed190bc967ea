#include "fabric/facts.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include "launcher/facts.h"

namespace xft::fabric {
namespace {

std::string trim(const std::string& text) {
  auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  auto end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int to_int(const std::string& text, int fallback) {
  try {
    std::size_t used = 0;
    int value = std::stoi(trim(text), &used);
    return value;
  } catch (...) {
    return fallback;
  }
}

// A "$ CMD" section ends with "[exit N]" or is "[missing]".
ToolRun tool_run(const std::map<std::string, std::string>& sections, const std::string& name) {
  ToolRun run;
  auto found = sections.find("$ " + name);
  if (found == sections.end()) return run;
  auto lines = lines_of(found->second);
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  if (lines.empty() || lines.back() == "[missing]") return run;
  run.present = true;
  if (lines.back().rfind("[exit ", 0) == 0) {
    run.exit_status = to_int(lines.back().substr(6), 255);
    lines.pop_back();
  }
  for (const auto& line : lines) run.output += line + "\n";
  return run;
}

std::string section(const std::map<std::string, std::string>& sections, const std::string& name) {
  auto found = sections.find(name);
  return found == sections.end() ? std::string() : trim(found->second);
}

bool has_section(const std::map<std::string, std::string>& sections, const std::string& name) {
  return sections.count(name) > 0;
}

std::string first_line(const std::string& text) { return trim(text.substr(0, text.find('\n'))); }

}  // namespace

const NetInterface* FabricFacts::interface(const std::string& name) const {
  for (const auto& i : interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

const RdmaDevice* FabricFacts::device(const std::string& name) const {
  for (const auto& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

std::string fabric_probe_script() {
  // Every file goes out as "==> PATH <==" + content, every tool as
  // "==> $ CMD <==" + output + "[exit N]" (or "[missing]"); readlink and ls
  // results as "==> readlink PATH <==" / "==> ls PATH <==". LC_ALL=C keeps
  // the tools' words untranslated.
  return R"SH(export LC_ALL=C
provider=$1
r=${XFT_FABRIC_ROOT:-}
hdr() { printf '==> %s <==\n' "$1"; }
show() { [ -r "$r$1" ] && { hdr "$1"; cat "$r$1"; echo; }; }
tool() {
  label=$1; shift
  hdr "\$ $label"
  if command -v "$1" >/dev/null 2>&1; then "$@" 2>&1; echo "[exit $?]"; else echo "[missing]"; fi
}
# EFA's libfabric, when installed, is the one the pair workers load: fi_info
# answers for it (EFA's fi_info if there, else PATH's run against it).
fi_info=fi_info
)SH" + launcher::efa_libfabric_probe_shell() + R"SH(if [ -n "$efa" ]; then
  fi_bin=fi_info
  [ -x "$r/opt/amazon/efa/bin/fi_info" ] && fi_bin=$r/opt/amazon/efa/bin/fi_info
  efa_fi_info() { LD_LIBRARY_PATH="$r$efa${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$fi_bin" "$@"; }
  command -v "$fi_bin" >/dev/null 2>&1 && fi_info=efa_fi_info
fi
tool "fi_info --version" $fi_info --version
tool "fi_info -l" $fi_info -l
tool "fi_info -p" $fi_info -p "$provider" -t FI_EP_RDM
hdr "provider"; echo "$provider"
erdma=
for d in "$r"/sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  p=${d#"$r"}; n=${d##*/}
  hdr "readlink $p/device/driver"; readlink "$d/device/driver"; echo
  show "$p/node_guid"; show "$p/device/numa_node"
  hdr "ls $p/device/net"; ls "$d/device/net" 2>/dev/null; echo
  for port in "$d"/ports/*; do
    [ -e "$port" ] || continue
    q=${port#"$r"}
    show "$q/state"; show "$q/phys_state"; show "$q/link_layer"; show "$q/gid_attrs/ndevs/0"
  done
  case $(readlink "$d/device/driver") in */erdma) erdma="$erdma $n" ;; esac
done
for i in "$r"/sys/class/net/*; do
  [ -e "$i" ] || continue
  p=${i#"$r"}
  show "$p/address"; show "$p/mtu"; show "$p/device/numa_node"
done
tool "ip -o addr show" ip -o addr show
hdr "ulimit -l"; ulimit -l
if [ -n "$erdma" ]; then
  tool "eadm ver" eadm ver
  for n in $erdma; do
    tool "eadm conf -d $n -t cc" eadm conf -d "$n" -t cc
    tool "eadm conf -d $n -t dack" eadm conf -d "$n" -t dack
  done
fi
tool "mpirun --version" mpirun --version
hdr "numactl"; command -v numactl || true
)SH";
}

std::vector<std::string> libfabric_env(const FabricFacts& facts) {
  if (facts.efa_libfabric_dir.empty()) return {};
  return {"env", "LD_LIBRARY_PATH=" + launcher::efa_library_path(facts.efa_libfabric_dir, facts.ld_library_path)};
}

std::map<std::string, std::string> split_sections(const std::string& dump) {
  auto files = launcher::parse_fact_dump(dump);
  return {files.begin(), files.end()};
}

std::string parse_libfabric_version(const std::string& output) {
  for (const auto& line : lines_of(output))
    if (line.rfind("libfabric:", 0) == 0) return trim(line.substr(10));
  return "";
}

std::vector<std::string> parse_provider_list(const std::string& output) {
  // Provider names start in column 0 and end with ':'; their details are indented.
  std::vector<std::string> providers;
  for (const auto& line : lines_of(output)) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line.back() != ':') continue;
    providers.push_back(line.substr(0, line.size() - 1));
  }
  return providers;
}

std::vector<FiEndpoint> parse_fi_info(const std::string& output) {
  std::vector<FiEndpoint> endpoints;
  for (const auto& line : lines_of(output)) {
    std::string text = trim(line);
    auto colon = text.find(':');
    if (colon == std::string::npos) continue;
    std::string key = text.substr(0, colon), value = trim(text.substr(colon + 1));
    if (key == "provider" && line.rfind("provider:", 0) == 0) {
      endpoints.push_back({value, "", "", ""});
    } else if (!endpoints.empty()) {
      if (key == "fabric") endpoints.back().fabric = value;
      else if (key == "domain") endpoints.back().domain = value;
      else if (key == "type") endpoints.back().type = value;
    }
  }
  return endpoints;
}

std::map<std::string, std::vector<std::string>> parse_ip_addr(const std::string& output) {
  // "2: eth0    inet 10.1.2.11/24 brd 10.1.2.255 scope global eth0\       valid_lft ..."
  std::map<std::string, std::vector<std::string>> addresses;
  for (const auto& line : lines_of(output)) {
    std::istringstream in(line);
    std::string index, name, family, address;
    if (!(in >> index >> name >> family >> address)) continue;
    if (family != "inet" && family != "inet6") continue;
    name = name.substr(0, name.find('@'));
    addresses[name].push_back(address);
  }
  return addresses;
}

std::string parse_eadm_version(const std::string& output) {
  static const std::regex version(R"((\d+\.\d+\.\d+(?:[-.]\w+)?))");
  // The driver's version when eadm names it, else the first version printed.
  std::smatch match;
  for (const auto& line : lines_of(output))
    if (line.find("driver") != std::string::npos && std::regex_search(line, match, version)) return "driver " + match[1].str();
  if (std::regex_search(output, match, version)) return match[1];
  return "";
}

std::optional<int> parse_eadm_value(const std::string& output) {
  // The value follows the last colon of a line ("cc: 1"); an error line has none.
  static const std::regex number(R"(:\s*(-?\d+)\s*$)");
  for (const auto& line : lines_of(output)) {
    std::smatch match;
    std::string text = trim(line);
    if (std::regex_search(text, match, number)) return std::stoi(match[1]);
  }
  return std::nullopt;
}

std::string sysfs_state_word(const std::string& text) {
  std::string value = trim(text);
  auto colon = value.find(':');
  return colon == std::string::npos ? value : trim(value.substr(colon + 1));
}

std::string guid_from_mac(const std::string& mac) {
  unsigned b[6];
  if (std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%02x%02x:%02xff:fe%02x:%02x%02x", b[0] ^ 0x02, b[1], b[2], b[3], b[4], b[5]);
  return text;
}

Expected<FabricFacts> parse_fabric_facts(const std::string& dump, const std::string& host) {
  auto sections = split_sections(dump);
  if (!has_section(sections, "ulimit -l"))
    return make_error(host + ": the fabric probe printed no 'ulimit -l' section (did the shell script run?)");
  FabricFacts facts;
  facts.host = host;

  facts.efa_libfabric_dir = section(sections, launcher::kEfaLibfabricSection);
  facts.ld_library_path = section(sections, launcher::kLdLibraryPathSection);
  auto version = tool_run(sections, "fi_info --version");
  facts.have_libfabric = version.present && version.exit_status == 0;
  facts.libfabric_version = parse_libfabric_version(version.output);
  auto list = tool_run(sections, "fi_info -l");
  if (list.present && list.exit_status == 0) facts.providers = parse_provider_list(list.output);
  facts.endpoint_query = section(sections, "provider");
  auto endpoints = tool_run(sections, "fi_info -p");
  if (endpoints.present) {
    facts.endpoints = parse_fi_info(endpoints.output);
    if (facts.endpoints.empty()) facts.endpoint_error = first_line(endpoints.output);
  }

  // RDMA devices: every /sys/class/infiniband/NAME/... section.
  const std::string ib = "/sys/class/infiniband/";
  std::map<std::string, RdmaDevice> devices;
  for (const auto& [name, content] : sections) {
    std::string path = name;
    for (const char* prefix : {"readlink ", "ls "})
      if (path.rfind(prefix, 0) == 0) path = path.substr(std::string(prefix).size());
    if (path.rfind(ib, 0) != 0) continue;
    std::string rest = path.substr(ib.size());
    std::string device = rest.substr(0, rest.find('/'));
    std::string attribute = rest.substr(device.size());
    auto& d = devices[device];
    d.name = device;
    std::string value = trim(content);
    if (name.rfind("readlink ", 0) == 0 && attribute == "/device/driver") {
      d.driver = value.substr(value.rfind('/') + 1);
    } else if (name.rfind("ls ", 0) == 0 && attribute == "/device/net") {
      if (!value.empty()) d.netdev = first_line(value);
    } else if (attribute == "/node_guid") {
      d.node_guid = value;
    } else if (attribute == "/device/numa_node") {
      d.numa_node = to_int(value, -1);
    } else if (attribute.rfind("/ports/", 0) == 0) {
      std::string port_rest = attribute.substr(7);
      int number = to_int(port_rest.substr(0, port_rest.find('/')), 0);
      std::string what = port_rest.substr(port_rest.find('/') + 1);
      auto port = std::find_if(d.ports.begin(), d.ports.end(), [&](auto& p) { return p.number == number; });
      if (port == d.ports.end()) {
        d.ports.push_back({number, "", "", ""});
        port = d.ports.end() - 1;
      }
      if (what == "state") port->state = sysfs_state_word(value);
      else if (what == "phys_state") port->phys_state = sysfs_state_word(value);
      else if (what == "link_layer") port->link_layer = value;
      else if (what == "gid_attrs/ndevs/0" && d.netdev.empty()) d.netdev = value;  // RoCE: the GID's interface
    }
  }

  const std::string net = "/sys/class/net/";
  std::map<std::string, NetInterface> interfaces;
  for (const auto& [name, content] : sections) {
    if (name.rfind(net, 0) != 0) continue;
    std::string rest = name.substr(net.size());
    std::string iface = rest.substr(0, rest.find('/'));
    std::string attribute = rest.substr(iface.size());
    auto& i = interfaces[iface];
    i.name = iface;
    if (attribute == "/address") i.mac = trim(content);
    else if (attribute == "/mtu") i.mtu = to_int(content, 0);
    else if (attribute == "/device/numa_node") i.numa_node = to_int(content, -1);
  }
  auto ip = tool_run(sections, "ip -o addr show");
  for (auto& [iface, addresses] : parse_ip_addr(ip.output))
    if (interfaces.count(iface)) interfaces[iface].addresses = addresses;
  for (auto& [_, i] : interfaces) facts.interfaces.push_back(i);

  // eRDMA devices sit on their own PCI function: their interface is the one
  // whose MAC gives their node GUID. Others list it under device/net.
  for (auto& [_, d] : devices) {
    if (d.driver == "erdma" || d.netdev.empty()) {
      for (const auto& i : facts.interfaces)
        if (!d.node_guid.empty() && guid_from_mac(i.mac) == d.node_guid) d.netdev = i.name;
    }
    // Devices on an auxiliary bus (irdma) report no NUMA node: their interface's is theirs.
    if (const auto* i = facts.interface(d.netdev); i && d.numa_node < 0) d.numa_node = i->numa_node;
    std::sort(d.ports.begin(), d.ports.end(), [](auto& a, auto& b) { return a.number < b.number; });
    facts.devices.push_back(d);
  }

  std::string memlock = section(sections, "ulimit -l");
  if (memlock != "unlimited") {
    try {
      facts.memlock_kib = std::stoull(memlock);
    } catch (...) {
      return make_error(host + ": 'ulimit -l' printed '" + memlock + "', not a number or 'unlimited'");
    }
  }

  auto eadm = tool_run(sections, "eadm ver");
  facts.have_eadm = eadm.present;
  if (eadm.present && eadm.exit_status == 0) facts.eadm_version = parse_eadm_version(eadm.output);
  for (const auto& d : facts.devices) {
    for (auto [type, target] : {std::pair{"cc", &facts.congestion_control}, std::pair{"dack", &facts.delayed_ack}}) {
      auto run = tool_run(sections, "eadm conf -d " + d.name + " -t " + type);
      if (!run.present) continue;
      EadmSetting setting{d.name, std::nullopt, first_line(run.output)};
      if (run.exit_status == 0) setting.value = parse_eadm_value(run.output);
      target->push_back(setting);
    }
  }

  auto mpirun = tool_run(sections, "mpirun --version");
  if (mpirun.present && mpirun.exit_status == 0) {
    // "mpirun (Open MPI) 4.1.4" -> "Open MPI 4.1.4"
    std::string line = first_line(mpirun.output);
    static const std::regex open_mpi(R"(\(([^)]+)\)\s+(\S+))");
    std::smatch match;
    facts.mpirun_version = std::regex_search(line, match, open_mpi) ? match[1].str() + " " + match[2].str() : line;
  }
  facts.have_numactl = !section(sections, "numactl").empty();
  return facts;
}

}  // namespace xft::fabric
