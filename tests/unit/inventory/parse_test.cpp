#include <cstdlib>
#include <gtest/gtest.h>

#include "inventory/load.h"
#include "inventory/show.h"
#include "tests/unit/support/test_paths.h"

using namespace xft::inventory;

namespace {

// The error text of an inventory that must fail, or a marker when it parsed.
std::string errors_of(const std::string& yaml) {
  auto parsed = parse_inventory(yaml, "inv.yaml");
  return parsed ? "parsed without error" : parsed.error().message;
}

Inventory parse_ok(const std::string& yaml) {
  auto parsed = parse_inventory(yaml, "inv.yaml");
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? *parsed : Inventory{};
}

}  // namespace

TEST(ParseInventory, MinimalFileFromTheIssue) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/minimal.yaml");
  ASSERT_TRUE(inventory) << inventory.error().message;
  ASSERT_EQ(inventory->hosts.size(), 5u);
  const char* names[] = {"node01", "node02", "node03", "node04", "head"};
  const char* addresses[] = {"192.168.0.1", "192.168.0.2", "192.168.0.3", "192.168.0.4", "192.168.0.9"};
  for (size_t i = 0; i < 5; ++i) {
    const Host& host = inventory->hosts[i];
    EXPECT_EQ(host.name, names[i]);
    EXPECT_EQ(host.address, addresses[i]);
    EXPECT_EQ(host.user, "root");
    EXPECT_EQ(host.port, 22);
    EXPECT_EQ(host.shared, "/mnt");
    EXPECT_EQ(host.ranks.kind, RanksKind::count);
    EXPECT_EQ(host.ranks.count, 1);
    EXPECT_TRUE(host.credentials.key.empty());
    EXPECT_FALSE(host.credentials.password_prompt);
  }
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(inventory->hosts[i].credentials.password_env, "XFT_SSH_PASSWORD");
    EXPECT_EQ(inventory->hosts[i].fabric.provider, "verbs;ofi_rxm");
    EXPECT_EQ(inventory->hosts[i].fabric.iface, "eth0");
    EXPECT_EQ(inventory->hosts[i].line, 9);
  }
  const Host& head = inventory->hosts[4];
  EXPECT_EQ(head.credentials.password_env, "HEAD_PASSWORD");
  EXPECT_EQ(head.fabric.provider, "tcp;ofi_rxm");
  EXPECT_EQ(head.fabric.iface, "eth1");
  EXPECT_EQ(head.line, 12);
  EXPECT_EQ(inventory->path, xft::test::data_dir() + "/inventory/minimal.yaml");
  EXPECT_FALSE(inventory->nfs);
  EXPECT_TRUE(inventory->groups.empty());
  EXPECT_EQ(inventory->find("192.168.0.3")->name, "node03");
}

TEST(ParseInventory, FabricOverridesFieldByField) {
  auto inventory = parse_ok(R"(
defaults:
  fabric: {provider: "verbs;ofi_rxm", iface: eth0}
hosts:
  - {name: a, address: 10.0.0.1, fabric: {iface: ib0}}
  - {name: b, address: 10.0.0.2, fabric: {provider: efa}}
  - {name: c, address: 10.0.0.3}
)");
  ASSERT_EQ(inventory.hosts.size(), 3u);
  EXPECT_EQ(inventory.hosts[0].fabric.provider, "verbs;ofi_rxm");
  EXPECT_EQ(inventory.hosts[0].fabric.iface, "ib0");
  EXPECT_EQ(inventory.hosts[1].fabric.provider, "efa");
  EXPECT_EQ(inventory.hosts[1].fabric.iface, "eth0");
  EXPECT_EQ(inventory.hosts[2].fabric.provider, "verbs;ofi_rxm");
  EXPECT_EQ(inventory.hosts[2].fabric.iface, "eth0");
}

