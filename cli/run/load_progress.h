// Progress of a model load on stderr: on a terminal a bar redrawn in place
// and left as one finished line; elsewhere (a file, or a rank's relayed
// stderr) a line every interval, so a load quicker than that says nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace xft::cli::run_qwen {

class LoadProgress {
 public:
  // interval: between lines off a terminal; XFTCTL_PROGRESS_INTERVAL_MS
  // overrides the default of 5 s (the tests use 0).
  LoadProgress(std::string name, bool terminal);
  // The engine's ModelOptions::progress.
  void update(uint64_t done, uint64_t total);
  // A load that failed: the unfinished bar is erased so the error starts its own line.
  void abandon();

 private:
  std::string line(uint64_t done, uint64_t total, int percent) const;

  std::string name_;
  bool terminal_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_;
  int shown_percent_ = -1;
  bool any_line_ = false;
  bool finished_ = false;
};

}  // namespace xft::cli::run_qwen
