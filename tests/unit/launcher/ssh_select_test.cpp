#include "launcher/select_hosts.h"

#include <gtest/gtest.h>

namespace xft::launcher {
namespace {

inventory::Inventory four_hosts() {
  inventory::Inventory inv;
  for (int i = 1; i <= 4; ++i) {
    inventory::Host host;
    host.name = "h0" + std::to_string(i);
    host.address = "10.9.9.1" + std::to_string(i);
    inv.hosts.push_back(host);
  }
  inventory::Host head;
  head.name = "head";
  head.address = "10.9.9.2";
  inv.hosts.push_back(head);
  inv.groups["compute"] = {"h03", "h01"};
  return inv;
}

std::vector<std::string> names(const Expected<std::vector<inventory::Host>>& hosts) {
  std::vector<std::string> out;
  if (!hosts) return {"error: " + hosts.error().message};
  for (const auto& host : *hosts) out.push_back(host.name);
  return out;
}

using Names = std::vector<std::string>;

TEST(SelectHosts, EmptyPatternIsEveryHost) {
  EXPECT_EQ(names(select_hosts(four_hosts(), "")), (Names{"h01", "h02", "h03", "h04", "head"}));
}

TEST(SelectHosts, NamesRangesGroupsGlobsAndAddressesInInventoryOrder) {
  auto inv = four_hosts();
  EXPECT_EQ(names(select_hosts(inv, "head,h02")), (Names{"h02", "head"}));
  EXPECT_EQ(names(select_hosts(inv, "h[02-04]")), (Names{"h02", "h03", "h04"}));
  EXPECT_EQ(names(select_hosts(inv, "h[01,04],head")), (Names{"h01", "h04", "head"}));
  EXPECT_EQ(names(select_hosts(inv, "compute")), (Names{"h01", "h03"}));
  EXPECT_EQ(names(select_hosts(inv, "h0*")), (Names{"h01", "h02", "h03", "h04"}));
  EXPECT_EQ(names(select_hosts(inv, "10.9.9.12,h02,compute")), (Names{"h01", "h02", "h03"}));
}

TEST(SelectHosts, AnItemMatchingNothingIsAnError) {
  auto inv = four_hosts();
  EXPECT_EQ(names(select_hosts(inv, "h01,h09")),
            (Names{"error: --hosts: h09 is not an inventory host or group (see xftctl inventory show)"}));
  EXPECT_EQ(names(select_hosts(inv, "x*")),
            (Names{"error: --hosts: x* matches no inventory host or group (see xftctl inventory show)"}));
  EXPECT_EQ(names(select_hosts(inv, "h[03-05]")),
            (Names{"error: --hosts: h05 is not an inventory host or group (see xftctl inventory show)"}));
  EXPECT_FALSE(select_hosts(inv, "h[04-01]").ok());
}

}  // namespace
}  // namespace xft::launcher
