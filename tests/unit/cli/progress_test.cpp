#include "cli/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xft::cli {
namespace {

using namespace std::chrono_literals;

// The terminal's bytes, the lines and a clock the test moves by hand.
struct Fake {
  std::string terminal;
  std::vector<std::string> lines;
  Progress::Clock::time_point now{};
  size_t columns = 40;

  Progress::Output output() {
    return {[this](std::string_view bytes) { terminal.append(bytes); },
            [this](const std::string& line) { lines.push_back(line); }, [this] { return columns; },
            [this] { return now; }};
  }
};

std::string files(uint64_t done, uint64_t total, bool bar, size_t) {
  std::string text = std::to_string(done) + "/" + std::to_string(total) + " files";
  return bar ? "sync " + progress_bar(done, total, 4, '.') + " " + text : "sync: " + text;
}

Progress::Timing every_second() {
  Progress::Timing timing;
  timing.redraw = 100ms;
  timing.line_every = 1s;
  return timing;
}

TEST(ProgressBar, FillsInProportion) {
  EXPECT_EQ("[          ]", progress_bar(0, 10, 10));
  EXPECT_EQ("[#####     ]", progress_bar(5, 10, 10));
  EXPECT_EQ("[##..]", progress_bar(1, 2, 4, '.'));
  EXPECT_EQ("[####]", progress_bar(9, 4, 4));
  EXPECT_EQ("[####]", progress_bar(0, 0, 4));
}

TEST(Progress, BarIsRedrawnInPlaceAtMostEveryRedrawAndClearedByFinish) {
  Fake fake;
  Progress progress(ProgressMode::bar, files, every_second(), fake.output());
  progress.set(0, 4);
  progress.advance();   // within 100 ms of the first drawing: not drawn
  fake.now += 100ms;
  progress.advance();
  fake.now += 150ms;
  progress.tick();      // nothing new: the same text is not drawn again
  progress.finish();
  EXPECT_EQ("\rsync [....] 0/4 files\x1b[K\rsync [##..] 2/4 files\x1b[K\r\x1b[K", fake.terminal);
  EXPECT_TRUE(fake.lines.empty());
}

TEST(Progress, ForcedUpdateDrawsAtOnceAndBarIsCutToTheTerminal) {
  Fake fake;
  fake.columns = 12;
  Progress progress(ProgressMode::bar, files, every_second(), fake.output());
  progress.set(1, 4);
  int step = 0;
  progress.update([&] { step = 1; }, true);  // forced, but the same text: nothing to draw
  fake.columns = 13;
  progress.update([&] { step = 2; }, true);  // forced: drawn at once, 100 ms or not
  EXPECT_EQ(2, step);
  EXPECT_EQ("\rsync [#...] \x1b[K\rsync [#...] 1\x1b[K", fake.terminal);
}

TEST(Progress, BarKeptByFinishEndsItsLine) {
  Fake fake;
  Progress progress(ProgressMode::bar, files, every_second(), fake.output());
  progress.set(3, 4);
  progress.set(4, 4);  // throttled
  progress.finish(true);
  progress.advance();  // after finish: nothing
  EXPECT_EQ("\rsync [###.] 3/4 files\x1b[K\rsync [####] 4/4 files\x1b[K\n", fake.terminal);
}

TEST(Progress, NothingDrawnBeforeShowAfterSoAQuickStepLeavesTheTerminalAlone) {
  Fake fake;
  Progress::Timing timing = every_second();
  timing.show_after = 200ms;
  {
    Progress progress(ProgressMode::bar, files, timing, fake.output());
    progress.set(0, 2);
    fake.now += 199ms;
    progress.tick();
    progress.set(2, 2);
  }
  EXPECT_EQ("", fake.terminal);
  Progress progress(ProgressMode::bar, files, timing, fake.output());
  progress.set(0, 2);
  fake.now += 200ms;
  progress.tick();
  EXPECT_EQ("\rsync [....] 0/2 files\x1b[K", fake.terminal);
}

TEST(Progress, PrintAboveTakesTheBarOffAndDrawsItAgain) {
  Fake fake;
  Progress progress(ProgressMode::bar, files, every_second(), fake.output());
  progress.set(1, 2);
  progress.print_above([&] { fake.terminal += "report\n"; });
  EXPECT_EQ("\rsync [##..] 1/2 files\x1b[K\r\x1b[Kreport\n\rsync [##..] 1/2 files\x1b[K", fake.terminal);
}

TEST(Progress, EmptyTextDrawsNothing) {
  Fake fake;
  bool connecting = true;
  Progress progress(
      ProgressMode::bar, [&](uint64_t, uint64_t, bool, size_t) { return connecting ? "" : std::string("task 1"); },
      every_second(), fake.output());
  progress.tick();
  progress.update([&] { connecting = false; }, true);
  EXPECT_EQ("\rtask 1\x1b[K", fake.terminal);
}

TEST(Progress, LinesComeEveryIntervalNeverRepeatedAndNeverOnTheTerminal) {
  Fake fake;
  Progress progress(ProgressMode::lines, files, every_second(), fake.output());
  progress.set(1, 4);  // a quick step says nothing
  fake.now += 999ms;
  progress.tick();
  fake.now += 1ms;
  progress.tick();
  fake.now += 1s;
  progress.tick();     // standing still: said once
  progress.advance();  // due since the last line
  progress.advance();  // not yet
  fake.now += 999ms;
  progress.tick();
  progress.finish();
  EXPECT_EQ((std::vector<std::string>{"sync: 1/4 files", "sync: 2/4 files"}), fake.lines);
  EXPECT_EQ("", fake.terminal);
}

TEST(Progress, LinesKeptByFinishSayTheEndOnlyAfterALine) {
  Fake quick;
  Progress first(ProgressMode::lines, files, every_second(), quick.output());
  first.set(4, 4);
  first.finish(true);
  EXPECT_TRUE(quick.lines.empty());

  Fake slow;
  Progress second(ProgressMode::lines, files, every_second(), slow.output());
  slow.now += 1s;
  second.set(2, 4);
  second.set(4, 4);
  second.finish(true);
  EXPECT_EQ((std::vector<std::string>{"sync: 2/4 files", "sync: 4/4 files"}), slow.lines);
}

TEST(Progress, LineNowIgnoresTheIntervalAndTheBar) {
  Fake fake;
  Progress::Timing timing = every_second();
  timing.line_every = Progress::Millis::max();
  Progress lines(ProgressMode::lines, files, timing, fake.output());
  lines.set(1, 10);
  lines.line_now();
  lines.set(2, 10);
  Progress bar(ProgressMode::bar, files, timing, fake.output());
  bar.line_now();
  EXPECT_EQ(std::vector<std::string>{"sync: 1/10 files"}, fake.lines);
}

TEST(Progress, NoneShowsNothing) {
  Fake fake;
  Progress progress(ProgressMode::none, files, every_second(), fake.output());
  progress.set(1, 2);
  progress.tick();
  progress.line_now();
  progress.print_above([] {});
  progress.finish(true);
  EXPECT_EQ("", fake.terminal);
  EXPECT_TRUE(fake.lines.empty());
}

TEST(Progress, TickerDrawsWithoutUpdatesFromItsOwnThread) {
  Fake fake;
  Progress::Timing timing = every_second();
  timing.redraw = 1ms;
  timing.ticker = true;
  std::string text = "waiting";
  Progress progress(ProgressMode::bar, [&](uint64_t, uint64_t, bool, size_t) { return text; }, timing, fake.output());
  // The ticker's drawing is awaited, not timed: the test ends when it shows.
  for (bool drawn = false; !drawn;) progress.update([&] { drawn = !fake.terminal.empty(); });
  progress.finish();
  EXPECT_EQ("\rwaiting\x1b[K\r\x1b[K", fake.terminal);
}

}  // namespace
}  // namespace xft::cli
