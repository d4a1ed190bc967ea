#include <gtest/gtest.h>

#include <string>

#include "inventory/grammar.h"

using namespace xft::inventory;

namespace {

const std::string user_rule =
    " is not a valid user name (POSIX portable names: letters, digits, '.', '_', '-', not starting with '-'; at "
    "most 32 characters)";
const std::string iface_fix = " (use the name `ip link` shows, e.g. eth0 or ib0)";
const std::string provider_fix =
    " (names of letters, digits and _, layered with ';', listed with ',', '^' before an item excludes it; e.g. "
    "tcp;ofi_rxm or ^psm3,verbs;ofi_rxm)";
const std::string nfs_fix =
    " (comma-separated name or name=value without spaces, e.g. rw,sync,no_subtree_check,anonuid=65534)";
const std::string printable_fix =
    " (a path must be printable ASCII on one line; rename it, or link it from such a path)";
const std::string quote_fix =
    " (quotes, backticks and backslashes are not allowed in paths; rename it, or link it from a path without "
    "them)";

}  // namespace

TEST(Grammar, PrintableEscapesWhatATerminalWouldObey) {
  EXPECT_EQ(printable("plain /path; $x"), "plain /path; $x");
  EXPECT_EQ(printable("a\nb\tc\rd\\e\x1b[31m\x7f\xc3\xa9"), "a\\nb\\tc\\rd\\\\e\\x1b[31m\\x7f\\xc3\\xa9");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable(std::string(101, 'x')), std::string(100, 'x') + "... (101 bytes)");
  EXPECT_EQ(printable(std::string(100, 'x')), std::string(100, 'x'));
  EXPECT_EQ(quoted_value("a\nb"), "`a\\nb`");
  EXPECT_EQ(one_line("f: `a\nb` \\ \xc3\xa9"), "f: `a\\nb` \\ \xc3\xa9");
}

TEST(Grammar, UserNames) {
  for (const char* good : {"root", "xft", "a", "_svc", ".hidden", "user.name-2", "0day", "A_B",
                           "abcdefghijklmnopqrstuvwxyz012345"})
    EXPECT_EQ(check_user_name(good), std::nullopt) << good;
  for (const char* bad : {"", "-oProxyCommand=x", "root -o X", "ro;ot", "$(id)", "`id`", "ro'ot", "ro\"ot",
                          "../root", "root\n", "r\xc3\xa9", "ro\\ot", "root@host", "abcdefghijklmnopqrstuvwxyz0123456"})
    EXPECT_NE(check_user_name(bad), std::nullopt) << bad;
  EXPECT_EQ(check_user_name("root -o ProxyCommand=touch${IFS}/tmp/x"),
            "`root -o ProxyCommand=touch${IFS}/tmp/x`" + user_rule);
  EXPECT_EQ(check_user_name("root\nPWNED"), "`root\\nPWNED`" + user_rule);
}

TEST(Grammar, AbsolutePaths) {
  for (const char* good : {"/", "/mnt", "/mnt/with space", "/mnt/x; touch /tmp/y", "/mnt/$(id)", "/mnt/a&b|c>d<e",
                           "/mnt/-o nolock", "/mnt/./x", "/mnt/..x/x..", "/mnt/x/", "/a/~b/#c/%d/*e/?f/[g]/{h}/!i"})
    EXPECT_EQ(check_absolute_path(good), std::nullopt) << good;
  EXPECT_EQ(check_absolute_path(std::string(4096, '/')), std::nullopt);
  EXPECT_EQ(check_absolute_path("mnt"), "`mnt` is not an absolute path (write it from /, e.g. /mnt)");
  EXPECT_EQ(check_absolute_path(""), "`` is not an absolute path (write it from /, e.g. /mnt)");
  EXPECT_EQ(check_absolute_path("~/x"), "`~/x` is not an absolute path (write it from /, e.g. /mnt)");
  EXPECT_EQ(check_absolute_path(std::string(4097, '/')),
            "`" + std::string(100, '/') + "... (4097 bytes)` is longer than 4096 bytes (use a shorter path)");
  EXPECT_EQ(check_absolute_path("/mnt/x'; touch /tmp/p; echo '"),
            "`/mnt/x'; touch /tmp/p; echo '` contains a single quote" + quote_fix);
  EXPECT_EQ(check_absolute_path("/mnt/x\"y"), "`/mnt/x\"y` contains a double quote" + quote_fix);
  EXPECT_EQ(check_absolute_path("/mnt/`id`"), "`/mnt/`id`` contains a backtick" + quote_fix);
  EXPECT_EQ(check_absolute_path("/mnt/x\\y"), "`/mnt/x\\\\y` contains a backslash" + quote_fix);
  EXPECT_EQ(check_absolute_path("/mnt/x\ntouch"), "`/mnt/x\\ntouch` contains the control character \\n" + printable_fix);
  EXPECT_EQ(check_absolute_path("/mnt/\x1b[31mred"), "`/mnt/\\x1b[31mred` contains the control character \\x1b" +
                                                          printable_fix);
  EXPECT_EQ(check_absolute_path("/mnt/x\x7f"), "`/mnt/x\\x7f` contains the control character \\x7f" + printable_fix);
  EXPECT_EQ(check_absolute_path(std::string("/mnt/\0", 6)), "`/mnt/\\x00` contains the control character \\x00" +
                                                                 printable_fix);
  EXPECT_EQ(check_absolute_path("/mnt/caf\xc3\xa9"), "`/mnt/caf\\xc3\\xa9` contains the non-ASCII byte \\xc3" +
                                                         printable_fix);
  EXPECT_EQ(check_absolute_path("/mnt/../etc"), "`/mnt/../etc` has a .. component (write the path without it, e.g. /etc)");
  EXPECT_EQ(check_absolute_path("/.."), "`/..` has a .. component (write the path without it, e.g. /)");
  EXPECT_EQ(check_absolute_path("/mnt/x/.."), "`/mnt/x/..` has a .. component (write the path without it, e.g. /mnt/)");
}

