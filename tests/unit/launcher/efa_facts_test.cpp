// EFA's own libfabric in the host facts: found in a recorded sysfs tree with
// /opt/amazon/efa added, by the local reader and by the probe's shell, and
// kept (or re-probed, for older files) by the facts cache.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "launcher/facts.h"
#include "tests/unit/support/test_paths.h"

namespace xft::launcher {
namespace {

namespace fs = std::filesystem;

// A copy of the cloud-96vcpu tree, plus whatever a test adds under /opt; the
// process's LD_LIBRARY_PATH set for the test and restored after it.
class EfaTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("xft-efa-facts-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::copy(xft::test::data_dir() + "/sysfs/cloud-96vcpu", root_, fs::copy_options::recursive);
    if (const char* ld = std::getenv("LD_LIBRARY_PATH")) saved_ld_ = ld;
    ::setenv("LD_LIBRARY_PATH", "/usr/local/cuda/lib64", 1);
  }
  void TearDown() override {
    fs::remove_all(root_);
    if (saved_ld_) ::setenv("LD_LIBRARY_PATH", saved_ld_->c_str(), 1);
    else ::unsetenv("LD_LIBRARY_PATH");
  }
  void add(const std::string& relative) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << "not really a library\n";
  }
  HostFacts probe() {
    auto facts = probe_local_facts(root_.string(), "h01");
    EXPECT_TRUE(facts.ok()) << (facts.ok() ? "" : facts.error().message);
    return facts.ok() ? *facts : HostFacts{};
  }
  // The probe script's EFA part, run with $r at the tree.
  FileMap probe_shell() {
    std::string command = "r='" + root_.string() + "'\n" + efa_libfabric_probe_shell();
    char path[] = "/tmp/xft-efa-probe-XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, command.data(), command.size()), static_cast<ssize_t>(command.size()));
    close(fd);
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("sh " + std::string(path)).c_str(), "r"), pclose);
    std::string dump;
    char buf[4096];
    for (size_t n; pipe && (n = fread(buf, 1, sizeof buf, pipe.get())) > 0;) dump.append(buf, n);
    unlink(path);
    return parse_fact_dump(dump);
  }
  fs::path root_;
  std::optional<std::string> saved_ld_;
};

TEST_F(EfaTree, TopologyFactsLib64IsPreferredWithTheSessionsLibraryPath) {
  add("opt/amazon/efa/lib/libfabric.so.1");
  add("opt/amazon/efa/lib64/libfabric.so.1");
  HostFacts f = probe();
  EXPECT_EQ(f.efa_libfabric_dir, "/opt/amazon/efa/lib64");
  EXPECT_EQ(f.ld_library_path, "/usr/local/cuda/lib64");
  EXPECT_EQ(f.cpus.size(), 96u);
  EXPECT_EQ(probe_shell(), (FileMap{{"efa libfabric", "/opt/amazon/efa/lib64\n"},
                                    {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64\n"}}));
}

TEST_F(EfaTree, TopologyFactsLibWhenThereIsNoLib64) {
  add("opt/amazon/efa/lib/libfabric.so.1");
  ::unsetenv("LD_LIBRARY_PATH");
  HostFacts f = probe();
  EXPECT_EQ(f.efa_libfabric_dir, "/opt/amazon/efa/lib");
  EXPECT_EQ(f.ld_library_path, "");
  EXPECT_EQ(probe_shell(), (FileMap{{"efa libfabric", "/opt/amazon/efa/lib\n"}, {"LD_LIBRARY_PATH", "\n"}}));
}

// EFA's tools without its library, or another library there, are not EFA's libfabric.
TEST_F(EfaTree, TopologyFactsNoLibfabricSoOneNoEfa) {
  add("opt/amazon/efa/bin/fi_info");
  add("opt/amazon/efa/lib64/libfabric.so");
  HostFacts f = probe();
  EXPECT_EQ(f.efa_libfabric_dir, "");
  EXPECT_EQ(f.ld_library_path, "");
  EXPECT_EQ(probe_shell(), FileMap{});
}

TEST_F(EfaTree, TopologyFactsProbeDumpSectionsParse) {
  FileMap files = read_fact_files(root_.string());
  files["efa libfabric"] = "/opt/amazon/efa/lib\n";
  files["LD_LIBRARY_PATH"] = "/a:/b\n";
  auto f = parse_facts(files, "h01", "h01:");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->efa_libfabric_dir, "/opt/amazon/efa/lib");
  EXPECT_EQ(f->ld_library_path, "/a:/b");
}

TEST(TopologyFactsEfa, LibraryPathPutsEfasDirectoryFirst) {
  EXPECT_EQ(efa_library_path("/opt/amazon/efa/lib64", "/usr/local/cuda/lib64"),
            "/opt/amazon/efa/lib64:/usr/local/cuda/lib64");
  EXPECT_EQ(efa_library_path("/opt/amazon/efa/lib64", ""), "/opt/amazon/efa/lib64");
  EXPECT_EQ(efa_library_path("", "/usr/lib"), "");
}

TEST_F(EfaTree, TopologyFactsCacheKeepsEfaAndReprobesOlderFiles) {
  add("opt/amazon/efa/lib64/libfabric.so.1");
  HostFacts f = probe();
  std::string dir = (root_ / "cache").string();
  ASSERT_TRUE(save_cached_facts(dir, f).ok());
  auto back = load_cached_facts(dir, "h01");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->efa_libfabric_dir, "/opt/amazon/efa/lib64");
  EXPECT_EQ(back->ld_library_path, "/usr/local/cuda/lib64");

  // A file of an xftctl that did not look for EFA's libfabric is a cache miss.
  nlohmann::json old = facts_to_json(f);
  old.erase("efa_libfabric_dir");
  old.erase("ld_library_path");
  std::ofstream(dir + "/h01.json") << old.dump(2);
  auto stale = load_cached_facts(dir, "h01");
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().message, dir + "/h01.json: written before EFA's libfabric was probed; re-probing the host");
  // Parsed on its own, the absent fields mean the system's libfabric.
  auto parsed = facts_from_json(old, "old");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->efa_libfabric_dir, "");
}

}  // namespace
}  // namespace xft::launcher