TEST(ParseInventory, BuiltInDefaultsWithoutDefaultsSection) {
  auto inventory = parse_ok("hosts:\n  - name: node1.example.com\n");
  ASSERT_EQ(inventory.hosts.size(), 1u);
  const Host& host = inventory.hosts[0];
  EXPECT_EQ(host.address, "node1.example.com");  // no address: the name is dialled
  EXPECT_EQ(host.user, "root");
  EXPECT_EQ(host.port, 22);
  EXPECT_EQ(host.fabric.provider, "tcp;ofi_rxm");
  EXPECT_EQ(auth_label(host.credentials), "auto");
}

TEST(ParseInventory, CredentialsFallBackAsAWhole) {
  ::setenv("HOME", "/home/tester", 1);
  auto inventory = parse_ok(R"(
defaults:
  key: ~/.ssh/id_ed25519
  user: xft
  port: 2200
hosts:
  - {name: a, address: 10.0.0.1}
  - {name: b, address: 10.0.0.2, password_env: B_PASS, user: admin}
  - {name: c, address: 10.0.0.3, password_prompt: true, port: 22}
  - {name: d, address: 10.0.0.4, key: /keys/d, password_prompt: false}
)");
  ASSERT_EQ(inventory.hosts.size(), 4u);
  EXPECT_EQ(auth_label(inventory.hosts[0].credentials), "key:/home/tester/.ssh/id_ed25519");
  EXPECT_EQ(inventory.hosts[0].user, "xft");
  EXPECT_EQ(inventory.hosts[0].port, 2200);
  EXPECT_EQ(auth_label(inventory.hosts[1].credentials), "env:B_PASS");
  EXPECT_TRUE(inventory.hosts[1].credentials.key.empty());  // the host's choice replaces the default key
  EXPECT_EQ(inventory.hosts[1].user, "admin");
  EXPECT_EQ(auth_label(inventory.hosts[2].credentials), "prompt");
  EXPECT_EQ(inventory.hosts[2].port, 22);
  EXPECT_EQ(auth_label(inventory.hosts[3].credentials), "key:/keys/d");
}

TEST(ParseInventory, RanksKinds) {
  auto inventory = parse_ok(R"(
defaults: {ranks: per-numa}
hosts:
  - {name: a, address: 10.0.0.1}
  - {name: b, address: 10.0.0.2, ranks: per-socket}
  - {name: c, address: 10.0.0.3, ranks: 4}
)");
  EXPECT_EQ(ranks_label(inventory.hosts[0].ranks), "per-numa");
  EXPECT_EQ(ranks_label(inventory.hosts[1].ranks), "per-socket");
  EXPECT_EQ(inventory.hosts[2].ranks.kind, RanksKind::count);
  EXPECT_EQ(inventory.hosts[2].ranks.count, 4);
}

TEST(ParseInventory, GroupsFromHostsAndGroupsSection) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/groups.yaml");
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_EQ(inventory->groups.at("compute"), (std::vector<std::string>{"node01", "node02", "head"}));
  EXPECT_EQ(inventory->groups.at("login"), (std::vector<std::string>{"head"}));
  EXPECT_EQ(inventory->hosts[2].groups, (std::vector<std::string>{"compute", "login"}));
  ASSERT_TRUE(inventory->nfs);
  EXPECT_EQ(inventory->nfs->server, "head");
  EXPECT_EQ(inventory->nfs->export_path, "/srv/xft");
  EXPECT_EQ(inventory->nfs->options, "rw,sync,no_root_squash,no_subtree_check");
}

TEST(ParseInventory, NfsExportDefaultsToServersSharedPath) {
  auto inventory = parse_ok(R"(
defaults: {shared: /mnt}
hosts: [{name: head, address: 10.0.0.9}]
nfs: {server: head, options: "rw,async"}
)");
  ASSERT_TRUE(inventory.nfs);
  EXPECT_EQ(inventory.nfs->export_path, "/mnt");
  EXPECT_EQ(inventory.nfs->options, "rw,async");
}

