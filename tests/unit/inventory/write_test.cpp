#include <gtest/gtest.h>

#include "inventory/load.h"
#include "inventory/show.h"
#include "inventory/write.h"
#include "tests/unit/support/test_paths.h"

using namespace xft::inventory;

namespace {

Inventory parse_ok(const std::string& yaml) {
  auto parsed = parse_inventory(yaml, "inv.yaml");
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : Inventory{};
}

// Everything a host is, as one comparable line.
std::string describe(const Host& h) {
  return h.name + " " + h.address + " " + h.user + " " + std::to_string(h.port) + " " + ranks_label(h.ranks) + " " +
         h.fabric.provider + " " + h.fabric.iface + " " + h.shared + " " + auth_label(h.credentials);
}

void expect_round_trip(const Inventory& inventory) {
  auto again = parse_inventory(to_yaml(inventory), "again.yaml");
  ASSERT_TRUE(again) << again.error().message << "\n" << to_yaml(inventory);
  ASSERT_EQ(again->hosts.size(), inventory.hosts.size());
  for (size_t i = 0; i < inventory.hosts.size(); ++i)
    EXPECT_EQ(describe(again->hosts[i]), describe(inventory.hosts[i]));
  EXPECT_EQ(again->groups, inventory.groups);
}

}  // namespace

TEST(ToYaml, MinimalFileIsWrittenCompactly) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/minimal.yaml");
  ASSERT_TRUE(inventory);
  EXPECT_EQ(to_yaml(*inventory),
            "defaults:\n"
            "  password_env: XFT_SSH_PASSWORD\n"
            "  fabric: {provider: \"verbs;ofi_rxm\", iface: eth0}\n"
            "  shared: /mnt\n"
            "hosts:\n"
            "  - name: \"node[01-04]\"\n"
            "    address: \"192.168.0.[1-4]\"\n"
            "  - name: head\n"
            "    address: 192.168.0.9\n"
            "    password_env: HEAD_PASSWORD\n"
            "    fabric: {provider: \"tcp;ofi_rxm\", iface: eth1}\n");
  expect_round_trip(*inventory);
}

TEST(ToYaml, RunsBreakWhereNumbersOrSettingsChange) {
  auto inventory = parse_ok(R"(
hosts:
  - {name: n08, address: 10.0.0.8}
  - {name: n09, address: 10.0.0.9}
  - {name: n10, address: 10.0.0.10}
  - {name: n12, address: 10.0.0.11}
  - {name: n13, address: 10.0.0.12, ranks: per-numa}
  - {name: x, address: 10.0.0.13}
)");
  EXPECT_EQ(to_yaml(inventory),
            "hosts:\n"
            "  - name: \"n[08-10]\"\n"
            "    address: \"10.0.0.[8-10]\"\n"
            "  - name: n12\n"
            "    address: 10.0.0.11\n"
            "  - name: n13\n"
            "    address: 10.0.0.12\n"
            "    ranks: per-numa\n"
            "  - name: x\n"
            "    address: 10.0.0.13\n");
  expect_round_trip(inventory);
}

TEST(ToYaml, EverythingRoundTrips) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/groups.yaml");
  ASSERT_TRUE(inventory);
  expect_round_trip(*inventory);
  EXPECT_NE(to_yaml(*inventory).find("nfs:\n  server: head\n  export: /srv/xft\n"), std::string::npos);
}

TEST(ToYaml, QuotesWhatYamlWouldMisread) {
  Inventory inventory;
  Host host;
  host.name = "a";
  host.address = "10.0.0.1";
  host.user = "null";
  host.shared = "/data with space/#x: {y}";
  inventory.hosts.push_back(host);
  EXPECT_EQ(to_yaml(inventory),
            "defaults:\n  user: \"null\"\n  shared: \"/data with space/#x: {y}\"\n"
            "hosts:\n  - name: a\n    address: 10.0.0.1\n");
  expect_round_trip(inventory);
}
