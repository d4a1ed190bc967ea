#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

#include "inventory/load.h"
#include "inventory/show.h"
#include "tests/unit/support/test_paths.h"

using namespace xft::inventory;
namespace fs = std::filesystem;

TEST(ShowTable, MinimalFile) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/minimal.yaml");
  ASSERT_TRUE(inventory);
  EXPECT_EQ(format_hosts_table(*inventory),
            "NAME    ADDRESS      USER  PORT  RANKS  PROVIDER       IFACE  SHARED  AUTH\n"
            "node01  192.168.0.1  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD\n"
            "node02  192.168.0.2  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD\n"
            "node03  192.168.0.3  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD\n"
            "node04  192.168.0.4  root  22    1      verbs;ofi_rxm  eth0   /mnt    env:XFT_SSH_PASSWORD\n"
            "head    192.168.0.9  root  22    1      tcp;ofi_rxm    eth1   /mnt    env:HEAD_PASSWORD\n");
}

TEST(ShowTable, EmptyCellsAreDashes) {
  EXPECT_EQ(format_table({"A", "B", "C"}, {{"x", "", "z"}, {"long", "y"}}),
            "A     B  C\n"
            "x     -  z\n"
            "long  y  -\n");
}

TEST(AuthLabel, NeverASecret) {
  Credentials credentials;
  EXPECT_EQ(auth_label(credentials), "auto");
  credentials.password_prompt = true;
  EXPECT_EQ(auth_label(credentials), "prompt");
  credentials.password_env = "PW";
  EXPECT_EQ(auth_label(credentials), "env:PW");
  credentials.key = "/k";
  EXPECT_EQ(auth_label(credentials), "key:/k");
}

class LocateInventory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xft-locate-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    old_cwd_ = fs::current_path();
    fs::current_path(dir_);
    ::unsetenv("XFTCTL_INVENTORY");
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    fs::remove_all(dir_);
    ::unsetenv("XFTCTL_INVENTORY");
  }
  void touch(const std::string& name) { std::ofstream(dir_ / name) << "hosts: [{name: a}]\n"; }
  fs::path dir_, old_cwd_;
};

TEST_F(LocateInventory, NothingFoundSaysWhatWasTried) {
  auto located = locate_inventory("");
  ASSERT_FALSE(located);
  EXPECT_EQ(located.error().message,
            "no inventory found: tried -i (not given), $XFTCTL_INVENTORY (not set) and ./inventory.yaml (missing); "
            "pass -i FILE or write inventory.yaml (see docs/inventory.md)");
}

TEST_F(LocateInventory, FlagThenEnvironmentThenWorkingDirectory) {
  touch("inventory.yaml");
  touch("env.yaml");
  touch("flag.yaml");
  EXPECT_EQ(*locate_inventory(""), "inventory.yaml");
  ::setenv("XFTCTL_INVENTORY", (dir_ / "env.yaml").c_str(), 1);
  EXPECT_EQ(*locate_inventory(""), (dir_ / "env.yaml").string());
  EXPECT_EQ(*locate_inventory("flag.yaml"), "flag.yaml");
}

TEST_F(LocateInventory, MissingExplicitChoiceIsAnErrorNotAFallback) {
  touch("inventory.yaml");
  auto from_flag = locate_inventory("nope.yaml");
  ASSERT_FALSE(from_flag);
  EXPECT_EQ(from_flag.error().message, "inventory nope.yaml (from -i) does not exist or is not a file");
  ::setenv("XFTCTL_INVENTORY", "/nonexistent-xft.yaml", 1);
  auto from_env = locate_inventory("");
  ASSERT_FALSE(from_env);
  EXPECT_EQ(from_env.error().message,
            "inventory /nonexistent-xft.yaml (from $XFTCTL_INVENTORY) does not exist or is not a file");
}
