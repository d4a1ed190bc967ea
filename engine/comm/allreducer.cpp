#include "engine/comm/allreducer.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace xft::engine::comm {

namespace {

std::vector<std::string> gather_hostnames(MPI_Comm world, int size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(size_t(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                world);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.emplace_back(all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME,
                     strnlen(all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME));
  return out;
}

std::vector<int> world_ranks_of(MPI_Comm comm, int world_rank) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> out(static_cast<size_t>(size));
  MPI_Allgather(&world_rank, 1, MPI_INT, out.data(), 1, MPI_INT, comm);
  return out;
}

}  // namespace

std::string NodeLayout::key() const {
  std::string out = "ranks=" + std::to_string(world_size) + " nodes=" + std::to_string(node_count) +
                    " per_node=";
  for (size_t i = 0; i < node_sizes.size(); ++i) out += (i ? "," : "") + std::to_string(node_sizes[i]);
  return out;
}

std::string NodeLayout::describe() const {
  std::string out;
  for (int node = 0; node < node_count; ++node) {
    std::string ranks;
    std::string host;
    for (int r = 0; r < world_size; ++r) {
      if (node_of_rank[size_t(r)] != node) continue;
      if (host.empty()) host = hostnames[size_t(r)];
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    }
    out += (out.empty() ? "" : " ") + host + "[" + ranks + "]";
  }
  return out;
}

Expected<std::unique_ptr<Allreducer>> Allreducer::create(MPI_Comm world, ShmOptions shm_options) {
  std::unique_ptr<Allreducer> self(new Allreducer());
  self->world_ = world;
  NodeLayout& layout = self->layout_;
  MPI_Comm_rank(world, &layout.world_rank);
  MPI_Comm_size(world, &layout.world_size);
  layout.hostnames = gather_hostnames(world, layout.world_size);

  // Candidate node group: MPI says we share memory AND the host names agree.
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, layout.world_rank, MPI_INFO_NULL, &shared);
  std::vector<std::string> unique_hosts = layout.hostnames;
  std::sort(unique_hosts.begin(), unique_hosts.end());
  unique_hosts.erase(std::unique(unique_hosts.begin(), unique_hosts.end()), unique_hosts.end());
  int host_color = int(std::lower_bound(unique_hosts.begin(), unique_hosts.end(),
                                        layout.hostnames[size_t(layout.world_rank)]) -
                       unique_hosts.begin());
  MPI_Comm_split(shared, host_color, layout.world_rank, &self->node_comm_);
  MPI_Comm_free(&shared);

  // The segment must really be shared; if not, these ranks go alone.
  std::vector<int> node_world = world_ranks_of(self->node_comm_, layout.world_rank);
  auto shm = ShmGroup::create(self->node_comm_, node_world, layout.hostnames[size_t(layout.world_rank)],
                              shm_options);
  int shm_failed_here = shm ? 0 : 1;
  if (shm) {
    self->shm_ = std::move(*shm);
  } else {
    MPI_Comm alone = MPI_COMM_NULL;
    int node_rank = 0;
    MPI_Comm_rank(self->node_comm_, &node_rank);
    MPI_Comm_split(self->node_comm_, node_rank, 0, &alone);
    MPI_Comm_free(&self->node_comm_);
    self->node_comm_ = alone;
    node_world = world_ranks_of(self->node_comm_, layout.world_rank);
    auto single = ShmGroup::create(self->node_comm_, node_world, layout.hostnames[size_t(layout.world_rank)],
                                   shm_options);
    if (!single) return single.error();
    self->shm_ = std::move(*single);
  }
  // Every rank learns whether some host lost its shared memory, and why (from the lowest such rank).
  int first_problem = shm_failed_here ? layout.world_rank : layout.world_size;
  int problem_rank = layout.world_size;
  MPI_Allreduce(&first_problem, &problem_rank, 1, MPI_INT, MPI_MIN, world);
  if (problem_rank < layout.world_size) {
    char message[512] = {};
    if (layout.world_rank == problem_rank)
      std::snprintf(message, sizeof message, "%s", shm.error().message.c_str());
    MPI_Bcast(message, sizeof message, MPI_CHAR, problem_rank, world);
    layout.shm_problem = message;
  }

  MPI_Comm_rank(self->node_comm_, &layout.node_rank);
  MPI_Comm_size(self->node_comm_, &layout.node_size);
  MPI_Comm_split(world, layout.node_rank == 0 ? 0 : MPI_UNDEFINED, layout.world_rank, &self->leader_comm_);

  // Node index of every rank: groups numbered by their lowest world rank.
  int my_leader = node_world[0];
  std::vector<int> leaders(static_cast<size_t>(layout.world_size));
  MPI_Allgather(&my_leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world);
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  layout.node_count = int(distinct.size());
  layout.node_sizes.assign(distinct.size(), 0);
  for (int leader : leaders) {
    int index = int(std::lower_bound(distinct.begin(), distinct.end(), leader) - distinct.begin());
    layout.node_of_rank.push_back(index);
    layout.node_sizes[size_t(index)]++;
  }
  layout.node_index = layout.node_of_rank[size_t(layout.world_rank)];

  std::vector<int> all_world(static_cast<size_t>(layout.world_size));
  for (int r = 0; r < layout.world_size; ++r) all_world[size_t(r)] = r;
  self->world_p2p_ = std::make_unique<P2pAllreduce>(world, all_world);
  if (self->leader_comm_ != MPI_COMM_NULL)
    self->leader_p2p_ = std::make_unique<P2pAllreduce>(self->leader_comm_,
                                                       world_ranks_of(self->leader_comm_, layout.world_rank));
  return self;
}

