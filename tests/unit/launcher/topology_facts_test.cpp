// Host facts parsed from recorded sysfs trees (tests/data/sysfs, made by generate.py)
// and from this machine's own /sys, locally and through the remote probe script.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "launcher/facts.h"
#include "tests/unit/support/test_paths.h"

namespace xft::launcher {
namespace {

std::string tree(const std::string& name) { return xft::test::data_dir() + "/sysfs/" + name; }

HostFacts load(const std::string& name) {
  auto facts = probe_local_facts(tree(name), name);
  EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
  return facts.ok() ? *facts : HostFacts{};
}

std::vector<int> range(int lo, int hi, int step = 1) {
  std::vector<int> ids;
  for (int i = lo; i <= hi; i += step) ids.push_back(i);
  return ids;
}

TEST(CpuList, ParsesRangesAndSingles) {
  auto ids = parse_cpu_list("0-3,8,10-11\n");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("").ok());
  EXPECT_TRUE(parse_cpu_list("")->empty());
}

TEST(CpuList, RejectsGarbageWithTheOffendingPart) {
  auto ids = parse_cpu_list("0-3,x");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().message, "bad CPU list \"0-3,x\": \"x\" is not a number");
  ids = parse_cpu_list("5-2");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().message, "bad CPU list \"5-2\": \"5-2\" is not a range a-b");
}

TEST(CpuList, FormatsRunsAsRangesAndKeepsStridedListsExplicit) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 9, 10, 11}), "0-3,8-11");
  EXPECT_EQ(format_cpu_list({0, 2, 4, 6}), "0,2,4,6");
  EXPECT_EQ(format_cpu_list({7}), "7");
  EXPECT_EQ(format_cpu_list({5, 4}), "4-5");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(Facts, CloudVmWithAdjacentSiblings) {
  HostFacts f = load("cloud-96vcpu");
  ASSERT_EQ(f.cpus.size(), 96u);
  EXPECT_EQ(f.core_count(), 48);
  EXPECT_EQ(f.package_count(), 1);
  EXPECT_EQ(f.cpu(0)->siblings, (std::vector<int>{0, 1}));
  EXPECT_EQ(f.cpu(95)->siblings, (std::vector<int>{94, 95}));
  EXPECT_EQ(f.cpu(95)->core, 47);
  EXPECT_EQ(f.cpu_model, "Intel(R) Xeon(R) Platinum 8575C");
  EXPECT_EQ(f.isa, (std::vector<std::string>{"avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "avx512_fp16"}));
  EXPECT_EQ(f.memory_kb, 393216000u);
  ASSERT_EQ(f.nodes.size(), 1u);
  EXPECT_EQ(f.nodes[0].cpus, range(0, 95));
  ASSERT_EQ(f.nics.size(), 1u);
  EXPECT_EQ(f.nics[0].name, "eth0");
  EXPECT_EQ(f.nics[0].kind, "net");
  EXPECT_EQ(f.nics[0].numa_node, -1);
}

TEST(Facts, TwoSocketSnc2SiblingsFarApart) {
  HostFacts f = load("spr-2s-snc2");
  ASSERT_EQ(f.cpus.size(), 224u);
  EXPECT_EQ(f.core_count(), 112);
  EXPECT_EQ(f.package_count(), 2);
  EXPECT_EQ(f.cpu(5)->siblings, (std::vector<int>{5, 117}));
  EXPECT_EQ(f.cpu(117)->package, 0);
  EXPECT_EQ(f.cpu(170)->package, 1);
  EXPECT_EQ(f.cpu(170)->numa_node, 2);
  ASSERT_EQ(f.nodes.size(), 4u);
  EXPECT_EQ(format_cpu_list(f.nodes[1].cpus), "28-55,140-167");
  EXPECT_EQ(f.nodes[2].distance, (std::map<int, int>{{0, 21}, {1, 21}, {2, 10}, {3, 12}}));
  ASSERT_EQ(f.nics.size(), 3u);
  EXPECT_EQ(f.nics[0].name, "mlx5_0");
  EXPECT_EQ(f.nics[0].kind, "infiniband");
  EXPECT_EQ(f.nics[0].numa_node, 2);
  EXPECT_EQ(f.nic("eno1")->numa_node, 0);
  EXPECT_EQ(f.nic("ens5f0")->numa_node, 2);
}

TEST(Facts, MemorylessNodeIsRecognized) {
  HostFacts f = load("memoryless-node");
  ASSERT_EQ(f.nodes.size(), 4u);
  EXPECT_TRUE(f.nodes[0].has_memory());
  EXPECT_FALSE(f.nodes[1].has_memory());
  EXPECT_EQ(f.nodes[1].cpus, range(8, 15));
  EXPECT_TRUE(f.nodes[3].has_memory());
  EXPECT_TRUE(f.nodes[3].cpus.empty());
  EXPECT_EQ(f.nodes[3].memory_kb, 128000000u);
  EXPECT_TRUE(f.isa.empty());
}

TEST(Facts, CpusetAndOfflineCpus) {
  HostFacts f = load("cpuset-partial");
  ASSERT_EQ(f.cpus.size(), 32u);
  EXPECT_FALSE(f.cpu(31)->online);
  EXPECT_EQ(f.cpu(31)->package, -1);  // an offline CPU has no topology directory
  EXPECT_EQ(f.cpu(15)->siblings, (std::vector<int>{15}));
  std::vector<int> allowed;
  for (const auto& c : f.cpus)
    if (c.allowed) allowed.push_back(c.id);
  EXPECT_EQ(format_cpu_list(allowed), "4-11,20-28");
}

TEST(Facts, MissingTreeSaysWhatIsWrong) {
  auto facts = probe_local_facts("/nonexistent-xft-root");
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.error().message,
            "/nonexistent-xft-root/sys/devices/system/cpu/: no CPUs found (is --sysfs-root the root of a host tree?)");
}

TEST(Facts, BadFileIsNamedWithItsPath) {
  FileMap files = read_fact_files(tree("cloud-96vcpu"));
  files["/sys/devices/system/cpu/cpu3/topology/core_id"] = "three\n";
  auto facts = parse_facts(files, "h", "tree");
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.error().message, "tree/sys/devices/system/cpu/cpu3/topology/core_id: \"three\" is not a number");
}

TEST(Facts, JsonRoundTrip) {
  HostFacts f = load("spr-2s-snc2");
  auto back = facts_from_json(facts_to_json(f), "cache");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(facts_to_json(*back), facts_to_json(f));
}

TEST(Facts, CacheSavesAndLoads) {
  char dir_template[] = "/tmp/xft-facts-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = std::string(dir_template) + "/facts";
  HostFacts f = load("xeon-4s");
  f.host = "n07";
  ASSERT_TRUE(save_cached_facts(dir, f).ok());
  auto back = load_cached_facts(dir, "n07");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->cpus.size(), 192u);
  EXPECT_EQ(back->probed_at, f.probed_at);
  std::system(("rm -rf " + std::string(dir_template)).c_str());
}

