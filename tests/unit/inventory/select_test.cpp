#include <gtest/gtest.h>

#include "inventory/load.h"
#include "tests/unit/support/test_paths.h"

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
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/groups.yaml");
  ASSERT_TRUE(inventory);
  EXPECT_EQ(selected(*inventory, "all"), "node01 node02 head");
  EXPECT_EQ(selected(*inventory, "login"), "head");
  EXPECT_EQ(selected(*inventory, "head,node[01-02]"), "node01 node02 head");  // inventory order
  EXPECT_EQ(selected(*inventory, "node02,compute"), "node01 node02 head");   // each once
  EXPECT_EQ(selected(*inventory, "node[02]"), "node02");
}

TEST(SelectHosts, UnknownTargetsAreErrors) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/groups.yaml");
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

namespace {

// node01..node04 in two racks, a login host and one reached over IPv6.
Inventory racks() {
  Inventory inv;
  auto add = [&](const std::string& name, const std::string& address) {
    Host host;
    host.name = name;
    host.address = address;
    inv.hosts.push_back(host);
  };
  for (int i = 1; i <= 4; ++i) add("node0" + std::to_string(i), "10.0.0." + std::to_string(i));
  add("login01", "10.0.0.9");
  add("v6", "fd00::7");
  inv.groups["compute"] = {"node01", "node02", "node03", "node04"};
  inv.groups["rack1"] = {"node01", "node02"};
  inv.groups["rack2"] = {"node03", "node04"};
  inv.groups["login"] = {"login01"};
  inv.groups["spare"] = {};
  return inv;
}

std::string pick(const std::string& pattern) { return selected(racks(), pattern); }

}  // namespace

TEST(SelectHostsAnsible, ExclusionsRemoveWhatThePlainWordsName) {
  EXPECT_EQ(pick("all,!node01"), "node02 node03 node04 login01 v6");
  EXPECT_EQ(pick("compute,!node[03-04]"), "node01 node02");
  EXPECT_EQ(pick("!node01,compute"), "node02 node03 node04");  // order does not matter, as in Ansible
  EXPECT_EQ(pick("compute,!rack1,!node03"), "node04");
  EXPECT_EQ(pick("!node01"), "node02 node03 node04 login01 v6");  // only exclusions: all minus those
  EXPECT_EQ(pick("!compute,!fd00::7"), "login01");
}

TEST(SelectHostsAnsible, IntersectionsAndGroupsByAt) {
  EXPECT_EQ(pick("compute,&rack2"), "node03 node04");
  EXPECT_EQ(pick("&rack1"), "node01 node02");
  EXPECT_EQ(pick("rack1,login,&compute"), "node01 node02");
  EXPECT_EQ(pick("@compute,&@rack1,!node02"), "node01");
  EXPECT_EQ(pick("@rack[1-2]"), "node01 node02 node03 node04");
  EXPECT_EQ(pick("@rack*,!@rack2"), "node01 node02");
  EXPECT_EQ(pick("@all,!@compute"), "login01 v6");
  EXPECT_EQ(pick("rack*"), "node01 node02 node03 node04");  // a glob matches group names too
  EXPECT_EQ(pick("rack2,login0*"), "node03 node04 login01");
}

TEST(SelectHostsAnsible, ColonsSeparateExceptInRangesAndIpv6) {
  EXPECT_EQ(pick("compute:!node02"), "node01 node03 node04");
  EXPECT_EQ(pick("rack1:login"), "node01 node02 login01");
  EXPECT_EQ(pick("compute:&rack2:!node04"), "node03");
  EXPECT_EQ(pick("fd00::7"), "v6");
  EXPECT_EQ(pick("login01,fd00::7"), "login01 v6");
  EXPECT_EQ(pick(" compute , !node01 "), "node02 node03 node04");
}

TEST(SelectHostsAnsible, WordsThatMatchNothingAreNamed) {
  EXPECT_EQ(pick("comptue"), "error: comptue is not an inventory host or group (did you mean `compute`?)");
  EXPECT_EQ(pick("all,!nod01"), "error: nod01 is not an inventory host or group (did you mean `node01`?)");
  EXPECT_EQ(pick("compute,&rakc1"), "error: rakc1 is not an inventory host or group (did you mean `rack1`?)");
  // Another number is another host, not a typo: no suggestion.
  EXPECT_EQ(pick("compute,!node09"), "error: node09 is not an inventory host or group (see xftctl inventory show)");
  EXPECT_EQ(pick("@compte"), "error: @compte is not an inventory group (did you mean `@compute`?)");
  EXPECT_EQ(pick("@node01"), "error: @node01 is not an inventory group (see xftctl inventory show)");
  EXPECT_EQ(pick("@x*"), "error: @x* matches no inventory group (see xftctl inventory show)");
  EXPECT_EQ(pick("!x*"), "error: x* matches no inventory host or group (see xftctl inventory show)");
  EXPECT_EQ(pick("a\x1b" "b"), "error: a\\x1bb is not an inventory host or group (see xftctl inventory show)");
  EXPECT_EQ(pick("a\x1b[2J"), "error: bad range `a\\x1b[2J`: `[` at position 3 is never closed");
}

TEST(SelectHostsAnsible, EmptyWordsAndEmptySelectionsAreErrors) {
  EXPECT_EQ(pick("!"), "error: empty target in `!` (write e.g. all, compute or node[01-04])");
  EXPECT_EQ(pick("compute,&@"), "error: empty target in `compute,&@` (write e.g. all, compute or node[01-04])");
  EXPECT_EQ(pick("compute::login"), "error: empty target in `compute::login` (write e.g. all, compute or node[01-04])");
  EXPECT_EQ(pick("compute,!compute"),
            "error: `compute,!compute` selects no host (the ! and & words remove every host the others name)");
  EXPECT_EQ(pick("rack1,&login"),
            "error: `rack1,&login` selects no host (the ! and & words remove every host the others name)");
  EXPECT_EQ(pick("!all"), "error: `!all` selects no host (the ! and & words remove every host the others name)");
  EXPECT_EQ(pick("spare"), "error: `spare` selects no host (its groups are empty)");
  EXPECT_EQ(pick("compute,!spare"), "node01 node02 node03 node04");
}
