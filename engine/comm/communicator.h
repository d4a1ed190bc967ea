// The collectives a tensor-parallel rank needs, behind one interface so the
// model code is the same for one rank, ranks in one process (tests) and MPI /
// shared-memory ranks. Every call is collective: all ranks call it in the same
// order with the same sizes.
#pragma once

#include <cstddef>
#include <memory>

namespace xft::engine {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data[0..n) becomes the element-wise sum over all ranks, on every rank.
  virtual void allreduce_sum(float* data, size_t n) = 0;
  // out receives size() blocks of `bytes`, block r from rank r (out may not alias in).
  virtual void allgather(const void* in, size_t bytes, void* out) = 0;
  // data[0..bytes) of rank `root` is copied to every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // The same, for a root that may stay silent for long (a server between
  // requests): waiting ranks sleep between polls instead of spinning a core.
  virtual void broadcast_when_ready(void* data, size_t bytes, int root) { broadcast(data, bytes, root); }
  virtual void barrier() = 0;
};

// tp_size = 1: the collectives are no-ops (allgather copies).
class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(float*, size_t) override {}
  void allgather(const void* in, size_t bytes, void* out) override;
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
};

}  // namespace xft::engine