TEST(Grammar, KeyPaths) {
  for (const char* good : {"/root/.ssh/id_ed25519", "/tmp/key dir/id_ed25519", "id_ed25519", "keys/id", "~user/k"})
    EXPECT_EQ(check_key_path(good), std::nullopt) << good;
  EXPECT_EQ(check_key_path(""), "is empty (give the private key's path, e.g. ~/.ssh/id_ed25519)");
  EXPECT_EQ(check_key_path("../keys/id"), "`../keys/id` has a .. component (write the path without it)");
  EXPECT_EQ(check_key_path("keys/../id"), "`keys/../id` has a .. component (write the path without it, e.g. id)");
  EXPECT_EQ(check_key_path("/k'; touch x"), "`/k'; touch x` contains a single quote" + quote_fix);
  EXPECT_EQ(check_key_path("/k\n"), "`/k\\n` contains the control character \\n" + printable_fix);
}

TEST(Grammar, InterfaceNames) {
  for (const char* good : {"eth0", "ib0", "lo", "enp1s0f0np0", "br-lan", "eth0.100", "veth_1", "wlp0s20f3abcdef", "a", "...",
                           "e@th", "x+y"})
    EXPECT_EQ(check_interface_name(good), std::nullopt) << good;
  EXPECT_EQ(check_interface_name(""), "`` is not a valid interface name: it is empty" + iface_fix);
  EXPECT_EQ(check_interface_name("averyverylongifn"),
            "`averyverylongifn` is not a valid interface name: longer than 15 characters" + iface_fix);
  EXPECT_EQ(check_interface_name("."), "`.` is not a valid interface name: . and .. are not names" + iface_fix);
  EXPECT_EQ(check_interface_name(".."), "`..` is not a valid interface name: . and .. are not names" + iface_fix);
  EXPECT_EQ(check_interface_name("-oops"), "`-oops` is not a valid interface name: it starts with '-'" + iface_fix);
  EXPECT_EQ(check_interface_name("eth0:1"), "`eth0:1` is not a valid interface name: ':' is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("eth0/1"), "`eth0/1` is not a valid interface name: '/' is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("eth0 eth1"), "`eth0 eth1` is not a valid interface name: a space is not allowed" +
                                                   iface_fix);
  EXPECT_EQ(check_interface_name("eth0\n"),
            "`eth0\\n` is not a valid interface name: the control character \\n is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("eth\t0"),
            "`eth\\t0` is not a valid interface name: the control character \\t is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("$(id)"), "`$(id)` is not a valid interface name: '$' is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("e'th"), "`e'th` is not a valid interface name: a single quote is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("e\\th"), "`e\\\\th` is not a valid interface name: a backslash is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("e`th"), "`e`th` is not a valid interface name: a backtick is not allowed" + iface_fix);
  EXPECT_EQ(check_interface_name("\xc3\xa9th"),
            "`\\xc3\\xa9th` is not a valid interface name: the non-ASCII byte \\xc3 is not allowed" + iface_fix);
}

