// Fabric facts: the parsers on recorded tool outputs, and the probe script run
// here on the recorded sysfs trees (tests/data/fabric) with the stub tools.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fabric/checks.h"
#include "fabric/facts.h"
#include "tests/unit/support/test_paths.h"

namespace xft::fabric {
namespace {

namespace fs = std::filesystem;
const std::string kData = xft::test::data_dir() + "/fabric";

// Recorded on Debian 12, libfabric 1.17.0 (fi_info -p 'tcp;ofi_rxm' -t FI_EP_RDM).
const char* kFiInfoTcp = R"(provider: tcp;ofi_rxm
    fabric: 192.0.2.0/24
    domain: eth0
    version: 117.0
    type: FI_EP_RDM
    protocol: FI_PROTO_RXM
provider: tcp;ofi_rxm
    fabric: 127.0.0.1/32
    domain: lo
    version: 117.0
    type: FI_EP_RDM
    protocol: FI_PROTO_RXM
)";

TEST(FabricFacts, FiInfoListingGivesProviderDomainAndType) {
  auto endpoints = parse_fi_info(kFiInfoTcp);
  ASSERT_EQ(endpoints.size(), 2u);
  EXPECT_EQ(endpoints[0].provider, "tcp;ofi_rxm");
  EXPECT_EQ(endpoints[0].fabric, "192.0.2.0/24");
  EXPECT_EQ(endpoints[0].domain, "eth0");
  EXPECT_EQ(endpoints[0].type, "FI_EP_RDM");
  EXPECT_EQ(endpoints[1].domain, "lo");
  EXPECT_TRUE(parse_fi_info("fi_getinfo: -61\n").empty());
}

TEST(FabricFacts, ProviderListAndVersion) {
  EXPECT_EQ(parse_provider_list("psm2:\n    version: 117.0\nofi_rxm:\n    version: 117.0\ntcp:\n    version: 117.0\n"),
            (std::vector<std::string>{"psm2", "ofi_rxm", "tcp"}));
  EXPECT_EQ(parse_libfabric_version("fi_info: 1.17.0\nlibfabric: 1.17.0\nlibfabric api: 1.17\n"), "1.17.0");
  EXPECT_EQ(parse_libfabric_version(""), "");
}

TEST(FabricFacts, IpAddrOneLineOutput) {
  auto addresses = parse_ip_addr(
      "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
      "4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever\n"
      "4: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever preferred_lft forever\n"
      "7: eth1@if8    inet 10.0.0.5/24 scope global eth1\n");
  EXPECT_EQ(addresses["eth0"], (std::vector<std::string>{"192.0.2.2/24", "fe80::1/64"}));
  EXPECT_EQ(addresses["eth1"], (std::vector<std::string>{"10.0.0.5/24"}));
}

TEST(FabricFacts, SmallParsers) {
  EXPECT_EQ(sysfs_state_word("4: ACTIVE\n"), "ACTIVE");
  EXPECT_EQ(sysfs_state_word("3: Disabled"), "Disabled");
  // EUI-64 from the MAC, universal/local bit flipped, as the erdma driver sets node_guid.
  EXPECT_EQ(guid_from_mac("00:16:3e:0a:01:11"), "0216:3eff:fe0a:0111");
  EXPECT_EQ(guid_from_mac("not a mac"), "");
  EXPECT_EQ(parse_eadm_value("cc: 1\n"), 1);
  EXPECT_EQ(parse_eadm_value("dack: 0\n"), 0);
  EXPECT_EQ(parse_eadm_value("Failed to find device erdma_9\n"), std::nullopt);
  EXPECT_EQ(parse_eadm_version("eadm version: 1.0.4\ndriver version: 0.2.38\n"), "driver 0.2.38");
}

TEST(FabricFacts, MissingUlimitSectionIsAnError) {
  auto facts = parse_fabric_facts("sh: 1: bad\n", "h01");
  ASSERT_FALSE(facts);
  EXPECT_NE(facts.error().message.find("h01: the fabric probe printed no 'ulimit -l' section"), std::string::npos);
}

// A probe's output on a host with EFA's libfabric, as the script prints it.
const char* kEfaDump = R"(==> $ fi_info --version <==
fi_info: 1.18.2amzn1.0
libfabric: 1.18.2amzn1.0
libfabric api: 1.18
[exit 0]
==> efa libfabric <==
/opt/amazon/efa/lib64
==> LD_LIBRARY_PATH <==
/usr/local/cuda/lib64
==> ulimit -l <==
unlimited
)";

