#include <gtest/gtest.h>

#include "inventory/load.h"

using namespace xft::inventory;
using xft::Expected;

namespace {

std::string selected(const Inventory& inventory, const std::string& targets) {
  auto hosts = select_hosts(inventory, targets);
  if (!hosts) return "error: " + hosts.error().message;
  std::string names;
  for (const Host& host : *hosts) names += (names.empty() ? "" : " ") + host.name;
  return names;
}

}  // namespace

TEST(SelectHosts, AllGroupsNamesAndRanges) {
  auto inventory = load_inventory(XFT_TEST_DATA_DIR "/inventory/groups.yaml");
  ASSERT_TRUE(inventory);
  EXPECT_EQ(selected(*inventory, "all"), "node01 node02 head");
  EXPECT_EQ(selected(*inventory, "login"), "head");
  EXPECT_EQ(selected(*inventory, "head,node[01-02]"), "node01 node02 head");  // inventory order
  EXPECT_EQ(selected(*inventory, "node02,compute"), "node01 node02 head");   // each once
  EXPECT_EQ(selected(*inventory, "node[02]"), "node02");
}

TEST(SelectHosts, UnknownTargetsAreErrors) {
  auto inventory = load_inventory(XFT_TEST_DATA_DIR "/inventory/groups.yaml");
  ASSERT_TRUE(inventory);
  EXPECT_EQ(selected(*inventory, "node[01-03]"),
            "error: node03 is not an inventory host or group (see xftctl inventory show)");
  EXPECT_EQ(selected(*inventory, "head,"), "error: empty target in `head,` (write e.g. all, compute or node[01-04])");
  EXPECT_EQ(selected(*inventory, "node[2-1]"), "error: bad range `node[2-1]`: 2 > 1 (write the lower bound first: 1-2)");
}

namespace {

Inventory four_hosts() {
  Inventory inv;
  for (int i = 1; i <= 4; ++i) {
    Host host;
    host.name = "h0" + std::to_string(i);
    host.address = "10.9.9.1" + std::to_string(i);
    inv.hosts.push_back(host);
  }
  Host head;
  head.name = "head";
  head.address = "10.9.9.2";
  inv.hosts.push_back(head);
  inv.groups["compute"] = {"h03", "h01"};
  return inv;
}

std::vector<std::string> names(const Expected<std::vector<Host>>& hosts) {
  std::vector<std::string> out;
  if (!hosts) return {"error: " + hosts.error().message};
  for (const auto& host : *hosts) out.push_back(host.name);
  return out;
}

using Names = std::vector<std::string>;

TEST(SelectHostsPatterns, EmptyPatternIsEveryHost) {
  EXPECT_EQ(names(select_hosts(four_hosts(), "")), (Names{"h01", "h02", "h03", "h04", "head"}));
}

TEST(SelectHostsPatterns, NamesRangesGroupsGlobsAndAddressesInInventoryOrder) {
  auto inv = four_hosts();
  EXPECT_EQ(names(select_hosts(inv, "head,h02")), (Names{"h02", "head"}));
  EXPECT_EQ(names(select_hosts(inv, "h[02-04]")), (Names{"h02", "h03", "h04"}));
  EXPECT_EQ(names(select_hosts(inv, "h[01,04],head")), (Names{"h01", "h04", "head"}));
  EXPECT_EQ(names(select_hosts(inv, "compute")), (Names{"h01", "h03"}));
  EXPECT_EQ(names(select_hosts(inv, "h0*")), (Names{"h01", "h02", "h03", "h04"}));
  EXPECT_EQ(names(select_hosts(inv, "10.9.9.12,h02,compute")), (Names{"h01", "h02", "h03"}));
}

TEST(SelectHostsPatterns, AnItemMatchingNothingIsAnError) {
  auto inv = four_hosts();
  EXPECT_EQ(names(select_hosts(inv, "h01,h09")),
            (Names{"error: h09 is not an inventory host or group (see xftctl inventory show)"}));
  EXPECT_EQ(names(select_hosts(inv, "x*")),
            (Names{"error: x* matches no inventory host or group (see xftctl inventory show)"}));
  EXPECT_EQ(names(select_hosts(inv, "h[03-05]")),
            (Names{"error: h05 is not an inventory host or group (see xftctl inventory show)"}));
  EXPECT_FALSE(select_hosts(inv, "h[04-01]").ok());
}

}  // namespace
