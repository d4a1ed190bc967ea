#include "engine/comm/watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "engine/comm/progress.h"

namespace xft::engine::comm {

Watchdog::Watchdog(double timeout_s, std::string self, std::function<std::string(int)> describe_peer,
                   int exit_code)
    : timeout_s_(timeout_s), self_(std::move(self)), describe_peer_(std::move(describe_peer)),
      exit_code_(exit_code) {
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::set_activity(std::string activity) {
  std::lock_guard<std::mutex> lock(mutex_);
  activity_ = std::move(activity);
  // A new activity is progress too.
  progress().steps.fetch_add(1, std::memory_order_relaxed);
}

void Watchdog::watch() {
  using clock = std::chrono::steady_clock;
  uint64_t last_steps = progress().steps.load(std::memory_order_relaxed);
  auto last_change = clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    if (stop_) break;
    uint64_t steps = progress().steps.load(std::memory_order_relaxed);
    if (steps != last_steps) {
      last_steps = steps;
      last_change = clock::now();
      continue;
    }
    double stalled = std::chrono::duration<double>(clock::now() - last_change).count();
    if (stalled < timeout_s_) continue;
    int peer = progress().waiting_on.load(std::memory_order_relaxed);
    std::string waiting = peer >= 0 ? "waiting for " + describe_peer_(peer) : "inside an MPI collective";
    std::fprintf(stderr, "xftctl: %s: no progress for %.0f s in %s, %s; giving up (it died, hangs or is unreachable)\n",
                 self_.c_str(), stalled, activity_.c_str(), waiting.c_str());
    std::fflush(stderr);
    _exit(exit_code_);
  }
}

}  // namespace xft::engine::comm
