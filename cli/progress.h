// The one progress display of long steps (model load, sync, setup, check
// fabric's pair rounds, exec's hosts still running), always on stderr so that
// stdout stays the report or the --json document.
//
//   bar:   on a terminal, one line redrawn in place ("\r" TEXT "\x1b[K"), cut
//          to the terminal's width, at most every `redraw`, and taken off by
//          finish() (or kept as a last line) so the report starts clean;
//   lines: elsewhere (a log, a pipe), a line every `line_every` (5 s, or
//          $XFTCTL_PROGRESS_INTERVAL_MS), so a quick step says nothing;
//   none:  -q.
//
// The caller owns what the text says: a formatter renders done/total and any
// state the caller changes inside update(), under the progress's own lock, so
// threads (hosts, pairs) may report at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace xft::cli {

enum class ProgressMode { none, bar, lines };

// bar on a terminal (stderr), else lines when `lines_elsewhere`, else none; none under -q.
ProgressMode progress_mode(bool quiet, bool lines_elsewhere = true);

// "[####      ]": `cells` wide, filled in proportion of done to total.
std::string progress_bar(uint64_t done, uint64_t total, size_t cells, char empty = ' ');

// How often a progress draws.
struct ProgressTiming {
  using Millis = std::chrono::milliseconds;
  Millis redraw{100};    // bar: the least time between two drawings
  Millis line_every{};   // lines: between two lines; zero: $XFTCTL_PROGRESS_INTERVAL_MS or 5 s
  Millis show_after{0};  // bar: nothing drawn before this, so a quick step leaves the terminal alone
  bool ticker = false;   // a thread draws every `redraw` (bar) or `line_every` (lines) without updates
};
// Where drawings go; the defaults are stderr, spdlog's info and the terminal's width.
struct ProgressOutput {
  using Clock = std::chrono::steady_clock;
  std::function<void(std::string_view)> terminal;  // raw bytes of the bar
  std::function<void(const std::string&)> line;    // one line, without its newline
  std::function<size_t()> columns;                 // the bar's width
  std::function<Clock::time_point()> now;
};

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  using Millis = std::chrono::milliseconds;
  // The width a line is formatted for: the reports' 100 columns.
  static constexpr size_t kLineWidth = 100;

  using Timing = ProgressTiming;
  using Output = ProgressOutput;
  // The text for a bar (`bar` true, cut afterwards to `width`) or a line; an
  // empty text draws nothing (a step that should not show yet).
  using Format = std::function<std::string(uint64_t done, uint64_t total, bool bar, size_t width)>;

  Progress(ProgressMode mode, Format format, Timing timing = {}, Output output = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressMode mode() const { return mode_; }

  void set_total(uint64_t total);
  void advance(uint64_t by = 1);
  void set(uint64_t done, uint64_t total);
  // Runs `change` (the caller's own state) under the lock, then draws if due;
  // `force`: a bar is drawn now, whatever `redraw` says.
  template <class Change>
  void update(Change&& change, bool force = false) {
    std::lock_guard lock(mutex_);
    change();
    show(force);
  }
  // The ticker's step, also for a caller (or a test) driving time itself.
  void tick();
  // lines: one line now, whatever `line_every` says (milestones, a tenth of the rounds).
  void line_now();
  // Other output to stderr or stdout while a bar may be drawn: the bar is
  // taken off, `print` runs, and the bar comes back.
  template <class Print>
  void print_above(Print&& print) {
    std::lock_guard lock(mutex_);
    clear();
    print();
    show(true);
  }
  // Stops the ticker and takes the bar off. `keep`: the last state stays as a
  // finished line instead (the bar drawn once more and ended; under lines one
  // last line, if any was printed, so a quick step still says nothing).
  void finish(bool keep = false);

 private:
  void show(bool force);
  void draw_bar(bool force);
  void draw_line(bool force);
  void clear();
  void tick_loop();

  ProgressMode mode_;
  Format format_;
  Timing timing_;
  Output output_;
  uint64_t done_ = 0, total_ = 0;
  Clock::time_point started_, drawn_at_, line_at_;
  std::string drawn_;      // the bar on the terminal now; empty: none
  std::string last_line_;  // the last line printed
  bool any_line_ = false;
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace xft::cli
