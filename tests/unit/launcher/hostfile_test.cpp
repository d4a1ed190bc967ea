// --hostfile: the inventory hosts an MPI or DeepSpeed hostfile names, in its
// order, with its slots as ranks; every problem named with file:line:col.
#include <gtest/gtest.h>

#include "inventory/load.h"
#include "launcher/topology.h"

namespace xft::launcher {
namespace {

inventory::Inventory cluster() {
  auto parsed = inventory::parse_inventory(
      "defaults:\n"
      "  ranks: 1\n"
      "hosts:\n"
      "  - name: h01\n"
      "    address: 10.9.0.11\n"
      "  - name: h02\n"
      "    address: 10.9.0.12\n"
      "    ranks: per-socket\n"
      "  - name: h03\n"
      "    address: 10.9.0.13\n"
      "    ranks: 4\n",
      "inventory.yaml");
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : inventory::Inventory{};
}

// "name:ranks" per selected host, ranks as --ranks-per-host spells them.
std::vector<std::string> selected(const std::string& text) {
  auto hosts = hosts_from_hostfile(cluster(), text, "hostfile");
  EXPECT_TRUE(hosts.ok()) << (hosts.ok() ? "" : hosts.error().message);
  std::vector<std::string> out;
  if (hosts.ok())
    for (const auto& h : *hosts) out.push_back(h.name + ":" + ranks_to_string(h.ranks));
  return out;
}

std::string hostfile_error(const std::string& text) {
  auto hosts = hosts_from_hostfile(cluster(), text, "hostfile");
  return hosts.ok() ? "selected without error" : hosts.error().message;
}

TEST(Hostfile, SetupHostsFileSelectsInItsOrderWithSlotsAsRanks) {
  // What templates/mpi_hostfile.mustache writes: slots only where the inventory has a count.
  EXPECT_EQ(selected("# MPI hostfile written by xftctl setup hosts (one line per inventory host).\n"
                     "h03 slots=2\n"
                     "h01\n"),
            (std::vector<std::string>{"h03:2", "h01:1"}));
}

TEST(Hostfile, DeepSpeedAndOpenMpiFormsByNameOrAddress) {
  EXPECT_EQ(selected("\n  # workers\n10.9.0.12 slots=3 max_slots=8\nh01 slots=2   # the control node\n\n"),
            (std::vector<std::string>{"h02:3", "h01:2"}));
  // Without slots the host keeps the inventory's ranks, whatever their kind.
  EXPECT_EQ(selected("h02\n"), (std::vector<std::string>{"h02:per-socket"}));
}

TEST(Hostfile, Errors) {
  EXPECT_EQ(hostfile_error("h01 slots=1\n  h2 slots=2\n"),
            "hostfile:2:3: host: `h2` is not a host of inventory.yaml (did you mean `h02`? or add it there)");
  EXPECT_EQ(hostfile_error("worker-17 slots=2\n"),
            "hostfile:1:1: host: `worker-17` is not a host of inventory.yaml (add it there or remove the line)");
  EXPECT_EQ(hostfile_error("h01 slots=1\nh01 slots=2\n"),
            "hostfile:2:1: host: duplicate host `h01` (also at line 1; keep one line per host)");
  EXPECT_EQ(hostfile_error("h01\n10.9.0.11 slots=2\n"),
            "hostfile:2:1: host: `10.9.0.11` is host `h01` again (keep one line per host)");
  EXPECT_EQ(hostfile_error("h01 slots=0\n"),
            "hostfile:1:11: slots: 0 is below 1 (xftctl starts at least one rank per host)");
  EXPECT_EQ(hostfile_error("h01 slots=2 max_slots=x\n"),
            "hostfile:1:23: max_slots: `x` is not a number (write max_slots=N with N >= 1)");
  EXPECT_EQ(hostfile_error("h01 cpu=4\n"),
            "hostfile:1:5: host: `h01` has no slots=N (hostfile lines read NAME, NAME slots=N or NAME slots=N "
            "max_slots=M, e.g. h01 slots=2)");
  EXPECT_EQ(hostfile_error("h01 slots=2 extra\n"),
            "hostfile:1:13: host: `extra` after slots=N is not understood (hostfile lines read NAME, NAME slots=N or "
            "NAME slots=N max_slots=M, e.g. h01 slots=2)");
  EXPECT_EQ(hostfile_error("# nothing yet\n\n"),
            "hostfile:1:1: hosts: the file lists no hosts (write one NAME or NAME slots=N line per host)");
  // Every problem, one a line.
  EXPECT_EQ(hostfile_error("h9\nh02 slots=x\n"),
            "hostfile:1:1: host: `h9` is not a host of inventory.yaml (add it there or remove the line)\n"
            "hostfile:2:11: slots: `x` is not a number (write slots=N with N >= 1)");
}

}  // namespace
}  // namespace xft::launcher
