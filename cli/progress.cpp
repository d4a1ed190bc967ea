#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/log.h"

namespace xft::cli {
namespace {

Progress::Millis line_interval() {
  const char* env = std::getenv("XFTCTL_PROGRESS_INTERVAL_MS");
  if (env && *env) {
    char* end = nullptr;
    const long ms = std::strtol(env, &end, 10);
    if (*end == '\0' && ms >= 0) return Progress::Millis(ms);
  }
  return std::chrono::seconds(5);
}

size_t terminal_columns() {
  winsize size{};
  // One column short: a line that fills the last column makes the terminal wrap before \r.
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1;
  return 79;
}

Progress::Output with_defaults(Progress::Output output) {
  if (!output.terminal)
    output.terminal = [](std::string_view bytes) {
      std::fwrite(bytes.data(), 1, bytes.size(), stderr);
      std::fflush(stderr);
    };
  if (!output.line) output.line = [](const std::string& text) { log::info(text); };
  if (!output.columns) output.columns = terminal_columns;
  if (!output.now) output.now = [] { return Progress::Clock::now(); };
  return output;
}

}  // namespace

ProgressMode progress_mode(bool quiet, bool lines_elsewhere) {
  if (quiet) return ProgressMode::none;
  if (::isatty(STDERR_FILENO) == 1) return ProgressMode::bar;
  return lines_elsewhere ? ProgressMode::lines : ProgressMode::none;
}

std::string progress_bar(uint64_t done, uint64_t total, size_t cells, char empty) {
  size_t filled = total == 0 ? cells : static_cast<size_t>(std::min(done, total) * cells / total);
  return "[" + std::string(filled, '#') + std::string(cells - filled, empty) + "]";
}

Progress::Progress(ProgressMode mode, Format format, Timing timing, Output output)
    : mode_(mode), format_(std::move(format)), timing_(timing), output_(with_defaults(std::move(output))) {
  if (timing_.line_every == Millis::zero()) timing_.line_every = line_interval();
  started_ = line_at_ = output_.now();
  if (timing_.ticker && mode_ != ProgressMode::none) ticker_ = std::thread([this] { tick_loop(); });
}

Progress::~Progress() { finish(); }

void Progress::set_total(uint64_t total) {
  update([&] { total_ = total; });
}

void Progress::advance(uint64_t by) {
  update([&] { done_ += by; });
}

void Progress::set(uint64_t done, uint64_t total) {
  update([&] {
    done_ = done;
    total_ = total;
  });
}

void Progress::tick() {
  std::lock_guard lock(mutex_);
  show(false);
}

void Progress::line_now() {
  std::lock_guard lock(mutex_);
  if (mode_ == ProgressMode::lines && !finished_) draw_line(true);
}

void Progress::finish(bool keep) {
  {
    std::lock_guard lock(mutex_);
    if (!finished_ && keep) {
      if (mode_ == ProgressMode::bar) {
        draw_bar(true);
        if (!drawn_.empty()) output_.terminal("\n");
        drawn_.clear();
      } else if (mode_ == ProgressMode::lines && any_line_) {
        draw_line(true);
      }
    }
    finished_ = true;
    clear();
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::show(bool force) {
  if (finished_) return;
  if (mode_ == ProgressMode::bar) draw_bar(force);
  else if (mode_ == ProgressMode::lines) draw_line(false);
}

void Progress::draw_bar(bool force) {
  auto now = output_.now();
  if (now - started_ < timing_.show_after) return;
  if (!force && !drawn_.empty() && now - drawn_at_ < timing_.redraw) return;
  size_t width = output_.columns();
  std::string text = format_(done_, total_, true, width);
  if (text.size() > width) text.resize(width);
  // The same text again would only flicker.
  if (text.empty() || text == drawn_) return;
  output_.terminal("\r" + text + "\x1b[K");
  drawn_ = std::move(text);
  drawn_at_ = now;
}

// A line repeats nothing already said: a run that stands still says so once.
void Progress::draw_line(bool force) {
  auto now = output_.now();
  if (!force && std::chrono::duration_cast<Millis>(now - line_at_) < timing_.line_every) return;
  std::string text = format_(done_, total_, false, kLineWidth);
  if (text.empty() || (any_line_ && text == last_line_)) return;
  output_.line(text);
  line_at_ = now;
  last_line_ = std::move(text);
  any_line_ = true;
}

void Progress::clear() {
  if (drawn_.empty()) return;
  output_.terminal("\r\x1b[K");
  drawn_.clear();
}

void Progress::tick_loop() {
  Millis period = mode_ == ProgressMode::bar ? timing_.redraw : std::max(timing_.line_every, Millis(1));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return finished_; })) show(false);
}

}  // namespace xft::cli
