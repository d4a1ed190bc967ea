#include "cli/run/load_progress.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace xft::cli::run_qwen {
namespace {

constexpr int kBarWidth = 10;

std::chrono::milliseconds progress_interval() {
  const char* env = std::getenv("XFTCTL_PROGRESS_INTERVAL_MS");
  if (env && *env) {
    char* end = nullptr;
    const long ms = std::strtol(env, &end, 10);
    if (*end == '\0' && ms >= 0) return std::chrono::milliseconds(ms);
  }
  return std::chrono::seconds(5);
}

}  // namespace

LoadProgress::LoadProgress(std::string name, bool terminal)
    : name_(std::move(name)), terminal_(terminal), interval_(progress_interval()),
      last_(std::chrono::steady_clock::now()) {}

std::string LoadProgress::line(uint64_t done, uint64_t total, int percent) const {
  char text[256];
  const unsigned long long done_mib = done >> 20, total_mib = total >> 20;
  if (!terminal_) {
    std::snprintf(text, sizeof text, "loading %s: %llu/%llu MiB (%d%%)", name_.c_str(), done_mib, total_mib, percent);
    return text;
  }
  const int filled = percent * kBarWidth / 100;
  const std::string bar = std::string(filled, '#') + std::string(kBarWidth - filled, ' ');
  std::snprintf(text, sizeof text, "loading %s: %llu/%llu MiB [%s] %d%%", name_.c_str(), done_mib, total_mib,
                bar.c_str(), percent);
  return text;
}

void LoadProgress::update(uint64_t done, uint64_t total) {
  // The total is an estimate: the bar stays short of 100% until the load says it is done.
  if (finished_) return;
  const bool finished = done == total;
  finished_ = finished;
  if (!finished) done = std::min(done, total > 0 ? total - 1 : 0);
  const int percent = total > 0 ? static_cast<int>(done * 100 / total) : 100;
  if (terminal_) {
    if (percent == shown_percent_ && !finished) return;
    shown_percent_ = percent;
    // \r and erase-line: redrawn in place; the finished bar stays as one line.
    std::fprintf(stderr, "\r\033[K%s%s", line(done, total, percent).c_str(), finished ? "\n" : "");
    std::fflush(stderr);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (finished ? !any_line_ : now - last_ < interval_) return;
  last_ = now;
  any_line_ = true;
  std::fprintf(stderr, "%s\n", line(done, total, percent).c_str());
  std::fflush(stderr);
}

void LoadProgress::abandon() {
  if (!terminal_ || shown_percent_ < 0) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace xft::cli::run_qwen
