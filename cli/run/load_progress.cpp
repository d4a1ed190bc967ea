#include "cli/run/load_progress.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace xft::cli::run_qwen {
namespace {

constexpr size_t kBarCells = 10;

// "loading NAME: 600/1201 MiB [#####     ] 49%" on a terminal, "... (49%)" elsewhere.
std::string load_text(const std::string& name, uint64_t done, uint64_t total, bool bar) {
  const unsigned percent = total > 0 ? static_cast<unsigned>(done * 100 / total) : 100;
  std::string text = "loading " + name + ": " + std::to_string(done >> 20) + "/" + std::to_string(total >> 20) + " MiB ";
  if (!bar) return text + "(" + std::to_string(percent) + "%)";
  return text + progress_bar(percent, 100, kBarCells) + " " + std::to_string(percent) + "%";
}

Progress::Output raw_lines() {
  Progress::Output output;
  output.line = [](const std::string& text) {
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
  };
  return output;
}

}  // namespace

LoadProgress::LoadProgress(std::string name, bool terminal)
    : name_(std::move(name)),
      progress_(terminal ? ProgressMode::bar : ProgressMode::lines,
                [this](uint64_t done, uint64_t total, bool bar, size_t) { return load_text(name_, done, total, bar); },
                {}, raw_lines()) {}

void LoadProgress::update(uint64_t done, uint64_t total) {
  // The total is an estimate: the bar stays short of 100% until the load says it is done.
  if (done == total) {
    progress_.set(done, total);
    progress_.finish(true);
    return;
  }
  progress_.set(std::min(done, total > 0 ? total - 1 : 0), total);
}

void LoadProgress::abandon() { progress_.finish(); }

}  // namespace xft::cli::run_qwen
