#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/kernels/thread_pool.h"

namespace xft::engine {
namespace {

TEST(KernelsThreadPool, ParallelForCoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int begin, int end) {
        ASSERT_LT(begin, end);
        for (int i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(KernelsThreadPool, BalancedForCoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int n : {0, 1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for_balanced(n, [&](int begin, int end) {
        ASSERT_LT(begin, end);
        for (int i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(KernelsThreadPool, ParallelRowsSplitsOnlyManyRows) {
  ThreadPool pool(3);
  const std::thread::id caller = std::this_thread::get_id();
  for (int n : {0, 1, 5, ThreadPool::kParallelRowsMin - 1, ThreadPool::kParallelRowsMin, 512}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> calls{0}, off_caller{0};
    pool.parallel_rows(n, [&](int begin, int end) {
      ASSERT_LT(begin, end);
      calls.fetch_add(1);
      if (std::this_thread::get_id() != caller) off_caller.fetch_add(1);
      for (int i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n;
    if (n < ThreadPool::kParallelRowsMin) {
      // A decode step's rows: one call, on the caller, no region.
      EXPECT_EQ(calls.load(), n > 0 ? 1 : 0) << "n=" << n;
      EXPECT_EQ(off_caller.load(), 0) << "n=" << n;
    } else {
      EXPECT_EQ(calls.load(), 3) << "n=" << n;
      EXPECT_EQ(off_caller.load(), 2) << "n=" << n;
    }
  }
}

TEST(KernelsThreadPool, BalancedForHandsASlowThreadsTasksToTheOthers) {
  // Thread 0 (the caller) stalls on its first task until every other task is
  // done: a static split would deadlock here, the balanced one lets thread 1
  // take the rest of thread 0's range.
  ThreadPool pool(2);
  const int n = 40;
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int> done{0};
  std::atomic<int> done_by_worker{0};
  pool.parallel_for_balanced(n, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      if (i == 0) {
        while (done.load() < n - 1) std::this_thread::yield();
      } else {
        done_by_worker.fetch_add(1);
      }
      hits[i].fetch_add(1);
      done.fetch_add(1);
    }
  });
  for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  EXPECT_EQ(done_by_worker.load(), n - 1);  // its own 20 tasks and thread 0's other 19
}

TEST(KernelsThreadPool, RunGivesEachWorkerItsIndexAndManyRegionsComplete) {
  ThreadPool pool(3, {}, 5);  // short spin: regions also start from the futex sleep
  std::atomic<int> sum{0};
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::atomic<int> mask{0};
    pool.run([&](int tid, int n) {
      EXPECT_EQ(n, 3);
      mask.fetch_or(1 << tid);
      sum.fetch_add(1);
    });
    ASSERT_EQ(mask.load(), 0b111) << iteration;
  }
  EXPECT_EQ(sum.load(), 15000);
}

TEST(KernelsThreadPool, NestedRegionsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run([&](int, int) {
    pool.parallel_for(10, [&](int begin, int end) {
      EXPECT_EQ(begin, 0);
      EXPECT_EQ(end, 10);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 2);
}

TEST(KernelsThreadPool, WorkersArePinnedToTheGivenCpus) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  int cpu = 0;  // the first cpu this process may use
  while (!CPU_ISSET(cpu, &original)) ++cpu;
  std::vector<std::atomic<int>> seen_cpu(2);
  {
    ThreadPool pool(2, {cpu, cpu});
    pool.run([&](int tid, int) {
      cpu_set_t set;
      CPU_ZERO(&set);
      ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
      seen_cpu[tid] = CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set) ? 1 : 0;
    });
  }
  // The constructor pinned this (calling) thread too; undo it for later tests.
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(seen_cpu[0].load(), 1);
  EXPECT_EQ(seen_cpu[1].load(), 1);
}

}  // namespace
}  // namespace xft::engine
