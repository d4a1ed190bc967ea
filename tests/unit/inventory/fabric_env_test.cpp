#include <gtest/gtest.h>

#include "inventory/load.h"

using namespace xft::inventory;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

std::string errors_of(const std::string& yaml) {
  auto parsed = parse_inventory(yaml, "inv.yaml");
  return parsed ? "parsed without error" : parsed.error().message;
}

}  // namespace

TEST(FabricEnv, DefaultsAndHostMergeNameByName) {
  auto inventory = parse_inventory(R"(defaults:
  fabric: {provider: psm3, env: {PSM3_IDENTIFY: 1, FI_PROVIDER_PATH: /opt/psm3/lib}}
hosts:
  - name: node01
    fabric: {env: {PSM3_IDENTIFY: 0, PSM3_NIC: irdma0}}
  - name: node02
)",
                                   "inv.yaml");
  ASSERT_TRUE(inventory) << inventory.error().message;
  ASSERT_EQ(inventory->hosts.size(), 2u);
  EXPECT_EQ(inventory->hosts[0].fabric.provider, "psm3");
  EXPECT_EQ(inventory->hosts[0].fabric.env,
            (Env{{"PSM3_IDENTIFY", "0"}, {"FI_PROVIDER_PATH", "/opt/psm3/lib"}, {"PSM3_NIC", "irdma0"}}));
  EXPECT_EQ(inventory->hosts[1].fabric.env, (Env{{"PSM3_IDENTIFY", "1"}, {"FI_PROVIDER_PATH", "/opt/psm3/lib"}}));
}

TEST(FabricEnv, NoEnvIsEmpty) {
  auto inventory = parse_inventory("hosts: [{name: node01}]\n", "inv.yaml");
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_EQ(inventory->hosts[0].fabric.env, Env{});
}

TEST(FabricEnv, BadNamesAndValuesAreNamedWithTheirFix) {
  EXPECT_EQ(errors_of("hosts:\n  - name: n1\n    fabric:\n      env: {1BAD: x}\n"),
            "inv.yaml:4:13: hosts[0].fabric.env.1BAD: `1BAD` is not an environment variable name "
            "(use letters, digits and _, e.g. XFT_SSH_PASSWORD)");
  EXPECT_EQ(errors_of("hosts:\n  - name: n1\n    fabric:\n      env: {A: \"x\\ny\"}\n"),
            "inv.yaml:4:16: hosts[0].fabric.env.A: `x\\ny` has a control character (give one line of printable text)");
  EXPECT_EQ(errors_of("hosts:\n  - name: n1\n    fabric:\n      env: {A: [1, 2]}\n"),
            "inv.yaml:4:16: hosts[0].fabric.env.A: expected a single value, got a list");
}
