#include "remote/fanout.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace xft::remote {

void run_bounded(std::size_t count, int width, const std::function<void(std::size_t)>& task) {
  std::size_t threads = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(width, 1)));
  std::atomic<std::size_t> next{0};
  std::exception_ptr first_failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!first_failure) first_failure = std::current_exception();
      }
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& thread : pool) thread.join();
  }
  if (first_failure) std::rethrow_exception(first_failure);
}

}  // namespace xft::remote
