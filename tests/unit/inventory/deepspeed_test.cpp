#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "inventory/deepspeed.h"
#include "inventory/load.h"
#include "inventory/show.h"
#include "inventory/write.h"
#include "tests/unit/support/test_paths.h"

using namespace xft::inventory;

namespace {

std::string import_error(const std::string& text) {
  auto imported = import_deepspeed(text, "hostfile");
  return imported ? "imported without error" : imported.error().message;
}

}  // namespace

TEST(ImportDeepSpeed, SlotsBecomeRanks) {
  auto text = xft::read_file(xft::test::data_dir() + "/inventory/deepspeed_hostfile");
  ASSERT_TRUE(text);
  EXPECT_EQ(detect_import_format(*text), ImportFormat::deepspeed);
  auto imported = import_deepspeed(*text, "hostfile");
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_TRUE(imported->warnings.empty());
  std::string yaml = to_yaml(imported->inventory);
  EXPECT_EQ(yaml,
            "defaults:\n"
            "  ranks: 2\n"
            "hosts:\n"
            "  - name: \"worker-[1-4]\"\n"
            "  - name: 192.168.0.9\n"
            "    ranks: 1\n");
  auto reparsed = parse_inventory(yaml, "imported.yaml");
  ASSERT_TRUE(reparsed) << reparsed.error().message;
  ASSERT_EQ(reparsed->hosts.size(), 5u);
  EXPECT_EQ(reparsed->hosts[3].name, "worker-4");
  EXPECT_EQ(reparsed->hosts[3].address, "worker-4");
  EXPECT_EQ(ranks_label(reparsed->hosts[3].ranks), "2");
  EXPECT_EQ(ranks_label(reparsed->hosts[4].ranks), "1");
}

TEST(ImportDeepSpeed, PasswordEnvForHostsWithoutKeys) {
  auto imported = import_deepspeed("localhost slots=4\n", "hostfile", ImportOptions{"DS_PASSWORD"});
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(to_yaml(imported->inventory),
            "defaults:\n"
            "  password_env: DS_PASSWORD\n"
            "  ranks: 4\n"
            "hosts:\n"
            "  - name: localhost\n");
}

// Open MPI's form of the line: max_slots is read and ignored (no more ranks than slots start).
TEST(ImportDeepSpeed, OpenMpiMaxSlotsIsRead) {
  auto imported = import_deepspeed("w1 slots=2 max_slots=8\n", "hostfile");
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(to_yaml(imported->inventory),
            "defaults:\n"
            "  ranks: 2\n"
            "hosts:\n"
            "  - name: w1\n");
}

TEST(ImportDeepSpeed, Errors) {
  EXPECT_EQ(import_error("worker-1\n"),
            "hostfile:1:1: host: `worker-1` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. "
            "worker-1 slots=4)");
  EXPECT_EQ(import_error("worker-1 gpus=4\n"),
            "hostfile:1:10: host: `worker-1` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. "
            "worker-1 slots=4)");
  EXPECT_EQ(import_error("worker-1 slots=4 extra\n"),
            "hostfile:1:18: host: `extra` after slots=N is not understood (DeepSpeed hostfile lines read NAME "
            "slots=N, e.g. worker-1 slots=4)");
  EXPECT_EQ(import_error("worker-1 slots=x4\n"), "hostfile:1:16: slots: `x4` is not a number (write slots=N with N >= 1)");
  EXPECT_EQ(import_error("worker-1 slots=\n"), "hostfile:1:16: slots: `` is not a number (write slots=N with N >= 1)");
  EXPECT_EQ(import_error("worker-1 slots=0\n"),
            "hostfile:1:16: slots: 0 is below 1 (xftctl starts at least one rank per host)");
  EXPECT_EQ(import_error("worker-1 slots=10000000\n"),
            "hostfile:1:16: slots: 10000000 is too large (use the number of ranks for this host, e.g. 2)");
  EXPECT_EQ(import_error("w1 slots=1\n  w1 slots=2\n"),
            "hostfile:2:3: host: duplicate host `w1` (also at line 1; keep one line per host)");
  EXPECT_EQ(import_error("worker_1 slots=1\n"),
            "hostfile:1:1: host: `worker_1` is not an IPv4/IPv6 address or a valid DNS host name");
  EXPECT_EQ(import_error("-oProxyCommand=x slots=1\n"),
            "hostfile:1:1: host: `-oProxyCommand=x` is not a valid host name (use letters, digits, '.', '-', '_', not "
            "starting with '-')");
  EXPECT_EQ(import_error("# only comments\n\n"),
            "hostfile:1:1: hosts: the file lists no hosts (write one NAME slots=N line per host)");
  // An Ansible file read as a hostfile: values are not shown, they may be passwords.
  EXPECT_EQ(import_error("[all_hosts:vars]\nansible_ssh_pass=s3cret\n[all_hosts]\nw1 slots=1 ansible_password=s3cret\n"),
            "hostfile:1:1: host: `[all_hosts:vars]` is an Ansible section, not a hostfile line (import it with "
            "--format ansible)\n"
            "hostfile:2:1: host: `ansible_ssh_pass=...` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, "
            "e.g. worker-1 slots=4)\n"
            "hostfile:3:1: host: `[all_hosts]` is an Ansible section, not a hostfile line (import it with --format "
            "ansible)\n"
            "hostfile:4:12: host: `ansible_password=...` after slots=N is not understood (DeepSpeed hostfile lines "
            "read NAME slots=N, e.g. worker-1 slots=4)");
  // Every problem, one a line.
  EXPECT_EQ(import_error("a slots=0\nb\n"),
            "hostfile:1:9: slots: 0 is below 1 (xftctl starts at least one rank per host)\n"
            "hostfile:2:1: host: `b` has no slots=N (DeepSpeed hostfile lines read NAME slots=N, e.g. worker-1 "
            "slots=4)");
}
