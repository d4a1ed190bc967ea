#include "playbooks/managed_block.h"

#include <gtest/gtest.h>

namespace xft::playbooks {
namespace {

TEST(ManagedBlock, AppendsBlockWhenAbsentKeepingUserLines) {
  auto result = replace_managed_block("127.0.0.1 localhost", "xftctl", "10.0.0.1 h01\n");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, "127.0.0.1 localhost\n# BEGIN xftctl\n10.0.0.1 h01\n# END xftctl\n");
}

TEST(ManagedBlock, ReplacesOnlyTheBlock) {
  const std::string before = "a\n# BEGIN xftctl\nold\n# END xftctl\nb\n";
  auto result = replace_managed_block(before, "xftctl", "new1\nnew2\n");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "a\n# BEGIN xftctl\nnew1\nnew2\n# END xftctl\nb\n");
}

TEST(ManagedBlock, SecondRunIsUnchanged) {
  auto first = replace_managed_block("x\n", "xftctl", "1.2.3.4 h\n");
  ASSERT_TRUE(first.ok());
  auto second = replace_managed_block(*first, "xftctl", "1.2.3.4 h\n");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first);
}

TEST(ManagedBlock, MissingEndIsAnErrorNamingTheLine) {
  auto result = replace_managed_block("a\n# BEGIN xftctl\nb\n", "xftctl", "x\n");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message,
            "line 2: '# BEGIN xftctl' has no '# END xftctl' line; add it or remove the BEGIN line");
}

TEST(ManagedBlock, DuplicateBlockIsAnError) {
  auto result = replace_managed_block("# BEGIN m\n# END m\n# BEGIN m\n# END m\n", "m", "");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "line 3: second '# BEGIN m' block; remove one of the duplicated blocks by hand");
}

TEST(ManagedBlock, HostsBodyIsAddressThenNameInOrder) {
  EXPECT_EQ(render_hosts_block_body({{"h01", "10.0.0.1"}, {"h02", "10.0.0.2"}}), "10.0.0.1 h01\n10.0.0.2 h02\n");
}

}  // namespace
}  // namespace xft::playbooks
