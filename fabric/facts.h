// Fabric facts of one host: libfabric and its providers, RDMA devices and
// their ports from sysfs, network interfaces, memlock, eRDMA's eadm settings,
// Open MPI and numactl. One POSIX shell script prints everything in one SSH
// round trip; one parser reads its output, so tests feed recorded outputs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::fabric {

struct RdmaPort {
  int number = 0;
  std::string state;       // "ACTIVE" (sysfs says "4: ACTIVE")
  std::string phys_state;  // "LinkUp" (sysfs says "5: LinkUp")
  std::string link_layer;  // "Ethernet", "InfiniBand", "Unknown"
};

struct RdmaDevice {
  std::string name;       // erdma_0, rdmap0s6, irdma0 ...
  std::string driver;     // the device/driver link's target name: erdma, efa, irdma, mlx5_core
  std::string node_guid;  // "0216:3eff:fe12:3456"
  int numa_node = -1;
  std::string netdev;     // the interface it belongs to; empty when none was found
  std::vector<RdmaPort> ports;
};

struct NetInterface {
  std::string name;
  std::string mac;  // "00:16:3e:12:34:56"
  int mtu = 0;
  int numa_node = -1;
  std::vector<std::string> addresses;  // "10.0.0.11/24", IPv4 and IPv6
};

struct FiEndpoint {
  std::string provider;  // "tcp;ofi_rxm"
  std::string fabric;    // "10.0.0.0/24"
  std::string domain;    // "eth0", "erdma_0", "rdmap0s6-rdm"
  std::string type;      // "FI_EP_RDM"
};

// A tool's run: was it there, its exit status and output.
struct ToolRun {
  bool present = false;
  int exit_status = 0;
  std::string output;
};

struct EadmSetting {
  std::string device;
  std::optional<int> value;  // empty: eadm printed no number
  std::string raw;           // eadm's output, first line
};

struct FabricFacts {
  std::string host;
  bool have_libfabric = false;     // fi_info answered --version
  std::string libfabric_version;   // "1.17.0"
  std::vector<std::string> providers;  // fi_info -l, in its order
  std::string endpoint_query;          // the provider asked for (fi_info -p P -t FI_EP_RDM)
  std::vector<FiEndpoint> endpoints;   // its answer
  std::string endpoint_error;          // fi_info's message when it found none
  // EFA's own libfabric (aws-efa-installer): the directory holding its
  // libfabric.so.1, /opt/amazon/efa/lib64 or /opt/amazon/efa/lib; empty: none
  // (the system's). fi_info then ran against it, EFA's fi_info when installed.
  std::string efa_libfabric_dir;
  std::string ld_library_path;  // the SSH session's own, read only with EFA's libfabric
  std::vector<RdmaDevice> devices;     // sorted by name
  std::vector<NetInterface> interfaces;  // sorted by name
  std::optional<std::uint64_t> memlock_kib;  // empty: unlimited
  bool have_eadm = false;
  std::string eadm_version;
  std::vector<EadmSetting> congestion_control;  // eadm conf -d DEV -t cc, per eRDMA device
  std::vector<EadmSetting> delayed_ack;         // eadm conf -d DEV -t dack
  std::string mpirun_version;  // "Open MPI 4.1.4"; empty: no mpirun
  bool have_numactl = false;

  const NetInterface* interface(const std::string& name) const;
  const RdmaDevice* device(const std::string& name) const;
};

// The script; run it as `sh -s -- PROVIDER` with it on stdin. Paths are read
// under $XFT_FABRIC_ROOT when set (recorded trees in tests), else under /.
std::string fabric_probe_script();

// The argv prefix that makes a program started on the host load the
// libfabric its facts name: {"env", "LD_LIBRARY_PATH=EFA_DIR[:the session's]"}
// with EFA's (its ABI is libfabric.so.1's, so xftctl runs on it), else none.
std::vector<std::string> libfabric_env(const FabricFacts& facts);

// Splits the script's output into sections ("==> NAME <==" lines).
std::map<std::string, std::string> split_sections(const std::string& dump);

// The one parser; `origin` names the host for errors.
Expected<FabricFacts> parse_fabric_facts(const std::string& dump, const std::string& host);

// Parsers of single tool outputs (unit tested on recorded outputs).
std::string parse_libfabric_version(const std::string& fi_info_version);
std::vector<std::string> parse_provider_list(const std::string& fi_info_list);
std::vector<FiEndpoint> parse_fi_info(const std::string& fi_info_output);
// `ip -o addr show`: interface -> addresses.
std::map<std::string, std::vector<std::string>> parse_ip_addr(const std::string& ip_output);
std::string parse_eadm_version(const std::string& eadm_ver_output);
std::optional<int> parse_eadm_value(const std::string& eadm_conf_output);
// "4: ACTIVE" -> "ACTIVE"
std::string sysfs_state_word(const std::string& text);
// The node GUID an eRDMA device derives from its interface's MAC (EUI-64:
// ff:fe in the middle, the universal/local bit flipped), as sysfs prints it.
std::string guid_from_mac(const std::string& mac);

}  // namespace xft::fabric
