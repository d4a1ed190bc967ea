// Progress of a model load on stderr (cli/progress.h): on a terminal a bar
// redrawn in place and left as one finished line; elsewhere (a file, or a
// rank's relayed stderr) a line every interval, so a load quicker than that
// says nothing. The lines carry no logger prefix: a rank's are relayed as
// they are.
#pragma once

#include <cstdint>
#include <string>

#include "cli/progress.h"

namespace xft::cli::run_qwen {

class LoadProgress {
 public:
  LoadProgress(std::string name, bool terminal);
  // The engine's ModelOptions::progress.
  void update(uint64_t done, uint64_t total);
  // A load that failed: the unfinished bar is erased so the error starts its own line.
  void abandon();

 private:
  std::string name_;
  Progress progress_;
};

}  // namespace xft::cli::run_qwen