TEST(FabricFacts, EfasLibfabricDirAndTheSessionsLibraryPath) {
  auto facts = parse_fabric_facts(kEfaDump, "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->efa_libfabric_dir, "/opt/amazon/efa/lib64");
  EXPECT_EQ(facts->ld_library_path, "/usr/local/cuda/lib64");
  EXPECT_EQ(facts->libfabric_version, "1.18.2amzn1.0");
  EXPECT_EQ(libfabric_env(*facts),
            (std::vector<std::string>{"env", "LD_LIBRARY_PATH=/opt/amazon/efa/lib64:/usr/local/cuda/lib64"}));
  facts->ld_library_path.clear();
  EXPECT_EQ(libfabric_env(*facts), (std::vector<std::string>{"env", "LD_LIBRARY_PATH=/opt/amazon/efa/lib64"}));
}

TEST(FabricFacts, NoEfaLibfabricNoEnvironment) {
  auto facts = parse_fabric_facts("==> $ fi_info --version <==\nlibfabric: 1.17.0\n[exit 0]\n==> ulimit -l <==\n64\n", "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->efa_libfabric_dir, "");
  EXPECT_TRUE(libfabric_env(*facts).empty());
}

// Runs the probe script on a recorded tree with the stub tools first on PATH.
std::string run_probe(const std::string& scenario, const std::string& provider, const std::string& flavor,
                      const std::string& eadm_conf) {
  fs::path bin = fs::temp_directory_path() / ("xft-fabric-unit-" + scenario + "-" + std::to_string(::getpid()));
  fs::create_directories(bin);
  for (const char* tool : {"fi_info", "eadm"})
    fs::copy_file(kData + "/stubs/" + tool, bin / tool, fs::copy_options::overwrite_existing);
  std::ofstream(bin / "fi_info.flavor") << flavor << "\n";
  std::ofstream(bin / "eadm.conf") << eadm_conf;
  std::ofstream(bin / "probe.sh") << fabric_probe_script();
  std::string command = "XFT_FABRIC_ROOT='" + kData + "/" + scenario + "' PATH='" + bin.string() +
                        "':\"$PATH\" sh '" + (bin / "probe.sh").string() + "' '" + provider + "'";
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    pclose(pipe);
  }
  fs::remove_all(bin);
  return out;
}

// A root with EFA's libfabric.so.1 in LIB_DIR (lib64 or lib) and, when
// `efa_fi_info`, EFA's own fi_info; a stand-in fi_info on PATH too. Each
// fi_info says who it is, and answers a version only when run against EFA's
// library (its directory first on LD_LIBRARY_PATH), as the probe must run it.
class EfaProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xft-fabric-unit-efa-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "probe.sh") << fabric_probe_script();
    write_fi_info(dir_ / "bin" / "fi_info", "path");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void install(const std::string& lib_dir, bool efa_fi_info) {
    fs::create_directories(dir_ / "root" / lib_dir);
    std::ofstream(dir_ / "root" / lib_dir / "libfabric.so.1") << "";
    if (efa_fi_info) {
      fs::create_directories(dir_ / "root/opt/amazon/efa/bin");
      write_fi_info(dir_ / "root/opt/amazon/efa/bin/fi_info", "efa");
    }
  }

  std::string run(const std::string& ld_library_path) {
    std::string command = "LD_LIBRARY_PATH='" + ld_library_path + "' XFT_FABRIC_ROOT='" + (dir_ / "root").string() +
                          "' PATH='" + (dir_ / "bin").string() + "':\"$PATH\" sh '" + (dir_ / "probe.sh").string() +
                          "' 'tcp;ofi_rxm'";
    std::string out;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[4096];
      size_t n;
      while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
      pclose(pipe);
    }
    return out;
  }

  // Prints "libfabric: 1.18.2amzn1.0-WHO" when EFA's lib dir (under the root) leads LD_LIBRARY_PATH.
  void write_fi_info(const fs::path& path, const std::string& who) {
    std::ofstream(path) << "#!/bin/sh\ncase $LD_LIBRARY_PATH in\n  '" << (dir_ / "root").string()
                        << "'/opt/amazon/efa/lib*) echo 'libfabric: 1.18.2amzn1.0-" << who
                        << "' ;;\n  *) echo 'libfabric: system' ;;\nesac\n";
    fs::permissions(path, fs::perms::owner_all);
  }

  fs::path dir_;
};

