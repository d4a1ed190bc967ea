// One object per MPI job that runs any allreduce algorithm on a buffer: it
// finds which ranks truly share memory (node groups), keeps the shared-memory
// segment and the point-to-point state, and dispatches by algorithm or by a
// size-based selection.
//
// Node groups: ranks are grouped by MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
// AND by host name (MPI_Get_processor_name), and the group's segment must be
// visibly shared (a cookie written by node rank 0 is read back by all). Test
// hosts that are network namespaces on one machine have their own host names
// and possibly their own /dev/shm; either way they end up in separate groups,
// so `shm` never assumes memory that is not really shared. If the segment
// check fails, the ranks of that host fall back to one group each.
#pragma once

#include "engine/comm/mpi_c.h"

#include <memory>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/comm/p2p_allreduce.h"
#include "engine/comm/reduce.h"
#include "engine/comm/selection.h"
#include "engine/comm/shm_group.h"

namespace xft::engine::comm {

struct NodeLayout {
  int world_rank = 0;
  int world_size = 1;
  int node_rank = 0;   // rank within this rank's node group
  int node_size = 1;
  int node_index = 0;  // 0..node_count-1, ordered by the lowest world rank in each group
  int node_count = 1;
  std::vector<std::string> hostnames;  // per world rank
  std::vector<int> node_of_rank;       // per world rank
  std::vector<int> node_sizes;         // per node index
  std::string shm_problem;             // why a host's ranks could not share memory; empty if fine

  // "ranks=4 nodes=2 per_node=2,2": the key of the tune table.
  std::string key() const;
  // "host-a[0,1] host-b[2,3]"
  std::string describe() const;
};

class Allreducer {
 public:
  // Collective over `world` (borrowed).
  static Expected<std::unique_ptr<Allreducer>> create(MPI_Comm world, ShmOptions shm_options);
  ~Allreducer();
  Allreducer(const Allreducer&) = delete;
  Allreducer& operator=(const Allreducer&) = delete;

  const NodeLayout& layout() const { return layout_; }
  MPI_Comm comm() const { return world_; }

  // Whether `algo` can run on this layout, with the reason if not (same answer on every rank).
  Expected<void> supports(Algorithm algo) const;

  // In place, collective; all ranks pass the same algorithm, count and dtype.
  Expected<void> allreduce(Algorithm algo, void* data, size_t count, DType dtype);
  Expected<void> allreduce(const Selection& selection, void* data, size_t count, DType dtype);

 private:
  Allreducer() = default;
  Expected<void> hier(void* data, size_t count, DType dtype);

  MPI_Comm world_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Comm leader_comm_ = MPI_COMM_NULL;
  NodeLayout layout_;
  std::unique_ptr<P2pAllreduce> world_p2p_;
  std::unique_ptr<P2pAllreduce> leader_p2p_;
  std::unique_ptr<ShmGroup> shm_;
};

// The selection `--algo auto` / the `auto` backend use without a tune table:
// shm when every rank shares one host (it beats MPI_Allreduce at every size
// there), else mpi until `bench allreduce --tune` has measured the cluster.
Selection default_selection(const NodeLayout& layout);

}  // namespace xft::engine::comm
