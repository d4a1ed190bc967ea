#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "inventory/ansible.h"
#include "inventory/load.h"
#include "inventory/show.h"
#include "inventory/write.h"
#include "tests/unit/support/test_paths.h"

using namespace xft::inventory;

namespace {

std::string fixture(const std::string& name) { return xft::test::data_dir() + "/inventory/" + name; }

ImportResult import_fixture(const std::string& name) {
  auto text = xft::read_file(fixture(name));
  EXPECT_TRUE(text);
  auto imported = import_ansible(*text, name);
  EXPECT_TRUE(imported) << imported.error().message;
  return imported ? *imported : ImportResult{};
}

std::string import_error(const std::string& ini) {
  auto imported = import_ansible(ini, "hosts");
  return imported ? "imported without error" : imported.error().message;
}

}  // namespace

TEST(ImportAnsible, XftDemoHostsFile) {
  auto imported = import_fixture("xft_demo_hosts.ini");
  ASSERT_EQ(imported.inventory.hosts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Host& host = imported.inventory.hosts[i];
    EXPECT_EQ(host.name, "192.168.0." + std::to_string(i + 1));
    EXPECT_EQ(host.address, host.name);
    EXPECT_EQ(host.user, "root");
    EXPECT_EQ(host.port, 22);
    EXPECT_TRUE(host.groups.empty());  // all_hosts is the whole cluster, not a group
  }
  EXPECT_TRUE(imported.warnings.empty());
  EXPECT_EQ(to_yaml(imported.inventory), "hosts:\n  - name: \"192.168.0.[1-4]\"\n");
}

TEST(ImportAnsible, HostsVarsGroupsAndChildren) {
  auto imported = import_fixture("cluster.ini");
  const auto& hosts = imported.inventory.hosts;
  ASSERT_EQ(hosts.size(), 5u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].address, "192.168.0.1");
  EXPECT_EQ(hosts[0].user, "root");  // the host line wins over [all_hosts:vars]
  EXPECT_EQ(hosts[0].credentials.key, "/root/.ssh/id_ed25519");
  EXPECT_EQ(hosts[0].groups, (std::vector<std::string>{"workers", "everything"}));
  EXPECT_EQ(hosts[4].name, "head");
  EXPECT_EQ(hosts[4].user, "xft");  // from [all_hosts:vars]
  EXPECT_EQ(hosts[4].port, 2222);
  EXPECT_EQ(hosts[4].groups, (std::vector<std::string>{"control", "everything"}));
  EXPECT_EQ(imported.inventory.groups.at("workers"), (std::vector<std::string>{"node1", "node2", "node3", "node4"}));
  EXPECT_EQ(imported.inventory.groups.at("everything"),
            (std::vector<std::string>{"node1", "node2", "node3", "node4", "head"}));
  EXPECT_EQ(imported.inventory.groups.count("all_hosts"), 0u);
  // ansible_python_interpreter only steers Ansible: dropped silently.
  EXPECT_EQ(imported.warnings, (std::vector<std::string>{
                                   "cluster.ini:13:1: xft_build_dir: ignored (no inventory field corresponds to it)"}));
  EXPECT_EQ(to_yaml(imported.inventory),
            "defaults:\n"
            "  key: /root/.ssh/id_ed25519\n"
            "hosts:\n"
            "  - name: \"node[1-4]\"\n"
            "    address: \"192.168.0.[1-4]\"\n"
            "  - name: head\n"
            "    address: 192.168.0.9\n"
            "    user: xft\n"
            "    port: 2222\n"
            "groups:\n"
            "  control: [head]\n"
            "  everything: [head, \"node[1-4]\"]\n"
            "  workers: [\"node[1-4]\"]\n");
}