TEST(ParseInventory, Ipv6AndDnsAddresses) {
  auto inventory = parse_ok(R"(
hosts:
  - {name: a, address: "fe80::1"}
  - {name: b, address: "[2001:db8::2]"}
  - {name: c, address: c.example.com}
)");
  EXPECT_EQ(inventory.hosts[0].address, "fe80::1");
  EXPECT_EQ(inventory.hosts[1].address, "2001:db8::2");
  EXPECT_EQ(inventory.hosts[2].address, "c.example.com");
}

TEST(ParseInventoryErrors, CollectsAllErrorsOfTheFile) {
  auto inventory = load_inventory(xft::test::data_dir() + "/inventory/errors.yaml");
  ASSERT_FALSE(inventory);
  const std::string file = xft::test::data_dir() + "/inventory/errors.yaml";
  EXPECT_EQ(inventory.error().message,
            file + ":3:3: defaults.password: passwords must not be stored in the inventory (remove it; export "
                   "the password in an environment variable and name it with password_env: VAR, or set "
                   "password_prompt: true)\n" +
                file + ":5:11: hosts[0].name: bad range `node[04-01]`: 04 > 01 (write the lower bound first: 01-04)\n" +
                file + ":7:14: hosts[1].address: `192.168.0.[1-3]` expands to 3 addresses but name `node[01-04]` "
                       "to 4 hosts (make both ranges the same length)\n" +
                file + ":9:5: hosts[2].adress: unknown key (did you mean `address`?)\n" +
                file + ":10:12: hosts[2].ranks: 0 is below 1 (use a count of at least 1, per-socket or per-numa)\n" +
                file + ":12:14: hosts[3].address: `192.168.0.300` is not an IPv4/IPv6 address or a valid DNS host name\n" +
                file + ":13:11: hosts[3].port: 70000 is out of range (use 1..65535, usually 22)\n" +
                file + ":14:13: hosts[3].fabric: expected a map (like {provider: \"tcp;ofi_rxm\", iface: eth0}), got a list\n" +
                file + ":17:12: hosts[4].ranks: `per-core` is not a number, per-socket or per-numa (e.g. ranks: 2)\n" +
                file + ":18:11: hosts[5].name: duplicate host name `a3` (also declared at line 15; names must be unique)");
  EXPECT_EQ(inventory.error().message.find("do-not-store-me"), std::string::npos);  // never echo a secret
}

TEST(ParseInventoryErrors, PasswordKeyOnHost) {
  EXPECT_EQ(errors_of("hosts:\n  - name: a\n    address: 10.0.0.1\n    password: x\n"),
            "inv.yaml:4:5: hosts[0].password: passwords must not be stored in the inventory (remove it; export "
            "the password in an environment variable and name it with password_env: VAR, or set "
            "password_prompt: true)");
}

TEST(ParseInventoryErrors, DuplicateAddress) {
  EXPECT_EQ(errors_of("hosts:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.1}\n"),
            "inv.yaml:3:24: hosts[1].address: duplicate address `10.0.0.1` (also used by a at line 2; each host "
            "needs its own address)");
}

TEST(ParseInventoryErrors, DuplicateNameFromOverlappingRanges) {
  EXPECT_EQ(errors_of("hosts:\n  - {name: \"n[1-3]\", address: \"10.0.0.[1-3]\"}\n"
                      "  - {name: \"n[3-4]\", address: \"10.0.0.[13-14]\"}\n"),
            "inv.yaml:3:12: hosts[1].name: duplicate host name `n3` (also declared at line 2; names must be unique)");
}