Allreducer::~Allreducer() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  world_p2p_.reset();
  leader_p2p_.reset();
  shm_.reset();
  if (finalized) return;
  if (leader_comm_ != MPI_COMM_NULL) MPI_Comm_free(&leader_comm_);
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

Expected<void> Allreducer::supports(Algorithm algo) const {
  if (algo != Algorithm::shm) return {};
  if (layout_.node_count > 1) {
    std::string why = layout_.shm_problem.empty() ? "" : " (" + layout_.shm_problem + ")";
    return make_error("shm needs every rank on one host sharing memory; this job spans " +
                      std::to_string(layout_.node_count) + " groups: " + layout_.describe() + why +
                      "; use hier");
  }
  return {};
}

Expected<void> Allreducer::allreduce(Algorithm algo, void* data, size_t count, DType dtype) {
  switch (algo) {
    case Algorithm::shm:
      if (auto ok = supports(algo); !ok) return ok;
      return shm_->allreduce(data, count, dtype);
    case Algorithm::hier:
      return hier(data, count, dtype);
    default:
      return world_p2p_->allreduce(algo, data, count, dtype);
  }
}

Expected<void> Allreducer::allreduce(const Selection& selection, void* data, size_t count, DType dtype) {
  return allreduce(selection.pick(count * dtype_size(dtype)), data, count, dtype);
}

// Sum inside each host through shared memory onto the host's leader, leaders
// allreduce over MPI, and each leader hands the result back through shared memory.
Expected<void> Allreducer::hier(void* data, size_t count, DType dtype) {
  if (layout_.node_count == 1) return shm_->allreduce(data, count, dtype);
  if (auto ok = shm_->reduce(data, count, dtype, 0); !ok) return ok;
  if (leader_p2p_)
    if (auto ok = leader_p2p_->allreduce(Algorithm::mpi, data, count, dtype); !ok) return ok;
  return shm_->broadcast(data, count * dtype_size(dtype), 0);
}

Selection default_selection(const NodeLayout& layout) {
  if (layout.node_count == 1) return Selection(Algorithm::shm);
  return Selection(Algorithm::mpi);
}

}  // namespace xft::engine::comm