TEST(ImportAnsible, RoundTripReparsesToTheSameHosts) {
  auto imported = import_fixture("cluster.ini");
  auto reparsed = parse_inventory(to_yaml(imported.inventory), "imported.yaml");
  ASSERT_TRUE(reparsed) << reparsed.error().message;
  ASSERT_EQ(reparsed->hosts.size(), imported.inventory.hosts.size());
  for (size_t i = 0; i < reparsed->hosts.size(); ++i) {
    const Host &a = imported.inventory.hosts[i], &b = reparsed->hosts[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.address, b.address);
    EXPECT_EQ(a.user, b.user);
    EXPECT_EQ(a.port, b.port);
    EXPECT_EQ(auth_label(a.credentials), auth_label(b.credentials));
  }
  EXPECT_EQ(reparsed->groups, imported.inventory.groups);
}

TEST(ImportAnsible, RefusesStoredPasswordNamingTheLine) {
  auto text = xft::read_file(fixture("xft_demo_hosts_password.ini"));
  auto imported = import_ansible(*text, "hosts");
  ASSERT_FALSE(imported);
  EXPECT_EQ(imported.error().message,
            "hosts:2:1: ansible_ssh_pass: passwords are not copied into the inventory (pass --password-env "
            "XFT_SSH_PASSWORD to import: the YAML then says password_env: XFT_SSH_PASSWORD, and you export "
            "XFT_SSH_PASSWORD=... before running xftctl)");
  EXPECT_EQ(imported.error().message.find("not-a-real-secret"), std::string::npos);
}

TEST(ImportAnsible, RefusesPasswordOnAHostLine) {
  auto message = import_error("[all_hosts]\nnode1 ansible_host=10.0.0.1 ansible_password=pw\n");
  EXPECT_EQ(message.substr(0, 66), "hosts:2:29: ansible_password: passwords are not copied into the in");
  EXPECT_EQ(message.find("pw\n"), std::string::npos);
}

TEST(ImportAnsible, Errors) {
  EXPECT_EQ(import_error("[all_hosts]\nnode1 ansible_port=99999\n"),
            "hosts:2:7: ansible_port: 99999 is out of range (use 1..65535, usually 22)");
  EXPECT_EQ(import_error("[all_hosts]\nnode1 ansible_host=10.0.0.300\n"),
            "hosts:2:7: ansible_host: `10.0.0.300` is not an IPv4/IPv6 address or a valid DNS host name");
  EXPECT_EQ(import_error("[all_hosts]\nnode_1\n"),
            "hosts:2:1: host: `node_1` is not an IP address or DNS name and has no ansible_host= (add one)");
  EXPECT_EQ(import_error("[all_hosts\n10.0.0.1\n"), "hosts:1:1: section: `[all_hosts` is missing its closing `]`");
  EXPECT_EQ(import_error("[all_hosts:foo]\n10.0.0.1\n"),
            "hosts:1:1: section: unknown section kind `:foo` (use :vars or :children)");
  EXPECT_EQ(import_error("[a]\nn1 ansible_host=10.0.0.1\nn2 ansible_host=10.0.0.1\n"),
            "hosts:3:1: host: n2 has the same address 10.0.0.1 as n1 (line 2; each host needs its own address)");
  EXPECT_EQ(import_error("[a]\n10.0.0.1\n[b:children]\nmissing\n"),
            "hosts:4:1: children: group `missing` is not defined in this file");
  EXPECT_EQ(import_error("# nothing\n"), "hosts:1:1: hosts: the file lists no hosts (add them under [all_hosts])");
  EXPECT_EQ(import_error("[a]\nnode[4:1] ansible_host=10.0.0.1\n"),
            "hosts:2:1: host: bad range `node[4-1]`: 4 > 1 (write the lower bound first: 1-4)");
}