TEST(Grammar, Providers) {
  for (const char* good : {"tcp", "tcp;ofi_rxm", "verbs;ofi_rxm", "^psm3", "^psm3,tcp;ofi_rxm", "efa,shm", "a;b;c",
                           "^a;b,^c"})
    EXPECT_EQ(check_provider(good), std::nullopt) << good;
  EXPECT_EQ(check_provider(""), "`` is not a valid libfabric provider list: it is empty" + provider_fix);
  EXPECT_EQ(check_provider("tcp;;ofi_rxm"), "`tcp;;ofi_rxm` is not a valid libfabric provider list: an empty name" +
                                                provider_fix);
  EXPECT_EQ(check_provider("tcp;"), "`tcp;` is not a valid libfabric provider list: an empty name" + provider_fix);
  EXPECT_EQ(check_provider("tcp,"), "`tcp,` is not a valid libfabric provider list: an empty name" + provider_fix);
  EXPECT_EQ(check_provider(",tcp"), "`,tcp` is not a valid libfabric provider list: an empty name" + provider_fix);
  EXPECT_EQ(check_provider("^"), "`^` is not a valid libfabric provider list: an empty name" + provider_fix);
  EXPECT_EQ(check_provider("^^tcp"), "`^^tcp` is not a valid libfabric provider list: '^' may only start an item" +
                                         provider_fix);
  EXPECT_EQ(check_provider("tcp;^rxm"), "`tcp;^rxm` is not a valid libfabric provider list: '^' may only start an "
                                        "item" + provider_fix);
  EXPECT_EQ(check_provider("tcp ofi_rxm"), "`tcp ofi_rxm` is not a valid libfabric provider list: a space is not "
                                           "allowed" + provider_fix);
  EXPECT_EQ(check_provider("tcp;$(id)"), "`tcp;$(id)` is not a valid libfabric provider list: '$' is not allowed" +
                                             provider_fix);
  EXPECT_EQ(check_provider("tcp\nofi_rxm"), "`tcp\\nofi_rxm` is not a valid libfabric provider list: the control "
                                            "character \\n is not allowed" + provider_fix);
  EXPECT_EQ(check_provider("ofi-rxm"), "`ofi-rxm` is not a valid libfabric provider list: '-' is not allowed" +
                                           provider_fix);
}

TEST(Grammar, NfsOptions) {
  for (const char* good : {"rw", "rw,sync,no_root_squash,no_subtree_check", "rw,sync,no_subtree_check,anonuid=65534",
                           "sec=sys:krb5", "fsid=0", "refer=/a@host+x", "_x=a.b-c", "rw,async"})
    EXPECT_EQ(check_nfs_options(good), std::nullopt) << good;
  EXPECT_EQ(check_nfs_options(""), "`` is not a valid NFS option list: it is empty" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw,,sync"), "`rw,,sync` is not a valid NFS option list: an empty option" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw,"), "`rw,` is not a valid NFS option list: an empty option" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw no_root_squash"),
            "`rw no_root_squash` is not a valid NFS option list: a space is not allowed" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw) *(rw"), "`rw) *(rw` is not a valid NFS option list: ')' is not allowed" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw\n/ *(rw)"),
            "`rw\\n/ *(rw)` is not a valid NFS option list: the control character \\n is not allowed" + nfs_fix);
  EXPECT_EQ(check_nfs_options("rw,$(id)"), "`rw,$(id)` is not a valid NFS option list: '$' is not allowed" + nfs_fix);
  EXPECT_EQ(check_nfs_options("=1"),
            "`=1` is not a valid NFS option list: option `=1` does not start with a name of letters, digits and _" +
                nfs_fix);
  EXPECT_EQ(check_nfs_options("1rw"),
            "`1rw` is not a valid NFS option list: option `1rw` does not start with a name of letters, digits and _" +
                nfs_fix);
  EXPECT_EQ(check_nfs_options("a.b=1"),
            "`a.b=1` is not a valid NFS option list: option `a.b=1` does not start with a name of letters, digits and "
            "_" + nfs_fix);
  EXPECT_EQ(check_nfs_options("anonuid="),
            "`anonuid=` is not a valid NFS option list: option `anonuid=` has no value after '='" + nfs_fix);
  EXPECT_EQ(check_nfs_options("a=b=c"), "`a=b=c` is not a valid NFS option list: option `a=b=c` has two '='" + nfs_fix);
}

