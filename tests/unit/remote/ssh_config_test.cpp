// ~/.ssh/config through libssh's parser: what a Host block gives an alias,
// the inventory's own values winning, ProxyJump read back as the bastion
// chain (its hops resolved as aliases too), any other ProxyCommand refused.
// HostName comes in the last block that matches: libssh 0.10 matches the
// blocks after a HostName against the new name (ssh_config.h).
#include "remote/ssh_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace xft::remote {
namespace {

using inventory::JumpHost;

class SshConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/xft-ssh-config.XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/config";
    std::ofstream(path_) << "Host bastion\n"
                            "  HostName 10.9.9.9\n"
                            "  User ops\n"
                            "  Port 2222\n"
                            "Host node*\n"
                            "  User ec2-user\n"
                            "  ProxyJump bastion\n"
                            "Host node02\n"
                            "  HostName 10.0.0.2\n"
                            "Host direct\n"
                            "  HostName 10.0.0.7\n"
                            "  ProxyCommand nc %h %p\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static inventory::Host alias(const std::string& name) {
    inventory::Host host;
    host.name = name;
    host.address = name;
    return host;
  }

  std::string dir_, path_;
};

TEST_F(SshConfig, AnAliasGetsHostNameUserAndTheBastionChain) {
  auto node = apply_ssh_config(alias("node02"), path_);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ("10.0.0.2", node->address);
  EXPECT_EQ("ec2-user", node->user);
  EXPECT_EQ(22, node->port);
  EXPECT_EQ((std::vector<JumpHost>{{"ops", "10.9.9.9", 2222}}), node->jump);
  auto other = apply_ssh_config(alias("node07"), path_);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ("node07", other->address) << "no HostName: the alias is the address";
}

TEST_F(SshConfig, InventoryValuesWin) {
  auto host = alias("node02");
  host.address = "192.168.1.2";
  host.user = "root";
  host.jump = {{"", "gw", 22}};
  host.given.address = host.given.user = host.given.jump = true;
  auto node = apply_ssh_config(host, path_);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ("192.168.1.2", node->address);
  EXPECT_EQ("root", node->user);
  EXPECT_EQ((std::vector<JumpHost>{{"", "gw", 22}}), node->jump);
}

TEST_F(SshConfig, AProxyCommandIsRefusedWithTheFix) {
  auto direct = apply_ssh_config(alias("direct"), path_);
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(path_ + ": direct: ProxyCommand `nc %h %p` is not run by xftctl (write the bastion as ProxyJump "
                    "[user@]host[:port], or jump: in the inventory)",
            direct.error().message);
}

TEST_F(SshConfig, NoneAndAMissingFile) {
  auto untouched = apply_ssh_config(alias("node02"), "");
  ASSERT_TRUE(untouched.ok());
  EXPECT_EQ("node02", untouched->address);
  auto missing = apply_ssh_config(alias("node02"), dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(dir_ + "/nope: no such file (give an OpenSSH client config, or --ssh-config none)", missing.error().message);
}

TEST(SshConfigProxyJump, LibsshsCommandReadsBackAsTheChain) {
  auto chain = jump_chain_from_proxy_command("ssh -l ops -p 2200 -J inner:2222 -W '[%h]:%p' outer");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ((std::vector<JumpHost>{{"ops", "outer", 2200}, {"", "inner", 2222}}), *chain);
  EXPECT_FALSE(jump_chain_from_proxy_command("ssh -J a,b -W '[%h]:%p' c").ok());
  EXPECT_FALSE(jump_chain_from_proxy_command("ssh -W '[%h]:%p' -oProxyCommand=x").ok());
  EXPECT_FALSE(jump_chain_from_proxy_command("ssh -o X=y -W '[%h]:%p' c").ok());
  EXPECT_FALSE(jump_chain_from_proxy_command("ssh -W %h:%p c").ok());
}

}  // namespace
}  // namespace xft::remote