// Imported values obey the YAML inventory's grammar, at the variable's position.
TEST(ImportAnsible, ValuesFollowTheGrammar) {
  EXPECT_EQ(import_error("[all_hosts]\nnode1 ansible_host=10.0.0.1 ansible_user=\"root -o ProxyCommand=x\"\n"),
            "hosts:2:29: ansible_user: `root -o ProxyCommand=x` is not a valid user name (POSIX portable names: "
            "letters, digits, '.', '_', '-', not starting with '-'; at most 32 characters)");
  EXPECT_EQ(import_error("[all_hosts:vars]\nansible_ssh_user=ro;ot\n[all_hosts]\n10.0.0.1\n"),
            "hosts:2:1: ansible_ssh_user: `ro;ot` is not a valid user name (POSIX portable names: letters, digits, "
            "'.', '_', '-', not starting with '-'; at most 32 characters)");
  EXPECT_EQ(import_error("[all_hosts]\nnode1 ansible_host=10.0.0.1 ansible_port=\"22 -oX\"\n"),
            "hosts:2:29: ansible_port: `22 -oX` is not a port number (use 1..65535, usually 22)");
  EXPECT_EQ(import_error("[all_hosts]\n10.0.0.1 ansible_ssh_private_key_file=\"/k'; touch /tmp/x; echo '\"\n"),
            "hosts:2:10: ansible_ssh_private_key_file: `/k'; touch /tmp/x; echo '` contains a single quote (quotes, "
            "backticks and backslashes are not allowed in paths; rename it, or link it from a path without them)");
  EXPECT_EQ(import_error("[all_hosts]\n10.0.0.1 ansible_private_key_file=/k/../../etc/shadow\n"),
            "hosts:2:10: ansible_private_key_file: `/k/../../etc/shadow` has a .. component (write the path "
            "without it, e.g. /etc/shadow)");
  EXPECT_EQ(import_error("[all_hosts]\nnode_1 ansible_host=10.0.0.1;touch\n"),
            "hosts:2:8: ansible_host: `10.0.0.1;touch` is not an IPv4/IPv6 address or a valid DNS host name");
  EXPECT_EQ(import_error("[all_hosts]\n10.0.0.1 ansible_port=0\n"),
            "hosts:2:10: ansible_port: 0 is out of range (use 1..65535, usually 22)");
}

TEST(ImportAnsible, WarningsStayOnOneLine) {
  auto imported = import_ansible("[all_hosts]\n10.0.0.1 x\x1b[2J=1\n", "hosts");
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(imported->warnings,
            (std::vector<std::string>{"hosts:2:10: x\\x1b[2J: ignored (no inventory field corresponds to it)"}));
}

TEST(ImportAnsible, KeyPathWithSpacesIsKept) {
  auto imported = import_ansible("[all_hosts]\n10.0.0.1 ansible_ssh_private_key_file=\"/tmp/key dir/id\"\n", "hosts");
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(imported->inventory.hosts[0].credentials.key, "/tmp/key dir/id");
}

TEST(ImportAnsible, QuotedValuesAndAnsibleRanges) {
  auto imported = import_ansible(
      "[all_hosts]\nn[01:02] ansible_user=\"admin\"\n[all_hosts:vars]\n"
      "ansible_ssh_common_args='-o StrictHostKeyChecking=no'\nansible_port = 2200\n",
      "hosts");
  ASSERT_TRUE(imported) << imported.error().message;
  ASSERT_EQ(imported->inventory.hosts.size(), 2u);
  EXPECT_EQ(imported->inventory.hosts[1].name, "n02");
  EXPECT_EQ(imported->inventory.hosts[1].user, "admin");
  EXPECT_EQ(imported->inventory.hosts[1].port, 2200);
  EXPECT_TRUE(imported->warnings.empty());
}

namespace {

std::string import_yaml(const std::string& ini, const std::string& password_env, std::string* warnings = nullptr) {
  auto imported = import_ansible(ini, "hosts", ImportOptions{password_env});
  if (!imported) return "error: " + imported.error().message;
  if (warnings)
    for (const auto& warning : imported->warnings) *warnings += warning + "\n";
  return to_yaml(imported->inventory);
}

}  // namespace

