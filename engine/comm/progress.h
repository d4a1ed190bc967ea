// What this rank's collective is waiting on right now, published for a
// watchdog thread: when a peer dies or stops, the message can name it instead
// of the job hanging silently.
#pragma once

#include <atomic>
#include <cstdint>

namespace xft::engine::comm {

struct Progress {
  // World rank of the peer a blocking step waits for; -1: none known (inside MPI_Allreduce).
  std::atomic<int> waiting_on{-1};
  // Bumped at every completed step; a watchdog sees a stall as no change.
  std::atomic<uint64_t> steps{0};
};

// One per process: collectives run on one thread at a time.
Progress& progress();

inline void note_waiting_on(int world_rank) {
  progress().waiting_on.store(world_rank, std::memory_order_relaxed);
}
inline void note_step_done() {
  progress().waiting_on.store(-1, std::memory_order_relaxed);
  progress().steps.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace xft::engine::comm
