// ~/.ssh/config through libssh's parser: what a Host block gives an alias,
// the inventory's own values winning, ProxyJump read back as the bastion
// chain (its hops resolved as aliases too), any other ProxyCommand refused;
// IdentityFile (the first that applies, as OpenSSH), UserKnownHostsFile and
// StrictHostKeyChecking expanded and checked, and which of them outranks what.
// HostName comes in the last block that matches: libssh 0.10 matches the
// blocks after a HostName against the new name (ssh_config.h).
#include "remote/ssh_config.h"

#include <gtest/gtest.h>

#include "remote/credentials.h"
#include "remote/ssh_transport.h"
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

class SshConfigHostKeys : public SshConfig {
 protected:
  void SetUp() override {
    SshConfig::SetUp();
    std::ofstream(path_) << "Host node01\n"
                            "  HostName 10.0.0.1\n"
                            "  User ec2-user\n"
                            "  IdentityFile ~/.ssh/aws-%r.pem\n"
                            "  UserKnownHostsFile %d/.ssh/cluster_known_hosts\n"
                            "  StrictHostKeyChecking accept-new\n"
                            "Host node02\n"
                            "  StrictHostKeyChecking=yes\n"
                            "  IdentityFile /keys/%h-%p\n"
                            "Host node03\n"
                            "  StrictHostKeyChecking maybe\n"
                            "Host node04\n"
                            "  IdentityFile /keys/%C\n"
                            "Host *\n"
                            "  IdentityFile /keys/fallback\n"
                            "  StrictHostKeyChecking no\n"
                            "  GlobalKnownHostsFile /etc/ssh/other\n";
  }
};

TEST_F(SshConfigHostKeys, TheFirstIdentityFileThatAppliesExpanded) {
  auto node = apply_ssh_config(alias("node01"), path_);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(home_directory() + "/.ssh/aws-ec2-user.pem", node->credentials.key)
      << "OpenSSH uses the first IdentityFile first (libssh lists the last one first)";
  auto other = apply_ssh_config(alias("node02"), path_);
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ("/keys/node02-22", other->credentials.key);
  auto fallback = apply_ssh_config(alias("node09"), path_);
  ASSERT_TRUE(fallback.ok()) << fallback.error().message;
  EXPECT_EQ("/keys/fallback", fallback->credentials.key);
}

TEST_F(SshConfigHostKeys, TheInventorysKeyWins) {
  auto host = alias("node01");
  host.credentials.key = "/inventory/key";
  auto node = apply_ssh_config(host, path_);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ("/inventory/key", node->credentials.key);
}

TEST_F(SshConfigHostKeys, KnownHostsFileAndStrictHostKeyChecking) {
  auto node = apply_ssh_config(alias("node01"), path_);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(home_directory() + "/.ssh/cluster_known_hosts", node->host_keys.known_hosts);
  EXPECT_EQ(std::optional<bool>(true), node->host_keys.accept_new);
  auto strict = apply_ssh_config(alias("node02"), path_);
  ASSERT_TRUE(strict.ok()) << strict.error().message;
  EXPECT_EQ("", strict->host_keys.known_hosts);
  EXPECT_EQ(std::optional<bool>(false), strict->host_keys.accept_new) << "the first value that applies wins";
}

TEST_F(SshConfigHostKeys, BadValuesNameTheFileHostAndKeyword) {
  auto bad = apply_ssh_config(alias("node03"), path_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(path_ + ": node03: StrictHostKeyChecking `maybe` is not yes, ask, accept-new, no or off",
            bad.error().message);
  auto token = apply_ssh_config(alias("node04"), path_);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(path_ + ": node04: IdentityFile `/keys/%C`: %C is not expanded by xftctl (it knows ~, %d, %u, %h, %r, %p "
                    "and %%; write the path without it)",
            token.error().message);
}

TEST(SshConfigStrictHostKeyChecking, OpenSshsValues) {
  for (const char* accepting : {"accept-new", "no", "off", "NO"})
    EXPECT_EQ(std::optional<bool>(true), *accept_new_from_strict_host_key_checking(accepting)) << accepting;
  for (const char* refusing : {"yes", "ask"})
    EXPECT_EQ(std::optional<bool>(false), *accept_new_from_strict_host_key_checking(refusing)) << refusing;
  EXPECT_EQ(std::optional<bool>(), *accept_new_from_strict_host_key_checking(""));
  EXPECT_FALSE(accept_new_from_strict_host_key_checking("1").ok());
}

TEST(SshConfigHostKeyCheck, TheCommandLineOutranksTheConfig) {
  inventory::Host host;
  host.host_keys.known_hosts = "/config/known_hosts";
  host.host_keys.accept_new = false;
  SshOptions options;
  options.known_hosts_path = "/xftctl/known_hosts";
  EXPECT_EQ((HostKeyCheck{"/config/known_hosts", false}), host_key_check_for(host, options, false));
  EXPECT_EQ((HostKeyCheck{"/xftctl/known_hosts", false}), host_key_check_for(host, options, true))
      << "--known-hosts or $XFTCTL_KNOWN_HOSTS";
  options.accept_new_host_keys = true;
  EXPECT_EQ((HostKeyCheck{"/config/known_hosts", true}), host_key_check_for(host, options, false));
  host.host_keys = {};
  host.host_keys.accept_new = true;
  options.accept_new_host_keys = false;
  EXPECT_EQ((HostKeyCheck{"/xftctl/known_hosts", true}), host_key_check_for(host, options, false));
}

TEST(SshConfigHostKeyCheck, KnownHostsNamedByTheFlagOrTheEnvironment) {
  const char* saved = std::getenv("XFTCTL_KNOWN_HOSTS");
  std::string before = saved ? saved : "";
  ::unsetenv("XFTCTL_KNOWN_HOSTS");
  SshOptions options;
  EXPECT_FALSE(known_hosts_named(options));
  options.known_hosts_path = "/flag/known_hosts";
  EXPECT_TRUE(known_hosts_named(options));
  options.known_hosts_path.clear();
  ::setenv("XFTCTL_KNOWN_HOSTS", "/environment/known_hosts", 1);
  EXPECT_TRUE(known_hosts_named(options));
  if (saved) ::setenv("XFTCTL_KNOWN_HOSTS", before.c_str(), 1);
  else ::unsetenv("XFTCTL_KNOWN_HOSTS");
}

}  // namespace
}  // namespace xft::remote
