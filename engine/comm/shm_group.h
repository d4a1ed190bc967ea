// Allreduce, reduce and broadcast among the ranks of one host through a POSIX
// shared-memory segment (DeepSpeed shm_interface / XFT ShmCCL style).
//
// Segment: a header, one flag pair per rank (own cache lines), then per rank
// two data buffers used alternately. Each collective call (each chunk of a
// long message) gets the next sequence number `seq`; a rank publishes
// "my data for seq is in buffer seq%2" by storing seq into its `arrive` flag
// (release) and readers wait until the flag reaches seq (acquire).
// Double buffering without barriers: a rank may overwrite buffer seq%2 once
// every peer has finished call seq-2, which `arrive[p] >= seq-1` proves
// (a rank only posts seq-1 after finishing seq-2).
//
// The segment is created by node rank 0 under a random name, opened by the
// others, checked (a random cookie must be visible, so ranks that only
// appear to share a host are caught), and unlinked as soon as everyone has
// mapped it, so a crash leaves nothing behind in /dev/shm.
#pragma once

#include "engine/comm/mpi_c.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/comm/reduce.h"

namespace xft::engine::comm {

struct ShmOptions {
  size_t buffer_bytes = size_t(256) << 10;  // per rank, per buffer (two each); longer messages go in chunks
  // Up to this size every rank sums all buffers itself (one handshake); above
  // it each rank sums a slice, then all copy the slices (two handshakes, 1/n of the adds).
  size_t small_bytes = size_t(64) << 10;
  double timeout_s = 60;  // a peer that does not arrive in time is named in the error
  int spins_before_yield = 2000;  // then sched_yield (ranks may share cores)
};

// Reads XFT_SHM_BUFFER_BYTES, XFT_SHM_SMALL_BYTES, XFT_COMM_TIMEOUT_S over the defaults.
ShmOptions shm_options_from_env();

class ShmGroup {
 public:
  // Collective over `node_comm`. world_ranks[i]: world rank of node rank i,
  // host: this host's name (both only for error messages).
  static Expected<std::unique_ptr<ShmGroup>> create(MPI_Comm node_comm, std::vector<int> world_ranks,
                                                    std::string host, ShmOptions options);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& segment_name() const { return name_; }

  // All collective over the node's ranks, in the same order on every rank.
  Expected<void> allreduce(void* data, size_t count, DType dtype);
  // Only `root` receives the sum; others' data is left as it was.
  Expected<void> reduce(void* data, size_t count, DType dtype, int root);
  Expected<void> broadcast(void* data, size_t bytes, int root);

 private:
  struct alignas(128) Flag {
    std::atomic<uint64_t> value;
  };

  ShmGroup() = default;
  Expected<void> map_segment(bool create);
  Expected<void> chunk_reduce(char* data, size_t count, DType dtype, int root /* -1: all */);
  Expected<void> chunk_broadcast(char* data, size_t bytes, int root);
  Expected<void> peers_done_before(uint64_t seq);
  Expected<void> wait_flag(Flag* flags, int peer, uint64_t target, const char* what);
  char* buffer(int rank, uint64_t seq) const;
  Flag* arrive() const;
  Flag* reduced() const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::string host_;
  ShmOptions options_;
  std::string name_;
  void* base_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint64_t seq_ = 0;
  std::vector<uint64_t> known_arrive_;  // last arrive value seen per peer
};

}  // namespace xft::engine::comm
