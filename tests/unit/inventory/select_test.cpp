#include <gtest/gtest.h>

#include "inventory/load.h"

using namespace xft::inventory;

namespace {

std::string selected(const Inventory& inventory, const std::string& targets) {
  auto hosts = select_hosts(inventory, targets);
  if (!hosts) return "error: " + hosts.error().message;
  std::string names;
  for (const Host* host : *hosts) names += (names.empty() ? "" : " ") + host->name;
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
            "error: no host or group named `node03` in " XFT_TEST_DATA_DIR
            "/inventory/groups.yaml (see xftctl inventory show)");
  EXPECT_EQ(selected(*inventory, "head,"), "error: empty target in `head,` (write e.g. all, compute or node[01-04])");
  EXPECT_EQ(selected(*inventory, "node[2-1]"), "error: bad range `node[2-1]`: 2 > 1 (write the lower bound first: 1-2)");
}
