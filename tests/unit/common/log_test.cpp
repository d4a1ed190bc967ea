#include "common/log.h"

#include <gtest/gtest.h>

#include <chrono>

namespace xft::log {
namespace {

using std::chrono::system_clock;

// 2026-11-25T00:01:02.345Z
system_clock::time_point at() {
  return system_clock::time_point(std::chrono::milliseconds(1795564862345LL));
}

TEST(LogText, ErrorsAndNoticesCarryOnlyTheName) {
  EXPECT_EQ(format_record(Level::err, "h01: unreachable", Format::text, std::nullopt), "xftctl: h01: unreachable\n");
  EXPECT_EQ(format_record(Level::info, "loading", Format::text, std::nullopt), "xftctl: loading\n");
}

TEST(LogText, OtherLevelsSayTheirLevel) {
  EXPECT_EQ(format_record(Level::warn, "w", Format::text, std::nullopt), "xftctl: warning: w\n");
  EXPECT_EQ(format_record(Level::debug, "d", Format::text, std::nullopt), "xftctl: debug: d\n");
  EXPECT_EQ(format_record(Level::trace, "t", Format::text, std::nullopt), "xftctl: trace: t\n");
}

TEST(LogText, TimestampIsUtcWithMilliseconds) {
  EXPECT_EQ(format_record(Level::info, "x", Format::text, at()), "2026-11-25T00:01:02.345Z xftctl: x\n");
}

TEST(LogText, EveryLineOfAMultiLineMessageGetsThePrefix) {
  EXPECT_EQ(format_record(Level::err, "a\nb\n", Format::text, at()),
            "2026-11-25T00:01:02.345Z xftctl: a\n2026-11-25T00:01:02.345Z xftctl: b\n");
  EXPECT_EQ(format_record(Level::err, "", Format::text, std::nullopt), "xftctl: \n");
}

TEST(LogJson, OneObjectPerLineWithFieldsInOrder) {
  EXPECT_EQ(format_record(Level::err, "unreachable", Format::json, at(), {{"host", "h01"}, {"rank", 3}}),
            R"({"ts":"2026-11-25T00:01:02.345Z","level":"error","msg":"unreachable","host":"h01","rank":3})"
            "\n");
}

TEST(LogJson, EscapesQuotesNewlinesAndControlCharacters) {
  EXPECT_EQ(format_record(Level::warn, "say \"hi\"\nback\\slash\ttab\x01\x1b[K", Format::json, std::nullopt),
            R"({"level":"warning","msg":"say \"hi\"\nback\\slash\ttab\u0001\u001b[K"})"
            "\n");
}

TEST(LogJson, InvalidUtf8IsReplacedNotThrown) {
  EXPECT_EQ(format_record(Level::info, "a\xff" "b", Format::json, std::nullopt),
            "{\"level\":\"info\",\"msg\":\"a\xEF\xBF\xBD" "b\"}\n");
}

TEST(LogLevels, QuietVerboseAndNames) {
  EXPECT_EQ(level_for(0, true), Level::err);
  EXPECT_EQ(level_for(0, false), Level::info);
  EXPECT_EQ(level_for(1, false), Level::debug);
  EXPECT_EQ(level_for(2, false), Level::trace);
  for (Level l : {Level::trace, Level::debug, Level::info, Level::warn, Level::err})
    EXPECT_EQ(*parse_level(level_name(l)), l);
  EXPECT_EQ(parse_level("loud").error().message,
            "log level 'loud': expected error, warning, info, debug or trace (XFTCTL_LOG_LEVEL, --log-level)");
  EXPECT_EQ(*parse_format("json"), Format::json);
  EXPECT_FALSE(parse_format("xml"));
  EXPECT_TRUE(*resolve_timestamps("on"));
  EXPECT_FALSE(*resolve_timestamps("off"));
  EXPECT_FALSE(resolve_timestamps("sometimes"));
}

// Plain spdlog calls from any library come out in the format setup() installed.
TEST(LogSetup, PlainSpdlogCallsUseTheFormatAndLevel) {
  setup(Level::info, Format::text, false);
  testing::internal::CaptureStderr();
  spdlog::info("plain {}", 1);
  spdlog::debug("hidden at info");
  write(Level::err, "with a field", {{"host", "h01"}});
  relay("[1 h02] ", "a rank's line", {{"rank", 1}, {"host", "h02"}});
  write_located(Level::err, "inventory.yaml:3:5: bad");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "xftctl: plain 1\nxftctl: with a field\n[1 h02] a rank's line\ninventory.yaml:3:5: bad\n");

  setup(Level::err, Format::json, false);
  testing::internal::CaptureStderr();
  spdlog::warn("dropped by -q");
  write(Level::err, "kept", {{"host", "h01"}});
  relay("[1 h02] ", R"({"ts":"T","level":"warning","msg":"from the rank"})", {{"rank", 1}, {"host", "h02"}});
  relay("[1 h02] ", "not json", {{"rank", 1}});
  std::string out = testing::internal::GetCapturedStderr();
  // The time varies; everything after it is exact.
  ASSERT_EQ(out.substr(0, 7), R"({"ts":")");
  EXPECT_EQ(out.substr(out.find('"', 7)),
            R"(","level":"error","msg":"kept","host":"h01"})"
            "\n"
            R"({"ts":"T","level":"warning","msg":"from the rank","rank":1,"host":"h02"})"
            "\n"
            R"({"ts":")" + out.substr(out.rfind(R"({"ts":")") + 7, 24) + R"(","level":"info","msg":"not json","rank":1})"
            "\n");
  setup(Level::info, Format::text, false);
}

}  // namespace
}  // namespace xft::log
