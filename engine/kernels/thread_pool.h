// A fixed pool of worker threads for the engine's kernels, tuned for decode:
// a parallel region costs a few hundred nanoseconds because idle workers spin
// briefly on a generation counter before they sleep on a futex.
//
// Decode GEMVs use parallel_for_balanced: on a shared 2-core machine a static
// halving made every GEMV (about 100 per token) wait for the slower half.
//
// The calling thread is worker 0 and takes part in every region, so a pool of
// size N starts N-1 threads. One thread at a time may call run/parallel_for. When `cpus` is given, worker i is pinned to
// cpus[i] (the constructing thread, which is expected to be the one calling
// parallel_for, is pinned to cpus[0]).
//
// oneDNN (Debian's libdnnl is built with OpenMP) never starts OpenMP threads
// of its own here: the prefill matmul runs one single-threaded oneDNN call per
// pool worker on its slice of the output columns (see matmul_onednn.cpp), so
// every computation stays on the pool's pinned threads and nothing competes
// with spinning workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace xft::engine {

class ThreadPool {
 public:
  // n_threads >= 1 (counting the caller). spin_us: how long an idle worker
  // polls before sleeping (default: env XFT_SPIN_US or 200 microseconds).
  explicit ThreadPool(int n_threads, std::vector<int> cpus = {}, int spin_us = -1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  const std::vector<int>& cpus() const { return cpus_; }

  // Calls fn(thread_index, n_threads) once on every worker (index 0 is the
  // caller) and returns when all are done. A call from inside a region runs
  // fn(0, 1) inline.
  template <class F>
  void run(F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run_erased([](void* ctx, int tid, int n) { (*static_cast<Fn*>(ctx))(tid, n); },
               const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n_tasks) into size() contiguous near-equal ranges and calls
  // fn(begin, end) for each non-empty one.
  template <class F>
  void parallel_for(int n_tasks, F&& fn) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || n_threads_ == 1) {
      fn(0, n_tasks);
      return;
    }
    run([&](int tid, int n) {
      const int begin = static_cast<int>(static_cast<int64_t>(n_tasks) * tid / n);
      const int end = static_cast<int>(static_cast<int64_t>(n_tasks) * (tid + 1) / n);
      if (begin < end) fn(begin, end);
    });
  }

  // Row-wise work over [0, rows) (norms, activations, staging): split like
  // parallel_for where there are enough rows to pay for a region (a
  // prompt's), on the caller alone otherwise (a decode step's few rows, for
  // which a fork/join would cost more than the work). Each row's result
  // does not depend on the split.
  template <class F>
  void parallel_rows(int rows, F&& fn) {
    if (rows < kParallelRowsMin) {
      if (rows > 0) fn(0, rows);
      return;
    }
    parallel_for(rows, fn);
  }
  static constexpr int kParallelRowsMin = 16;

  // Like parallel_for, but the split adapts to threads that start late or run
  // slower (a wake-up, a busy core, a slower memory stream): each thread
  // takes the tasks of its own contiguous range in order, one at a time, and
  // when it runs out takes the remaining tasks of the others' ranges. Calls
  // fn(begin, end) on runs of consecutive tasks; every task runs exactly once.
  // Decode GEMVs use it: a static split waits for the slowest half.
  template <class F>
  void parallel_for_balanced(int n_tasks, F&& fn) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || n_threads_ == 1 || inside_region_now()) {
      fn(0, n_tasks);
      return;
    }
    for (int t = 0; t < n_threads_; ++t) {
      ranges_[t].next.store(static_cast<int>(static_cast<int64_t>(n_tasks) * t / n_threads_),
                            std::memory_order_relaxed);
      ranges_[t].end = static_cast<int>(static_cast<int64_t>(n_tasks) * (t + 1) / n_threads_);
    }
    run([&](int tid, int n) {
      for (int k = 0; k < n; ++k) {
        Range& r = ranges_[(tid + k) % n];
        for (int i = r.next.fetch_add(1, std::memory_order_relaxed); i < r.end;
             i = r.next.fetch_add(1, std::memory_order_relaxed)) {
          fn(i, i + 1);
        }
      }
    });
  }

  // Pins the calling thread to one OS cpu id; false when the kernel refuses.
  static bool pin_current_thread(int cpu);

 private:
  using Invoke = void (*)(void* ctx, int tid, int n_threads);
  struct alignas(64) Range {  // one cache line per thread: claims do not contend
    std::atomic<int> next{0};
    int end = 0;
  };
  static bool inside_region_now();
  void run_erased(Invoke invoke, void* ctx);
  void worker_loop(int tid);

  int n_threads_ = 1;
  std::vector<int> cpus_;
  int spin_us_ = 200;
  std::vector<std::thread> workers_;
  std::unique_ptr<Range[]> ranges_;  // parallel_for_balanced, one per thread

  // Written by the caller before the generation bump, read by workers after.
  Invoke invoke_ = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<int> remaining_{0};
  alignas(64) std::atomic<bool> stop_{false};
};

}  // namespace xft::engine
