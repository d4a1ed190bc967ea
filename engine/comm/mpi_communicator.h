// The engine's Communicator over MPI ranks, with the allreduce backend chosen
// by name: `mpi` (MPI_Allreduce), `shm` (one host), `hier` (shm inside hosts,
// MPI across), `auto` (the tune table for this rank layout, else the built-in
// default), or any oneCCL-style selection string. Optionally the fp32
// activations travel as bf16 (half the bytes; sums accumulate in fp32).
#pragma once

#include "engine/comm/mpi_c.h"

#include <memory>
#include <string>

#include "common/expected.h"
#include "engine/comm/allreducer.h"
#include "engine/comm/communicator.h"

namespace xft::engine::comm {

struct CommBackendOptions {
  std::string backend = "auto";
  bool bf16_payload = false;
  std::string tune_file;  // empty: default_tune_path()
  ShmOptions shm = shm_options_from_env();
};

// What `auto` means for this job: rank 0 reads the tune table and every rank
// gets the same answer. `source` (if given) says where it came from.
// Collective.
Expected<Selection> resolve_auto_selection(const Allreducer& allreducer, DType dtype,
                                           const std::string& tune_file, std::string* source);

// Turns a backend name or selection string into a selection (collective for `auto`).
Expected<Selection> resolve_backend(const Allreducer& allreducer, const std::string& backend, DType dtype,
                                    const std::string& tune_file, std::string* source);

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `comm` (borrowed; must outlive this object).
  static Expected<std::unique_ptr<MpiCommunicator>> create(MPI_Comm comm, const CommBackendOptions& options);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Throws std::runtime_error when a peer never arrives (shm timeout).
  void allreduce_sum(float* data, size_t n) override;
  void allgather(const void* in, size_t bytes, void* out) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void broadcast_when_ready(void* data, size_t bytes, int root) override;
  void barrier() override;

  // "auto -> shm:0-max (built-in default), bf16 payload" for logs.
  const std::string& description() const { return description_; }
  const NodeLayout& layout() const { return allreducer_->layout(); }

 private:
  MpiCommunicator() = default;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool bf16_payload_ = false;
  std::unique_ptr<Allreducer> allreducer_;
  Selection selection_;
  std::vector<uint16_t> payload_;
  std::string description_;
};

}  // namespace xft::engine::comm