TEST(Grammar, Ports) {
  for (const char* good : {"1", "22", "2222", "65535", "022"}) EXPECT_EQ(check_port(good), std::nullopt) << good;
  EXPECT_EQ(check_port("22 -o ProxyCommand=x"), "`22 -o ProxyCommand=x` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(check_port("22;"), "`22;` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(check_port("-1"), "`-1` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(check_port(""), "`` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(check_port("0"), "0 is out of range (use 1..65535, usually 22)");
  EXPECT_EQ(check_port("65536"), "65536 is out of range (use 1..65535, usually 22)");
  EXPECT_EQ(check_port("99999999999999999999"), "99999999999999999999 is out of range (use 1..65535, usually 22)");
}

TEST(Grammar, EnvironmentNamesHostNamesAndAddresses) {
  EXPECT_EQ(check_env_var_name("XFT_SSH_PASSWORD"), std::nullopt);
  EXPECT_EQ(check_env_var_name("_x1"), std::nullopt);
  for (const char* bad : {"", "1ABC", "X; touch", "$(touch)", "A-B", "A\n"})
    EXPECT_EQ(check_env_var_name(bad), quoted_value(bad) + " is not an environment variable name (use letters, "
                                                           "digits and _, e.g. XFT_SSH_PASSWORD)");
  EXPECT_EQ(check_host_name("node-01.rack_2"), std::nullopt);
  for (const char* bad : {"", "-node", "node01;touch", "node01 node02", "n\n"})
    EXPECT_EQ(check_host_name(bad), quoted_value(bad) + " is not a valid host name (use letters, digits, '.', '-', "
                                                        "'_', not starting with '-')");
  for (const char* good : {"10.0.0.1", "::1", "fe80::1", "node01.example.com", "head"})
    EXPECT_EQ(check_address(good), std::nullopt) << good;
  for (const char* bad : {"10.0.0.1;touch", "-oProxyCommand=x", "10.0.0.300", "a b", "h\n"})
    EXPECT_EQ(check_address(bad), quoted_value(bad) + " is not an IPv4/IPv6 address or a valid DNS host name");
}

TEST(Grammar, Become) {
  EXPECT_EQ(check_become("sudo"), std::nullopt);
  EXPECT_EQ(check_become("none"), std::nullopt);
  EXPECT_EQ(check_become("su"), "`su` is not a way to become root (use sudo, or none for a root login)");
  EXPECT_EQ(check_become("sudo -s"), "`sudo -s` is not a way to become root (use sudo, or none for a root login)");
}

TEST(Grammar, JumpHosts) {
  JumpHost jump;
  EXPECT_EQ(check_jump_host("bastion", &jump), std::nullopt);
  EXPECT_EQ(jump, (JumpHost{"", "bastion", 22}));
  EXPECT_EQ(check_jump_host("ec2-user@10.0.0.9:2222", &jump), std::nullopt);
  EXPECT_EQ(jump, (JumpHost{"ec2-user", "10.0.0.9", 2222}));
  EXPECT_EQ(jump.text(), "ec2-user@10.0.0.9:2222");
  EXPECT_EQ(check_jump_host("ops@[fd00::9]:22", &jump), std::nullopt);
  EXPECT_EQ(jump, (JumpHost{"ops", "fd00::9", 22}));
  EXPECT_EQ(jump.text(), "ops@[fd00::9]");
  const std::string form = " (use [user@]host[:port], e.g. ec2-user@bastion.example.com:22)";
  EXPECT_EQ(check_jump_host("fd00::9"), "`fd00::9`: an IPv6 address goes in brackets, [addr]:port" + form);
  EXPECT_EQ(check_jump_host("@bastion"), "`@bastion` has an empty user before '@'" + form);
  EXPECT_EQ(check_jump_host("bastion:"), "`` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(check_jump_host("bastion:70000"), "70000 is out of range (use 1..65535, usually 22)");
  EXPECT_EQ(check_jump_host("[bastion]:22"), "`[bastion]:22`: brackets are for IPv6 addresses only" + form);
  EXPECT_EQ(check_jump_host("-oProxyCommand=x"),
            "`-oProxyCommand=x` is not an IPv4/IPv6 address or a valid DNS host name" + form);
  EXPECT_TRUE(check_jump_host("ro ot@bastion"));
  EXPECT_TRUE(check_jump_host("root@bas;tion"));
  EXPECT_TRUE(check_jump_host("[fd00::9"));
}
