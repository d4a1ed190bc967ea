#include "engine/kernels/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <immintrin.h>

namespace xft::engine {
namespace {

thread_local bool inside_region = false;

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr,
          nullptr, 0);
}

int default_spin_us() {
  if (const char* env = std::getenv("XFT_SPIN_US")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && value >= 0 && value < 1000000) return static_cast<int>(value);
  }
  return 200;
}

}  // namespace

bool ThreadPool::inside_region_now() { return inside_region; }

bool ThreadPool::pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

ThreadPool::ThreadPool(int n_threads, std::vector<int> cpus, int spin_us)
    : n_threads_(n_threads < 1 ? 1 : n_threads),
      cpus_(std::move(cpus)),
      spin_us_(spin_us < 0 ? default_spin_us() : spin_us),
      ranges_(new Range[n_threads_]) {
  if (!cpus_.empty()) pin_current_thread(cpus_[0]);
  workers_.reserve(n_threads_ - 1);
  for (int tid = 1; tid < n_threads_; ++tid) workers_.emplace_back([this, tid] { worker_loop(tid); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&generation_);
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::worker_loop(int tid) {
  if (!cpus_.empty()) pin_current_thread(cpus_[tid % cpus_.size()]);
  uint32_t seen = 0;
  for (;;) {
    // Spin first: in decode the next region usually starts within microseconds.
    uint32_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
      for (int i = 0; now == seen; ++i) {
        _mm_pause();
        now = generation_.load(std::memory_order_acquire);
        if ((i & 255) == 255 && std::chrono::steady_clock::now() > deadline) break;
      }
    }
    while (now == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      futex_wait(&generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      now = generation_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    inside_region = true;
    invoke_(ctx_, tid, n_threads_);
    inside_region = false;
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_erased(Invoke invoke, void* ctx) {
  if (n_threads_ == 1 || inside_region) {
    invoke(ctx, 0, 1);
    return;
  }
  invoke_ = invoke;
  ctx_ = ctx;
  remaining_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&generation_);
  inside_region = true;
  invoke(ctx, 0, n_threads_);
  inside_region = false;
  for (int i = 0; remaining_.load(std::memory_order_acquire) != 0; ++i) {
    _mm_pause();
    if (i > 4096) sched_yield();  // oversubscribed machine: let the workers run
  }
}

}  // namespace xft::engine
