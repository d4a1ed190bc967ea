#include "remote/credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "remote/fanout.h"

namespace xft::remote {
namespace {

inventory::Host host_with(std::string user, std::string env, bool prompt) {
  inventory::Host host;
  host.name = "h01";
  host.address = "10.0.0.1";
  host.user = std::move(user);
  host.line = 7;
  host.credentials.password_env = std::move(env);
  host.credentials.password_prompt = prompt;
  return host;
}

TEST(Passwords, TakenFromTheNamedEnvironmentVariable) {
  ::setenv("XFT_UNIT_PW", "from-env", 1);
  DefaultPasswordSource source([](const std::string&) -> Expected<std::string> {
    ADD_FAILURE() << "must not prompt";
    return std::string();
  });
  EXPECT_EQ(*source.password_for(host_with("root", "XFT_UNIT_PW", false)), "from-env");
  ::unsetenv("XFT_UNIT_PW");
}

TEST(Passwords, UnsetVariableNamesItAndTheInventoryLine) {
  ::unsetenv("XFT_UNIT_MISSING");
  DefaultPasswordSource source;
  auto password = source.password_for(host_with("root", "XFT_UNIT_MISSING", false));
  ASSERT_FALSE(password.ok());
  EXPECT_EQ(password.error().message,
            "h01: password_env XFT_UNIT_MISSING is not set (inventory line 7); export XFT_UNIT_MISSING "
            "with the password");
}

TEST(Passwords, PromptsOncePerUserHoweverManyThreadsAsk) {
  std::atomic<int> prompts{0};
  std::string seen_prompt;
  DefaultPasswordSource source([&](const std::string& prompt) -> Expected<std::string> {
    ++prompts;
    seen_prompt = prompt;
    return std::string("typed");
  });
  std::vector<inventory::Host> hosts(16, host_with("root", "", true));
  auto answers = fan_out(hosts, 16, [&](const inventory::Host& h) { return *source.password_for(h); });
  for (const auto& answer : answers) EXPECT_EQ(answer, "typed");
  EXPECT_EQ(prompts.load(), 1);
  EXPECT_EQ(seen_prompt, "xftctl: SSH password for root: ");
  EXPECT_EQ(*source.password_for(host_with("admin", "", true)), "typed");
  EXPECT_EQ(prompts.load(), 2);
}

TEST(Passwords, APromptFailureIsReportedAndNotRetriedPerHost) {
  std::atomic<int> prompts{0};
  DefaultPasswordSource source([&](const std::string&) -> Expected<std::string> {
    ++prompts;
    return make_error("no terminal");
  });
  EXPECT_EQ(source.password_for(host_with("root", "", true)).error().message, "no terminal");
  EXPECT_EQ(source.password_for(host_with("root", "", true)).error().message, "no terminal");
  EXPECT_EQ(prompts.load(), 1);
}

TEST(KeyCandidates, InventoryKeyElseXftctlKeyThenSshKeyWhenPresent) {
  char pattern[] = "/tmp/xft-home-XXXXXX";
  std::string home = ::mkdtemp(pattern);
  std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("HOME", home.c_str(), 1);
  ::unsetenv("XDG_CONFIG_HOME");
  auto host = host_with("root", "", false);
  EXPECT_TRUE(key_candidates(host).empty());
  std::filesystem::create_directories(home + "/.ssh");
  std::ofstream(home + "/.ssh/id_ed25519") << "x";
  EXPECT_EQ(key_candidates(host), (std::vector<std::string>{home + "/.ssh/id_ed25519"}));
  std::filesystem::create_directories(home + "/.config/xftctl");
  std::ofstream(home + "/.config/xftctl/id_ed25519") << "x";
  EXPECT_EQ(key_candidates(host),
            (std::vector<std::string>{home + "/.config/xftctl/id_ed25519", home + "/.ssh/id_ed25519"}));
  host.credentials.key = "/keys/cluster";
  EXPECT_EQ(key_candidates(host), (std::vector<std::string>{"/keys/cluster"}));
  ::setenv("HOME", saved_home.c_str(), 1);
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace xft::remote
