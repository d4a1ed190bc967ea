// Allreduce (sum) algorithms written over MPI point-to-point, plus Open MPI's
// own MPI_Allreduce as the baseline. In place, any rank count (non-powers of
// two fold the extra ranks in first), any element count. Every algorithm
// leaves bit-identical results on all ranks: each partial sum is computed on
// one rank (or symmetrically by both partners) and then copied.
#pragma once

#include "engine/comm/mpi_c.h"

#include <cstddef>
#include <vector>

#include "common/expected.h"
#include "engine/comm/reduce.h"
#include "engine/comm/selection.h"

namespace xft::engine::comm {

class P2pAllreduce {
 public:
  // `comm` is borrowed, not freed. world_ranks[i]: world rank of comm rank i
  // (only for naming peers in progress reports).
  P2pAllreduce(MPI_Comm comm, std::vector<int> world_ranks);
  ~P2pAllreduce();
  P2pAllreduce(const P2pAllreduce&) = delete;
  P2pAllreduce& operator=(const P2pAllreduce&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // algo: mpi, ring, recursive_doubling, rabenseifner or direct.
  Expected<void> allreduce(Algorithm algo, void* data, size_t count, DType dtype);

 private:
  void mpi_allreduce(void* data, size_t count, DType dtype);
  void ring(char* data, size_t count, DType dtype);
  void recursive_doubling(char* data, size_t count, DType dtype);
  void rabenseifner(char* data, size_t count, DType dtype);
  void direct(char* data, size_t count, DType dtype);

  // Non-power-of-two handling shared by recursive doubling and Rabenseifner:
  // ranks below 2*rem pair up, the even one hands its vector to the odd one
  // and sits out. Returns the rank in the power-of-two group, or -1.
  int fold_in(char* data, size_t count, DType dtype, int pow2);
  void fold_out(char* data, size_t count, DType dtype, int pow2);
  int real_rank(int folded_rank, int pow2) const;

  void sendrecv(const void* send, size_t send_bytes, int dest, void* recv, size_t recv_bytes,
                int source);
  void send(const void* data, size_t bytes, int dest);
  void recv(void* data, size_t bytes, int source);
  char* scratch(size_t bytes);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::vector<char> scratch_;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
};

// Element range [begin, end) of block `index` when `count` elements are cut
// into `parts` blocks whose sizes differ by at most one.
struct Block {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};
Block block_of(size_t count, int parts, int index);

}  // namespace xft::engine::comm
