// Ends a rank that makes no progress for too long, naming what it waited for,
// so a dead or stopped peer turns into an error instead of a hung job (mpirun
// then stops the other ranks).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace xft::engine::comm {

class Watchdog {
 public:
  // describe_peer(world rank) -> "rank 2 (host-c)". exit_code is what the
  // process exits with on a stall.
  Watchdog(double timeout_s, std::string self, std::function<std::string(int)> describe_peer,
           int exit_code = 3);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // What the rank is doing now ("ring float32 4096 B"), for the message.
  void set_activity(std::string activity);

 private:
  void watch();

  double timeout_s_;
  std::string self_;
  std::function<std::string(int)> describe_peer_;
  int exit_code_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::string activity_;
  std::thread thread_;
};

}  // namespace xft::engine::comm
