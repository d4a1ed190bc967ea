// Where mpirun runs: here unless a host is behind a bastion, then on the first
// host; the spec it runs there; the ssh forward command `run qwen --serve` prints.
#include <gtest/gtest.h>

#include "inventory/load.h"
#include "launcher/launch_site.h"

namespace xft::launcher {
namespace {

std::vector<inventory::Host> hosts_of(const std::string& yaml) {
  auto parsed = inventory::parse_inventory(yaml, "inventory.yaml");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? parsed->hosts : std::vector<inventory::Host>{};
}

const char* kBehindBastion =
    "defaults:\n"
    "  user: xftuser\n"
    "  jump: ops@bastion.example.com:2222\n"
    "hosts:\n"
    "  - name: h01\n"
    "    address: 10.9.0.11\n"
    "  - name: h02\n"
    "    address: 10.9.0.12\n";

TEST(LaunchSite, HereWhenNoHostIsBehindABastion) {
  auto site = launch_site_for(hosts_of("hosts:\n  - name: h01\n    address: 10.9.0.11\n"
                                       "  - name: h02\n    address: 10.9.0.12\n"));
  EXPECT_FALSE(site.on_first_host);
  EXPECT_EQ(site.host, "");
  EXPECT_EQ(site.reason, "no host is behind a bastion: mpirun runs on this machine");
}

TEST(LaunchSite, HereForAPlanWithoutHosts) {
  EXPECT_FALSE(launch_site_for({}).on_first_host);
}

TEST(LaunchSite, FirstHostWhenTheHostsAreBehindABastion) {
  auto site = launch_site_for(hosts_of(kBehindBastion));
  EXPECT_TRUE(site.on_first_host);
  EXPECT_EQ(site.host, "h01");
  EXPECT_EQ(site.address, "10.9.0.11");
  EXPECT_EQ(site.user, "xftuser");
  ASSERT_EQ(site.jump.size(), 1u);
  EXPECT_EQ(site.jump[0].text(), "ops@bastion.example.com:2222");
  EXPECT_EQ(site.reason, "h01 is reached through bastion ops@bastion.example.com:2222: mpirun runs on h01 so rank "
                         "traffic never crosses the bastion");
}

TEST(LaunchSite, FirstHostWhenOnlyALaterHostIsBehindABastion) {
  auto site = launch_site_for(hosts_of("hosts:\n  - name: h01\n    address: 10.9.0.11\n"
                                       "  - name: h02\n    address: 10.9.0.12\n    jump: bastion\n"));
  EXPECT_TRUE(site.on_first_host);
  EXPECT_EQ(site.host, "h01");
  EXPECT_TRUE(site.jump.empty());
  EXPECT_EQ(site.reason, "h02 is reached through bastion bastion: mpirun runs on h01 so rank traffic never crosses "
                         "the bastion");
}

TEST(LaunchSite, SpecOnTheFirstHostUsesThatHostsOwnMpirunKeysAndKnownHosts) {
  MpirunSpec spec;
  spec.mpirun = "/opt/local/bin/mpirun";
  spec.as_root = true;
  spec.ssh = {"/home/me/.config/xftctl/id_ed25519", "/home/me/.config/xftctl/known_hosts", "xftuser", 22};
  spec.oob_subnet = "192.168.1.0/24";
  spec.iface = "eth1";
  spec.command = {"/shared/xftctl", "rank-probe"};
  auto site = launch_site_for(hosts_of(kBehindBastion));
  auto remote = mpirun_spec_on_first_host(spec, site);
  EXPECT_EQ(remote.mpirun, "mpirun");
  EXPECT_FALSE(remote.as_root);  // xftuser, not root
  EXPECT_EQ(remote.ssh.key, "");
  EXPECT_EQ(remote.ssh.known_hosts, "");
  EXPECT_EQ(remote.ssh.user, "xftuser");
  EXPECT_EQ(remote.oob_subnet, "");
  EXPECT_EQ(remote.iface, "eth1");
  EXPECT_EQ(remote.command, spec.command);
  site.user = "root";
  EXPECT_TRUE(mpirun_spec_on_first_host(spec, site).as_root);
}

TEST(LaunchSite, ForwardCommandGoesThroughEveryBastion) {
  auto site = launch_site_for(hosts_of(
      "defaults:\n  user: ubuntu\n  jump: [ops@outer:2200, inner]\nhosts:\n"
      "  - name: h01\n    address: 10.9.0.11\n    port: 2022\n"));
  EXPECT_EQ(ssh_forward_command(site, "127.0.0.1", 8000),
            (std::vector<std::string>{"ssh", "-J", "ops@outer:2200,ubuntu@inner", "-p", "2022", "-N", "-L",
                                      "8000:127.0.0.1:8000", "ubuntu@10.9.0.11"}));
  EXPECT_EQ(ssh_forward_command(site, "::1", 9000),
            (std::vector<std::string>{"ssh", "-J", "ops@outer:2200,ubuntu@inner", "-p", "2022", "-N", "-L",
                                      "9000:[::1]:9000", "ubuntu@10.9.0.11"}));
}

}  // namespace
}  // namespace xft::launcher