TEST_F(EfaProbe, Lib64WithItsOwnFiInfo) {
  install("opt/amazon/efa/lib64", true);
  auto facts = parse_fabric_facts(run("/usr/local/cuda/lib64"), "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->efa_libfabric_dir, "/opt/amazon/efa/lib64");
  EXPECT_EQ(facts->ld_library_path, "/usr/local/cuda/lib64");
  EXPECT_EQ(facts->libfabric_version, "1.18.2amzn1.0-efa");  // EFA's fi_info, run on EFA's library
}

TEST_F(EfaProbe, LibWithPathsFiInfo) {
  install("opt/amazon/efa/lib", false);
  auto facts = parse_fabric_facts(run(""), "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->efa_libfabric_dir, "/opt/amazon/efa/lib");
  EXPECT_EQ(facts->ld_library_path, "");
  EXPECT_EQ(facts->libfabric_version, "1.18.2amzn1.0-path");  // PATH's fi_info, run on EFA's library
}

TEST_F(EfaProbe, NoEfaLibfabricLeavesFiInfoAlone) {
  fs::create_directories(dir_ / "root/opt/amazon/efa/bin");  // the tools without the library do not count
  write_fi_info(dir_ / "root/opt/amazon/efa/bin/fi_info", "efa");
  auto facts = parse_fabric_facts(run(""), "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->efa_libfabric_dir, "");
  EXPECT_EQ(facts->libfabric_version, "system");
}

TEST(FabricFacts, ProbeScriptOnTheErdmaTree) {
  auto facts = parse_fabric_facts(run_probe("erdma-ok", "verbs;ofi_rxm", "verbs", "erdma_0 cc 1\nerdma_0 dack 0\n"), "h01");
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->libfabric_version, "1.17.0");
  ASSERT_EQ(facts->endpoints.size(), 1u);
  EXPECT_EQ(facts->endpoints[0].domain, "erdma_0");
  ASSERT_EQ(facts->devices.size(), 1u);
  const auto& device = facts->devices[0];
  EXPECT_EQ(device.name, "erdma_0");
  EXPECT_EQ(device.driver, "erdma");
  EXPECT_EQ(device.netdev, "eth0");  // through node_guid <- MAC
  EXPECT_EQ(device.numa_node, 0);
  ASSERT_EQ(device.ports.size(), 1u);
  EXPECT_EQ(device.ports[0].state, "ACTIVE");
  EXPECT_EQ(device.ports[0].phys_state, "LinkUp");
  EXPECT_EQ(device.ports[0].link_layer, "Ethernet");
  EXPECT_EQ(facts->eadm_version, "driver 0.2.38");
  ASSERT_EQ(facts->congestion_control.size(), 1u);
  EXPECT_EQ(facts->congestion_control[0].value, 1);
  ASSERT_EQ(facts->delayed_ack.size(), 1u);
  EXPECT_EQ(facts->delayed_ack[0].value, 0);
  const auto* eth0 = facts->interface("eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->mtu, 1500);
  EXPECT_EQ(eth0->mac, "00:16:3e:0a:01:11");
}

TEST(FabricFacts, ProbeScriptOnTheIrdmaTree) {
  auto facts = parse_fabric_facts(run_probe("irdma-psm3", "psm3", "psm3", ""), "h04");
  ASSERT_TRUE(facts) << facts.error().message;
  ASSERT_EQ(facts->devices.size(), 1u);
  EXPECT_EQ(facts->devices[0].driver, "irdma");
  EXPECT_EQ(facts->devices[0].netdev, "eth0");  // through the GID's interface
  EXPECT_EQ(facts->devices[0].numa_node, 1);    // the interface's: irdma's auxiliary device has none
  EXPECT_FALSE(facts->have_eadm);               // eadm is only asked about eRDMA devices
  ASSERT_EQ(facts->endpoints.size(), 1u);
  EXPECT_EQ(facts->endpoints[0].provider, "psm3");
}

TEST(FabricFacts, ProbeScriptOnThePortDownTreeGivesTheFix) {
  auto facts = parse_fabric_facts(run_probe("erdma-port-down", "verbs;ofi_rxm", "verbs", "erdma_0 cc 1\nerdma_0 dack 0\n"), "h06");
  ASSERT_TRUE(facts) << facts.error().message;
  HostExpectation expect{"h06", "verbs;ofi_rxm", "eth0", "h06", {0}, 0.0};
  auto checks = host_checks(*facts, expect);
  auto row = std::find_if(checks.begin(), checks.end(), [](auto& c) { return c.check == "device erdma_0"; });
  ASSERT_NE(row, checks.end());
  EXPECT_EQ(row->verdict, Verdict::fail);
  EXPECT_EQ(row->observed, "erdma, port 1 DOWN Disabled, Ethernet, NUMA 0, eth0");
  EXPECT_EQ(row->fix,
            "bring the link up: `ip link set eth0 up`; if it stays DOWN, the ERI is not attached to the instance (ECS "
            "console: bind an eRDMA interface)");
}

}  // namespace
}  // namespace xft::fabric
