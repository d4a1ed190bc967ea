#include "remote/known_hosts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/atomic_file.h"

namespace xft::remote {
namespace {

// Two ed25519 keys and their fingerprints as `ssh-keygen -lf` prints them.
const std::string kKeyA = "AAAAC3NzaC1lZDI1NTE5AAAAIFRQTIW5+sPpLDehgm0SI2PVyF2N0FRYZzvYaseGEyho";
const std::string kFingerprintA = "SHA256:YsVB17qA300QJb6m6EeHwH3y5r4je7/fmTZPDSDkz2U";
const std::string kKeyB = "AAAAC3NzaC1lZDI1NTE5AAAAIDM07qpVEV4anBUY6tWB+eW/LxumK8iTGZEXFbIlqzb+";
const std::string kFingerprintB = "SHA256:ss4fT9eMv0I2OWZjVIKfGHiHDOheSaF1iFr7IOnC2LI";
// `ssh-keygen -H` of "[10.0.0.5]:2222 <A>" and "node7 <B>".
const std::string kHashedPort = "|1|pM2usHQb7BcES5sh8UMS6cC5OsM=|VtDmKCAufCWLDWdC2mr1zDXLF8M=";
const std::string kHashedNode7 = "|1|YKCyCNEGhbyKDB/JWwrVhafdESs=|9aGFp7t+LdS2emwtnBwJ7x3PUEY=";

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/xft-known-hosts-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(KnownHostsName, PortTwentyTwoIsBareOtherPortsBracketed) {
  EXPECT_EQ(known_hosts_name("10.0.0.1", 22), "10.0.0.1");
  EXPECT_EQ(known_hosts_name("10.0.0.1", 2222), "[10.0.0.1]:2222");
  EXPECT_EQ(known_hosts_name("Node01.Example.COM", 22), "node01.example.com");
  EXPECT_EQ(known_hosts_name("fe80::1", 2200), "[fe80::1]:2200");
}

TEST(KeyFingerprint, MatchesSshKeygen) {
  EXPECT_EQ(*key_fingerprint("ssh-ed25519", kKeyA), kFingerprintA);
  EXPECT_EQ(*key_fingerprint("ssh-ed25519", kKeyB), kFingerprintB);
  EXPECT_FALSE(key_fingerprint("ssh-ed25519", "bm90IGEga2V5").ok());
  EXPECT_FALSE(key_fingerprint("no-such-type", kKeyA).ok());
}

TEST(KnownHosts, ChecksKnownUnknownAndChanged) {
  auto known = KnownHosts::parse("10.0.0.1 ssh-ed25519 " + kKeyA + "\n");
  EXPECT_EQ(known.check("10.0.0.1", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("10.0.0.2", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  auto changed = known.check("10.0.0.1", "ssh-ed25519", kKeyB);
  EXPECT_EQ(changed.match, HostKeyMatch::changed);
  ASSERT_NE(changed.conflicting, nullptr);
  EXPECT_EQ(changed.conflicting->line, 1);
  EXPECT_EQ(changed.conflicting->key_base64, kKeyA);
}

TEST(KnownHosts, BracketedPortEntriesMatchOnlyThatPort) {
  auto known = KnownHosts::parse("[10.0.0.1]:2222 ssh-ed25519 " + kKeyA + "\n");
  EXPECT_EQ(known.check("[10.0.0.1]:2222", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("10.0.0.1", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  EXPECT_EQ(known.check("[10.0.0.1]:22", "ssh-ed25519", kKeyB).match, HostKeyMatch::unknown);
}

TEST(KnownHosts, HashedEntriesMatchTheirHostOnly) {
  auto known = KnownHosts::parse(kHashedPort + " ssh-ed25519 " + kKeyA + "\n" + kHashedNode7 +
                                 " ssh-ed25519 " + kKeyB + "\n");
  ASSERT_EQ(known.entries().size(), 2u);
  EXPECT_EQ(known.check("[10.0.0.5]:2222", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("node7", "ssh-ed25519", kKeyB).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("NODE7", "ssh-ed25519", kKeyB).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("node7", "ssh-ed25519", kKeyA).match, HostKeyMatch::changed);
  EXPECT_EQ(known.check("10.0.0.5", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  EXPECT_EQ(known.check("node8", "ssh-ed25519", kKeyB).match, HostKeyMatch::unknown);
}

TEST(KnownHosts, BrokenHashesAndJunkLinesAreIgnoredButKept) {
  std::string text =
      "# managed by xftctl\n"
      "\n"
      "|1|not base64|xx ssh-ed25519 " + kKeyA + "\n"
      "|1|onlysalt ssh-ed25519 " + kKeyA + "\n"
      "garbage\n"
      "10.0.0.9 ssh-ed25519 " + kKeyB + " comment words\n";
  auto known = KnownHosts::parse(text);
  EXPECT_EQ(known.text(), text);
  EXPECT_EQ(known.check("10.0.0.9", "ssh-ed25519", kKeyB).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("10.0.0.1", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  ASSERT_EQ(known.entries().size(), 3u);
  EXPECT_EQ(known.entries()[2].line, 6);
}

TEST(KnownHosts, PatternsGlobsAndNegation) {
  auto known = KnownHosts::parse("node*,!node13,10.1.1.1 ssh-ed25519 " + kKeyA + "\n");
  EXPECT_EQ(known.check("node12", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("10.1.1.1", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(known.check("node13", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  EXPECT_EQ(known.check("xnode1", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
  // '[' is literal in known_hosts patterns, not a character class.
  auto bracketed = KnownHosts::parse("[h?]:2222 ssh-ed25519 " + kKeyA + "\n");
  EXPECT_EQ(bracketed.check("[h1]:2222", "ssh-ed25519", kKeyA).match, HostKeyMatch::known);
  EXPECT_EQ(bracketed.check("h1", "ssh-ed25519", kKeyA).match, HostKeyMatch::unknown);
}

TEST(KnownHosts, MarkersRevokedRefusesCertAuthorityIsNotAHostKey) {
  auto known = KnownHosts::parse("@cert-authority * ssh-ed25519 " + kKeyB + "\n" +
                                 "@revoked * ssh-ed25519 " + kKeyA + "\n");
  auto revoked = known.check("10.0.0.1", "ssh-ed25519", kKeyA);
  EXPECT_EQ(revoked.match, HostKeyMatch::changed);
  EXPECT_TRUE(revoked.revoked);
  EXPECT_EQ(revoked.conflicting->line, 2);
  EXPECT_EQ(known.check("10.0.0.1", "ssh-ed25519", kKeyB).match, HostKeyMatch::unknown);
}

TEST(KnownHosts, ChangedPrefersTheEntryOfTheOfferedType) {
  auto known = KnownHosts::parse("h1 ssh-rsa AAAAB3NzaC1yc2E=\nh1 ssh-ed25519 " + kKeyA + "\n");
  auto verdict = known.check("h1", "ssh-ed25519", kKeyB);
  EXPECT_EQ(verdict.match, HostKeyMatch::changed);
  EXPECT_EQ(verdict.conflicting->line, 2);
  EXPECT_EQ(known.key_types_for("h1"), (std::vector<std::string>{"ssh-rsa", "ssh-ed25519"}));
}

TEST(KnownHosts, AddAppendsAfterTheExistingText) {
  auto known = KnownHosts::parse("# keep me\n10.0.0.1 ssh-ed25519 " + kKeyA);  // no final newline
  known.add("[10.0.0.2]:2200", "ssh-ed25519", kKeyB);
  EXPECT_EQ(known.text(), "# keep me\n10.0.0.1 ssh-ed25519 " + kKeyA + "\n[10.0.0.2]:2200 ssh-ed25519 " +
                              kKeyB + "\n");
  EXPECT_EQ(known.check("[10.0.0.2]:2200", "ssh-ed25519", kKeyB).match, HostKeyMatch::known);
  EXPECT_EQ(known.entries().back().line, 3);
}

TEST(KnownHostsStore, UnknownKeyIsRefusedWithItsFingerprintAndNothingIsWritten) {
  TempDir dir;
  std::string path = dir.path() + "/config/known_hosts";
  KnownHostsStore store(path, false, nullptr);
  auto verified = store.verify("h01", "h01 (10.0.0.1)", "10.0.0.1", 22, "ssh-ed25519", kKeyA);
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.error().kind, Failure::host_key_unknown);
  EXPECT_EQ(verified.error().message,
            "h01 (10.0.0.1): host key unknown: ssh-ed25519 " + kFingerprintA + " is not in " + path +
                "; check the fingerprint, then rerun with --accept-new-host-keys to trust it");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(KnownHostsStore, AcceptNewRecordsTheKeyInOpenSshForm) {
  TempDir dir;
  std::string path = dir.path() + "/config/known_hosts";
  std::vector<TrustedHostKey> notices;
  KnownHostsStore store(path, true, [&](const TrustedHostKey& trusted) { notices.push_back(trusted); });
  ASSERT_TRUE(store.verify("h01", "h01 (10.0.0.1)", "10.0.0.1", 22, "ssh-ed25519", kKeyA).ok());
  ASSERT_TRUE(store.verify("h02", "h02 (10.0.0.2:2222)", "10.0.0.2", 2222, "ssh-ed25519", kKeyB).ok());
  ASSERT_TRUE(store.verify("h01", "h01 (10.0.0.1)", "10.0.0.1", 22, "ssh-ed25519", kKeyA).ok());  // known now
  EXPECT_EQ(*read_file(path), "10.0.0.1 ssh-ed25519 " + kKeyA + "\n[10.0.0.2]:2222 ssh-ed25519 " + kKeyB + "\n");
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0].host, "h01");
  EXPECT_EQ(notices[1].host, "h02");
  EXPECT_EQ(notices[1].fingerprint, kFingerprintB);
  EXPECT_EQ(notices[1].known_hosts, path);
  EXPECT_EQ(notices[0].message(), "h01 (10.0.0.1): trusting new host key ssh-ed25519 " + kFingerprintA +
                            " on first use (as asked); recorded in " + path);
  EXPECT_EQ(std::filesystem::status(dir.path() + "/config").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
}

TEST(KnownHostsStore, ChangedKeyIsRefusedEvenWhenAcceptingNewKeys) {
  TempDir dir;
  std::string path = dir.path() + "/known_hosts";
  std::string before = "# first line\n10.0.0.1 ssh-ed25519 " + kKeyA + "\n";
  ASSERT_TRUE(write_file_atomic(path, before).ok());
  KnownHostsStore store(path, true, nullptr);
  auto verified = store.verify("h01", "h01 (10.0.0.1)", "10.0.0.1", 22, "ssh-ed25519", kKeyB);
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.error().kind, Failure::host_key_changed);
  EXPECT_EQ(verified.error().message,
            "h01 (10.0.0.1): HOST KEY CHANGED: the server offers ssh-ed25519 " + kFingerprintB + " but " +
                path + ":2 holds ssh-ed25519 " + kFingerprintA +
                "; this can be a man-in-the-middle attack and no flag overrides it; if the host was "
                "reinstalled, delete line 2 of " + path + " and rerun with --accept-new-host-keys");
  EXPECT_EQ(*read_file(path), before);
}

TEST(KnownHostsStore, KeysAddedByAnotherProcessMeanwhileAreKept) {
  TempDir dir;
  std::string path = dir.path() + "/known_hosts";
  KnownHostsStore store(path, true, nullptr);
  ASSERT_TRUE(store.verify("a", "a", "10.0.0.1", 22, "ssh-ed25519", kKeyA).ok());
  ASSERT_TRUE(write_file_atomic(path, *read_file(path) + "10.0.0.7 ssh-ed25519 " + kKeyB + "\n").ok());
  ASSERT_TRUE(store.verify("b", "b", "10.0.0.2", 22, "ssh-ed25519", kKeyB).ok());
  EXPECT_EQ(*read_file(path), "10.0.0.1 ssh-ed25519 " + kKeyA + "\n10.0.0.7 ssh-ed25519 " + kKeyB +
                                  "\n10.0.0.2 ssh-ed25519 " + kKeyB + "\n");
}

}  // namespace
}  // namespace xft::remote