// The XFT demo's hosts file with its password line: --password-env stands in for it.
TEST(ImportAnsible, PasswordEnvReplacesTheStoredPassword) {
  auto text = xft::read_file(fixture("xft_demo_hosts_password.ini"));
  ASSERT_TRUE(text);
  auto imported = import_ansible(*text, "hosts", ImportOptions{"XFT_SSH_PASSWORD"});
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_TRUE(imported->warnings.empty());
  std::string yaml = to_yaml(imported->inventory);
  EXPECT_EQ(yaml,
            "defaults:\n"
            "  password_env: XFT_SSH_PASSWORD\n"
            "hosts:\n"
            "  - name: \"192.168.0.[1-2]\"\n");
  EXPECT_EQ(yaml.find("not-a-real-secret"), std::string::npos);
  auto reparsed = parse_inventory(yaml, "imported.yaml");
  ASSERT_TRUE(reparsed) << reparsed.error().message;
  ASSERT_EQ(reparsed->hosts.size(), 2u);
  EXPECT_EQ(auth_label(reparsed->hosts[1].credentials), "env:XFT_SSH_PASSWORD");
}

TEST(ImportAnsible, PasswordEnvLeavesKeysAndIgnoresBecomePasswords) {
  std::string warnings;
  EXPECT_EQ(import_yaml("[all_hosts]\n"
                        "n1 ansible_host=10.0.0.1 ansible_password=s3cret\n"
                        "n2 ansible_host=10.0.0.2 ansible_ssh_private_key_file=/k/id ansible_ssh_pass=s3cret\n"
                        "[all_hosts:vars]\n"
                        "ansible_become_pass=s3cret\n",
                        "PW", &warnings),
            "defaults:\n"
            "  password_env: PW\n"
            "hosts:\n"
            "  - name: n1\n"
            "    address: 10.0.0.1\n"
            "  - name: n2\n"
            "    address: 10.0.0.2\n"
            "    key: /k/id\n");
  EXPECT_EQ(warnings,
            "hosts:5:1: ansible_become_pass: ignored (xftctl logs in as the user itself and has no use for a become "
            "password)\n"
            "hosts:3:61: ansible_ssh_pass: ignored (the host logs in with its key file)\n");
  EXPECT_EQ(warnings.find("s3cret"), std::string::npos);
}

// A password written where a name=value belongs never reaches a message.
TEST(ImportAnsible, MisplacedPasswordsAreNotShown) {
  EXPECT_EQ(import_yaml("[all_hosts]\nansible_ssh_pass=s3cret\n10.0.0.1\n", ""),
            "error: hosts:2:1: ansible_ssh_pass: a variable among the hosts of [all_hosts] (move it under "
            "[all_hosts:vars])");
  EXPECT_EQ(import_yaml("[all_hosts:vars]\nansible_ssh_pass: s3cret\n[all_hosts]\n10.0.0.1\n", "PW"),
            "error: hosts:2:1: variable: not name=value (write name=value; the text is not shown, it may be a "
            "password)");
  EXPECT_EQ(import_yaml("[all_hosts]\n10.0.0.1 ansible_ssh_pass= s3cret\n", "PW"),
            "error: hosts:2:28: variable: not name=value (write name=value; the text is not shown, it may be a "
            "password)");
  EXPECT_EQ(import_yaml("[all_hosts]\n10.0.0.1 oops\n", "PW"), "error: hosts:2:10: variable: `oops` is not name=value");
}

TEST(ImportFormat, DeepSpeedOnlyWhenSlotsAreTheOnlyVariables) {
  EXPECT_EQ(detect_import_format("# hostfile\nworker-1 slots=4\nworker-2 slots=4 # big\n\n"), ImportFormat::deepspeed);
  EXPECT_EQ(detect_import_format("worker-1 slots=4\n[all_hosts]\nworker-2\n"), ImportFormat::ansible);
  EXPECT_EQ(detect_import_format("worker-1 slots=4 ansible_user=x\n"), ImportFormat::ansible);
  EXPECT_EQ(detect_import_format("worker-1\nworker-2\n"), ImportFormat::ansible);
  EXPECT_EQ(detect_import_format("a=b slots=2\n"), ImportFormat::ansible);
  EXPECT_EQ(detect_import_format(""), ImportFormat::ansible);
}
