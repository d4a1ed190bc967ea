// Tests only: N ranks as N threads of one process, so the tensor-parallel
// math can be checked against one rank before any MPI exists. Sums are taken
// in rank order on every rank, so all ranks see bit-identical results.
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "engine/comm/communicator.h"

namespace xft::engine::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), sync_(size), slots_(size) {}
  int size() const { return size_; }
  void wait() { sync_.arrive_and_wait(); }
  const void*& slot(int rank) { return slots_[rank]; }

 private:
  int size_;
  std::barrier<> sync_;
  std::vector<const void*> slots_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void allreduce_sum(float* data, size_t n) override {
    group_.slot(rank_) = data;
    group_.wait();
    std::vector<float> sum(n, 0.0f);
    for (int r = 0; r < size(); ++r) {
      const float* other = static_cast<const float*>(group_.slot(r));
      for (size_t i = 0; i < n; ++i) sum[i] += other[i];
    }
    group_.wait();  // nobody overwrites its data before everyone has read it
    std::memcpy(data, sum.data(), n * sizeof(float));
  }

  void allgather(const void* in, size_t bytes, void* out) override {
    group_.slot(rank_) = in;
    group_.wait();
    for (int r = 0; r < size(); ++r) {
      std::memcpy(static_cast<char*>(out) + r * bytes, group_.slot(r), bytes);
    }
    group_.wait();
  }

  void broadcast(void* data, size_t bytes, int root) override {
    group_.slot(rank_) = data;
    group_.wait();
    if (rank_ != root) std::memcpy(data, group_.slot(root), bytes);
    group_.wait();
  }

  void barrier() override { group_.wait(); }

 private:
  ThreadGroup& group_;
  int rank_;
};

// Runs body(rank, comm) on `size` threads and joins them.
inline void run_ranks(int size, const std::function<void(int, Communicator&)>& body) {
  ThreadGroup group(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(group, r);
      body(r, comm);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace xft::engine::testing