std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> ids;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  return ids;
}

TEST(Facts, ThisMachine) {
  auto f = probe_local_facts("/");
  ASSERT_TRUE(f.ok()) << f.error().message;
  int online = 0;
  std::vector<int> allowed;
  for (const auto& c : f->cpus) {
    online += c.online;
    if (c.online && c.allowed) allowed.push_back(c.id);
  }
  EXPECT_EQ(online, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(allowed, affinity());
  EXPECT_GE(f->nodes.size(), 1u);
  EXPECT_GT(f->memory_kb, 0u);
}

// The remote path: the probe script's output, parsed back, gives the same facts
// as reading the files directly.
TEST(Facts, ProbeScriptDumpMatchesLocalRead) {
  char path[] = "/tmp/xft-probe-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string script = fact_probe_script();
  ASSERT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("sh " + std::string(path)).c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string dump;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) dump.append(buf, n);
  unlink(path);
  auto remote = parse_facts(parse_fact_dump(dump), "localhost", "localhost:");
  auto local = parse_facts(read_fact_files("/"), "localhost", "");
  ASSERT_TRUE(remote.ok()) << remote.error().message;
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(facts_to_json(*remote).dump(), facts_to_json(*local).dump());
  EXPECT_FALSE(remote->cpu_model.empty());
}

TEST(Facts, DumpParserSplitsFiles) {
  FileMap files = parse_fact_dump("==> /a <==\n1\n\n==> /b/c <==\nx y\nz\n");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files["/a"], "1\n\n");
  EXPECT_EQ(files["/b/c"], "x y\nz\n");
}

}  // namespace
}  // namespace xft::launcher