TEST(ParseInventoryErrors, UnknownKeySuggestions) {
  EXPECT_EQ(errors_of("hosts:\n  - {name: a, prot: 22}\n"), "inv.yaml:2:15: hosts[0].prot: unknown key (did you mean `port`?)");
  EXPECT_EQ(errors_of("hosts:\n  - {name: a, colour: red}\n"),
            "inv.yaml:2:15: hosts[0].colour: unknown key (allowed here: user, port, key, password_env, "
            "password_prompt, ranks, fabric, shared, become, become_password_env, jump, name, address, groups)");
  EXPECT_EQ(errors_of("defaults: {adress: 10.0.0.1}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:12: defaults.adress: unknown key (did you mean `address`? it belongs on a host entry "
            "under hosts:)");
  EXPECT_EQ(errors_of("defaults: {address: 10.0.0.1}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:12: defaults.address: only allowed on a host entry under hosts:, not here");
  EXPECT_EQ(errors_of("host:\n  - {name: a}\n"),
            "inv.yaml:1:1: host: unknown key (did you mean `hosts`?)\n"
            "inv.yaml:1:1: hosts: missing (add a hosts: list, e.g. hosts: [{name: node01, address: 10.0.0.1}])");
  EXPECT_EQ(errors_of("hosts: [{name: a, fabric: {provder: efa}}]\n"),
            "inv.yaml:1:28: hosts[0].fabric.provder: unknown key (did you mean `provider`?)");
}

TEST(ParseInventoryErrors, BadRanges) {
  EXPECT_EQ(errors_of("hosts: [{name: \"node[1-\"}]\n"),
            "inv.yaml:1:16: hosts[0].name: bad range `node[1-`: `[` at position 5 is never closed");
  EXPECT_EQ(errors_of("hosts: [{name: \"n[1-2]\", address: \"10.0.0.[x]\"}]\n"),
            "inv.yaml:1:35: hosts[0].address: bad range `10.0.0.[x]`: `x` is not a number or a range like 01-04");
}

TEST(ParseInventoryErrors, MismatchedCounts) {
  EXPECT_EQ(errors_of("hosts: [{name: \"n[1-2]\", address: 10.0.0.1}]\n"),
            "inv.yaml:1:35: hosts[0].address: `10.0.0.1` expands to 1 address but name `n[1-2]` to 2 hosts "
            "(make both ranges the same length)");
}

TEST(ParseInventoryErrors, Ranks) {
  EXPECT_EQ(errors_of("hosts: [{name: a, ranks: -2}]\n"),
            "inv.yaml:1:26: hosts[0].ranks: -2 is below 1 (use a count of at least 1, per-socket or per-numa)");
  EXPECT_EQ(errors_of("hosts: [{name: a, ranks: 1.5}]\n"),
            "inv.yaml:1:26: hosts[0].ranks: `1.5` is not a number, per-socket or per-numa (e.g. ranks: 2)");
  EXPECT_EQ(errors_of("hosts: [{name: a, ranks: [1]}]\n"),
            "inv.yaml:1:26: hosts[0].ranks: expected a single value, got a list");
}

TEST(ParseInventoryErrors, Ports) {
  EXPECT_EQ(errors_of("hosts: [{name: a, port: 0}]\n"),
            "inv.yaml:1:25: hosts[0].port: 0 is out of range (use 1..65535, usually 22)");
  EXPECT_EQ(errors_of("hosts: [{name: a, port: ssh}]\n"),
            "inv.yaml:1:25: hosts[0].port: `ssh` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(errors_of("defaults: {port: 65536}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:18: defaults.port: 65536 is out of range (use 1..65535, usually 22)");
}

TEST(ParseInventoryErrors, BadAddressesAndNames) {
  EXPECT_EQ(errors_of("hosts: [{name: a, address: \"bad_host!\"}]\n"),
            "inv.yaml:1:28: hosts[0].address: `bad_host!` is not an IPv4/IPv6 address or a valid DNS host name");
  EXPECT_EQ(errors_of("hosts: [{name: a, address: \"-x.example\"}]\n"),
            "inv.yaml:1:28: hosts[0].address: `-x.example` is not an IPv4/IPv6 address or a valid DNS host name");
  EXPECT_EQ(errors_of("hosts: [{name: node_1}]\n"),
            "inv.yaml:1:16: hosts[0].name: `node_1` is not an IP address or DNS name, so it cannot be used "
            "without address: (add address: with the host's IP)");
  EXPECT_EQ(errors_of("hosts: [{name: \"a b\", address: 10.0.0.1}]\n"),
            "inv.yaml:1:16: hosts[0].name: `a b` is not a valid host name (use letters, digits, '.', '-', '_', "
            "not starting with '-')");
  EXPECT_EQ(errors_of("hosts: [{address: 10.0.0.1}]\n"),
            "inv.yaml:1:9: hosts[0]: missing name (every host entry needs name:, e.g. name: node[01-04])");
}

TEST(ParseInventoryErrors, WrongTypes) {
  EXPECT_EQ(errors_of("hosts: {name: a}\n"),
            "inv.yaml:1:8: hosts: expected a list of hosts (- name: node01 ...), got a map");
  EXPECT_EQ(errors_of("defaults: [user, root]\nhosts: [{name: a}]\n"),
            "inv.yaml:1:11: defaults: expected a map (like user: root), got a list");
  EXPECT_EQ(errors_of("hosts: [node01]\n"), "inv.yaml:1:9: hosts[0]: expected a map (like - name: node01), got the value `node01`");
  EXPECT_EQ(errors_of("hosts: [{name: a, user: {x: 1}}]\n"),
            "inv.yaml:1:25: hosts[0].user: expected a single value, got a map");
  EXPECT_EQ(errors_of("hosts: [{name: a, user: }]\n"), "inv.yaml:1:25: hosts[0].user: has no value (give one or remove the key)");
  EXPECT_EQ(errors_of("hosts: [{name: a, password_prompt: maybe}]\n"),
            "inv.yaml:1:36: hosts[0].password_prompt: expected true or false, got the value `maybe`");
  EXPECT_EQ(errors_of("- a\n- b\n"),
            "inv.yaml:1:1: expected a map with hosts: (and optionally defaults:, groups:, nfs:), got a list");
  EXPECT_EQ(errors_of(""), "inv.yaml:1:1: hosts: the inventory is empty (add a hosts: list, see docs/inventory.md)");
  EXPECT_EQ(errors_of("hosts: []\n"), "inv.yaml:1:8: hosts: the list is empty (add at least one host)");
}

TEST(ParseInventoryErrors, Credentials) {
  EXPECT_EQ(errors_of("hosts: [{name: a, key: /k, password_env: P}]\n"),
            "inv.yaml:1:9: hosts[0]: sets more than one of key, password_env, password_prompt (keep exactly one)");
  EXPECT_EQ(errors_of("hosts: [{name: a, password_env: HEAD-PASS}]\n"),
            "inv.yaml:1:33: hosts[0].password_env: `HEAD-PASS` is not an environment variable name (use "
            "letters, digits and _, e.g. XFT_SSH_PASSWORD)");
}

TEST(ParseInventoryErrors, SharedMustBeAbsolute) {
  EXPECT_EQ(errors_of("defaults: {shared: mnt}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:20: defaults.shared: `mnt` is not an absolute path (write it from /, e.g. /mnt)");
}

// The grammar of inventory/grammar.h applied where each field is read; one
// error line per problem, with the value escaped.
TEST(ParseInventoryErrors, ValuesFollowTheGrammar) {
  EXPECT_EQ(errors_of("defaults:\n  user: \"root -o ProxyCommand=touch${IFS}/tmp/x\"\nhosts: [{name: a}]\n"),
            "inv.yaml:2:9: defaults.user: `root -o ProxyCommand=touch${IFS}/tmp/x` is not a valid user name (POSIX "
            "portable names: letters, digits, '.', '_', '-', not starting with '-'; at most 32 characters)");
  EXPECT_EQ(errors_of("defaults: {shared: \"/mnt/x'; touch /tmp/PWNED; echo '\"}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:20: defaults.shared: `/mnt/x'; touch /tmp/PWNED; echo '` contains a single quote (quotes, "
            "backticks and backslashes are not allowed in paths; rename it, or link it from a path without them)");
  EXPECT_EQ(errors_of("hosts: [{name: a, fabric: {iface: \"eth0\\n\"}}]\n"),
            "inv.yaml:1:35: hosts[0].fabric.iface: `eth0\\n` is not a valid interface name: the control character "
            "\\n is not allowed (use the name `ip link` shows, e.g. eth0 or ib0)");
  EXPECT_EQ(errors_of("hosts: [{name: a, fabric: {provider: \"tcp;;ofi_rxm\"}}]\n"),
            "inv.yaml:1:38: hosts[0].fabric.provider: `tcp;;ofi_rxm` is not a valid libfabric provider list: an "
            "empty name (names of letters, digits and _, layered with ';', listed with ',', '^' before an item "
            "excludes it; e.g. tcp;ofi_rxm or ^psm3,verbs;ofi_rxm)");
  EXPECT_EQ(errors_of("hosts: [{name: a, key: \"/k/\\x1b[2J\"}]\n"),
            "inv.yaml:1:24: hosts[0].key: `/k/\\x1b[2J` contains the control character \\x1b (a path must be "
            "printable ASCII on one line; rename it, or link it from such a path)");
  EXPECT_EQ(errors_of("hosts: [{name: a, shared: /mnt}]\nnfs: {server: a, options: \"rw) *(rw\"}\n"),
            "inv.yaml:2:27: nfs.options: `rw) *(rw` is not a valid NFS option list: ')' is not allowed "
            "(comma-separated name or name=value without spaces, e.g. rw,sync,no_subtree_check,anonuid=65534)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\nnfs: {server: a, export: /srv/../etc}\n"),
            "inv.yaml:2:26: nfs.export: `/srv/../etc` has a .. component (write the path without it, e.g. /etc)");
  EXPECT_EQ(errors_of("hosts: [{name: a, port: \"22 -o X\"}]\n"),
            "inv.yaml:1:25: hosts[0].port: `22 -o X` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(errors_of("hosts: [{name: a, address: \"10.0.0.1;touch\"}]\n"),
            "inv.yaml:1:28: hosts[0].address: `10.0.0.1;touch` is not an IPv4/IPv6 address or a valid DNS host "
            "name");
}

TEST(ParseInventoryErrors, EveryProblemStaysOnOneLine) {
  // A key, a range and a group name from the file are shown escaped too.
  EXPECT_EQ(errors_of("hosts: [{name: a, \"co\\nlour\": x}]\n"),
            "inv.yaml:1:19: hosts[0].co\\nlour: unknown key (allowed here: user, port, key, password_env, "
            "password_prompt, ranks, fabric, shared, become, become_password_env, jump, name, address, groups)");
  EXPECT_EQ(errors_of("hosts: [{name: \"n[1-\\n]\"}]\n"),
            "inv.yaml:1:16: hosts[0].name: bad range `n[1-\\n]`: `1-\\n` is not a number or a range like 01-04");
  EXPECT_EQ(errors_of("hosts: [{name: a, groups: [\"g\\r\"]}]\n"),
            "inv.yaml:1:28: hosts[0].groups: `g\\r` is not a valid group name (use letters, digits, '.', '-', '_')");
}

TEST(ParseInventory, ValuesTheGrammarAccepts) {
  auto inventory = parse_ok(
      "defaults:\n"
      "  user: svc.xft-1\n"
      "  key: \"/tmp/key dir/id_ed25519\"\n"
      "  shared: \"/mnt/a b;c$(d)&e|f<g>h\"\n"
      "  fabric: {provider: \"^psm3,verbs;ofi_rxm\", iface: enp1s0f0np0}\n"
      "hosts: [{name: a, address: 10.0.0.1}]\n"
      "nfs: {server: a, options: \"rw,sync,no_subtree_check,anonuid=65534,sec=sys:krb5\"}\n");
  ASSERT_EQ(inventory.hosts.size(), 1u);
  const Host& host = inventory.hosts[0];
  EXPECT_EQ(host.user, "svc.xft-1");
  EXPECT_EQ(host.credentials.key, "/tmp/key dir/id_ed25519");
  EXPECT_EQ(host.shared, "/mnt/a b;c$(d)&e|f<g>h");
  EXPECT_EQ(host.fabric.provider, "^psm3,verbs;ofi_rxm");
  EXPECT_EQ(host.fabric.iface, "enp1s0f0np0");
  EXPECT_EQ(inventory.nfs->export_path, "/mnt/a b;c$(d)&e|f<g>h");
  EXPECT_EQ(inventory.nfs->options, "rw,sync,no_subtree_check,anonuid=65534,sec=sys:krb5");
}

TEST(ParseInventoryErrors, KeyIsCheckedAfterHomeExpansion) {
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("HOME", "/home/o'brien", 1);
  EXPECT_EQ(errors_of("hosts: [{name: a, key: ~/.ssh/id}]\n"),
            "inv.yaml:1:24: hosts[0].key: `/home/o'brien/.ssh/id` contains a single quote (quotes, backticks and "
            "backslashes are not allowed in paths; rename it, or link it from a path without them)");
  ::setenv("HOME", home.c_str(), 1);
}

TEST(ParseInventoryErrors, DuplicateKey) {
  EXPECT_EQ(errors_of("hosts:\n  - name: a\n    user: x\n    user: y\n"),
            "inv.yaml:4:5: hosts[0].user: duplicate key (keep only one)");
}

TEST(ParseInventoryErrors, Groups) {
  EXPECT_EQ(errors_of("hosts: [{name: a}]\ngroups: {gpu: [a, b]}\n"),
            "inv.yaml:2:19: groups.gpu: `b` is not a host of this inventory (declare it under hosts: or fix the name)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\ngroups: {gpu: {a: 1}}\n"),
            "inv.yaml:2:15: groups.gpu.hosts: missing (list the group's hosts, e.g. hosts: [\"node[01-04]\"])\n"
            "inv.yaml:2:16: groups.gpu.a: unknown key (allowed here: hosts, become, become_password_env, jump)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\ngroups: {a: [a]}\n"),
            "inv.yaml:2:10: groups.a: a host has the same name (rename the group so targets are unambiguous)");
  EXPECT_EQ(errors_of("hosts: [{name: a, groups: {x: 1}}]\n"),
            "inv.yaml:1:27: hosts[0].groups: expected a list of group names (like [compute, head]), got a map");
}

TEST(ParseInventoryErrors, Nfs) {
  EXPECT_EQ(errors_of("hosts: [{name: a}]\nnfs: {server: b}\n"),
            "inv.yaml:2:15: nfs.server: `b` is not a host of this inventory (use a name from hosts:)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\nnfs: {server: a}\n"),
            "inv.yaml:2:6: nfs.export: missing and a has no shared path (set nfs.export or shared)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\nnfs: {export: /x}\n"),
            "inv.yaml:2:6: nfs.server: missing (name the inventory host that exports the shared path)");
  EXPECT_EQ(errors_of("hosts: [{name: a}]\nnfs: {server: b, export: x, options: \"rw sync\"}\n"),
            "inv.yaml:2:15: nfs.server: `b` is not a host of this inventory (use a name from hosts:)\n"
            "inv.yaml:2:26: nfs.export: `x` is not an absolute path (write it from /, e.g. /mnt)\n"
            "inv.yaml:2:38: nfs.options: `rw sync` is not a valid NFS option list: a space is not allowed "
            "(comma-separated name or name=value without spaces, e.g. rw,sync,no_subtree_check,anonuid=65534)");
}

TEST(ParseInventoryErrors, YamlSyntax) {
  EXPECT_EQ(errors_of("hosts:\n  - name: a\n   address: b\n"),
            "inv.yaml:3:4: syntax: end of sequence not found (fix the YAML: check indentation, quoting and colons)");
  EXPECT_EQ(errors_of("hosts: [{name: a\n"),
            "inv.yaml:2:1: syntax: end of map flow not found (fix the YAML: check indentation, quoting and colons)");
}

TEST(LoadInventory, MissingFileNamesThePath) {
  auto inventory = load_inventory("/nonexistent-xft/inventory.yaml");
  ASSERT_FALSE(inventory);
  EXPECT_NE(inventory.error().message.find("/nonexistent-xft/inventory.yaml"), std::string::npos);
}

TEST(ParseInventory, BecomeAndJumpFromDefaultsGroupsAndHosts) {
  auto inventory = parse_ok(
      "defaults: {user: ec2-user, become: sudo, jump: ops@bastion:2222}\n"
      "hosts:\n"
      "  - {name: \"a[1-2]\", address: \"10.0.0.[1-2]\"}\n"
      "  - {name: b1, address: 10.0.1.1, become: none, jump: none}\n"
      "  - {name: c1, address: 10.0.2.1, jump: [outer, \"inner:2200\"]}\n"
      "  - {name: d1, address: 10.0.3.1, groups: [pw]}\n"
      "groups:\n"
      "  pw: {hosts: [a2], become_password_env: SUDO_PW, jump: \"gw1,gw2\"}\n");
  ASSERT_EQ(inventory.hosts.size(), 5u);
  const Host& a1 = inventory.hosts[0];
  EXPECT_EQ(a1.become, Become::sudo);
  EXPECT_EQ(a1.become_password_env, "");
  EXPECT_EQ(a1.jump, (std::vector<JumpHost>{{"ops", "bastion", 2222}}));
  const Host& a2 = inventory.hosts[1];
  EXPECT_EQ(a2.become_password_env, "SUDO_PW");
  EXPECT_EQ(a2.jump, (std::vector<JumpHost>{{"", "gw1", 22}, {"", "gw2", 22}}));
  const Host& b1 = inventory.hosts[2];
  EXPECT_EQ(b1.become, Become::none);
  EXPECT_TRUE(b1.jump.empty());
  EXPECT_EQ(inventory.hosts[3].jump, (std::vector<JumpHost>{{"", "outer", 22}, {"", "inner", 2200}}));
  // d1 joined pw on its own entry: the group's settings reach it too.
  EXPECT_EQ(inventory.hosts[4].become_password_env, "SUDO_PW");
}

TEST(ParseInventoryErrors, BecomeAndJump) {
  EXPECT_EQ(errors_of("defaults: {become: su}\nhosts: [{name: a}]\n"),
            "inv.yaml:1:20: defaults.become: `su` is not a way to become root (use sudo, or none for a root login)");
  EXPECT_EQ(errors_of("hosts: [{name: a, become_password_env: SUDO_PW}]\n"),
            "inv.yaml:1:16: hosts[0].become_password_env: set for a but become is not sudo there "
            "(add become: sudo or remove it)");
  EXPECT_EQ(errors_of("hosts: [{name: a, become_password_env: \"1x\"}]\n"),
            "inv.yaml:1:40: hosts[0].become_password_env: `1x` is not an environment variable name (use letters, "
            "digits and _, e.g. XFT_SSH_PASSWORD)");
  EXPECT_EQ(errors_of("hosts: [{name: a, become_password: hunter2}]\n"),
            "inv.yaml:1:19: hosts[0].become_password: passwords must not be stored in the inventory (remove it; "
            "export the password in an environment variable and name it with password_env: VAR, or set "
            "password_prompt: true)");
  EXPECT_EQ(errors_of("hosts: [{name: a, jump: \"a,b,c\"}]\n"),
            "inv.yaml:1:25: hosts[0].jump: 3 bastions in a row (at most 2; reach the inner ones from the cluster "
            "network instead)");
  EXPECT_EQ(errors_of("hosts: [{name: a, jump: []}]\n"),
            "inv.yaml:1:25: hosts[0].jump: the list is empty (name a bastion, [user@]host[:port], or write jump: none)");
  EXPECT_EQ(errors_of("hosts: [{name: a, jump: [ok, \"b:x\"]}]\n"),
            "inv.yaml:1:30: hosts[0].jump: `x` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(errors_of("hosts: [{name: a, jump: {host: b}}]\n"),
            "inv.yaml:1:25: hosts[0].jump: expected a single value, got a map");
}
