#include "engine/comm/mpi_communicator.h"

#include <chrono>
#include <thread>

#include <climits>
#include <cstring>
#include <stdexcept>

#include "engine/comm/tune_table.h"

namespace xft::engine::comm {

namespace {

// Rank 0's string to everyone.
std::string broadcast_string(const std::string& text, MPI_Comm comm) {
  int length = int(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  std::string out(size_t(length), '\0');
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) out = text;
  if (length > 0) MPI_Bcast(out.data(), length, MPI_CHAR, 0, comm);
  return out;
}

}  // namespace

Expected<Selection> resolve_auto_selection(const Allreducer& allreducer, DType dtype,
                                           const std::string& tune_file, std::string* source) {
  const std::string path = tune_file.empty() ? default_tune_path() : tune_file;
  // Rank 0 reads; "!" prefixes an error, "" means no entry.
  std::string answer;
  if (allreducer.layout().world_rank == 0) {
    auto loaded = load_tuned_selection(path, allreducer.layout().key(), dtype);
    if (!loaded) answer = "!" + loaded.error().message;
    else if (*loaded) answer = **loaded;
  }
  answer = broadcast_string(answer, allreducer.comm());
  if (!answer.empty() && answer[0] == '!') return make_error(answer.substr(1));
  if (answer.empty()) {
    if (source) *source = "built-in default; no entry for '" + allreducer.layout().key() + "' " +
                          dtype_name(dtype) + " in " + path;
    return default_selection(allreducer.layout());
  }
  auto selection = Selection::parse(answer);
  if (!selection) return selection.error();
  // A table measured elsewhere may name shm for a layout where it cannot run.
  for (Algorithm algo : selection->algorithms())
    if (auto ok = allreducer.supports(algo); !ok)
      return make_error(path + ": tuned selection '" + answer + "' cannot run here: " + ok.error().message);
  if (source) *source = "tuned, " + path;
  return selection;
}

Expected<Selection> resolve_backend(const Allreducer& allreducer, const std::string& backend, DType dtype,
                                    const std::string& tune_file, std::string* source) {
  if (backend == "auto") return resolve_auto_selection(allreducer, dtype, tune_file, source);
  auto selection = Selection::parse(backend);
  if (!selection) return selection.error();
  for (Algorithm algo : selection->algorithms())
    if (auto ok = allreducer.supports(algo); !ok) return ok.error();
  if (source) *source = "given";
  return selection;
}

Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(MPI_Comm comm,
                                                                   const CommBackendOptions& options) {
  std::unique_ptr<MpiCommunicator> self(new MpiCommunicator());
  self->comm_ = comm;
  MPI_Comm_rank(comm, &self->rank_);
  MPI_Comm_size(comm, &self->size_);
  self->bf16_payload_ = options.bf16_payload;
  auto allreducer = Allreducer::create(comm, options.shm);
  if (!allreducer) return allreducer.error();
  self->allreducer_ = std::move(*allreducer);
  std::string source;
  auto selection = resolve_backend(*self->allreducer_, options.backend,
                                   options.bf16_payload ? DType::bf16 : DType::f32, options.tune_file, &source);
  if (!selection) return make_error("allreduce backend '" + options.backend + "': " + selection.error().message);
  self->selection_ = *selection;
  self->description_ = options.backend + " -> " + self->selection_.str() + " (" + source + ")" +
                       (options.bf16_payload ? ", bf16 payload" : "");
  return self;
}

void MpiCommunicator::allreduce_sum(float* data, size_t n) {
  if (size_ == 1 || n == 0) return;
  Expected<void> done;
  if (bf16_payload_) {
    if (payload_.size() < n) payload_.resize(n);
    for (size_t i = 0; i < n; ++i) payload_[i] = f32_to_bf16(data[i]);
    done = allreducer_->allreduce(selection_, payload_.data(), n, DType::bf16);
    if (done)
      for (size_t i = 0; i < n; ++i) data[i] = bf16_to_f32(payload_[i]);
  } else {
    done = allreducer_->allreduce(selection_, data, n, DType::f32);
  }
  if (!done) throw std::runtime_error("allreduce of " + std::to_string(n) + " floats: " + done.error().message);
}

void MpiCommunicator::allgather(const void* in, size_t bytes, void* out) {
  if (bytes > size_t(INT_MAX)) throw std::runtime_error("allgather of more than 2 GiB per rank");
  MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm_);
}

void MpiCommunicator::broadcast(void* data, size_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    size_t n = std::min(bytes, size_t(1) << 30);
    MPI_Bcast(p, int(n), MPI_BYTE, root, comm_);
    p += n;
    bytes -= n;
  }
}

// MPI_Bcast busy-polls; a non-blocking broadcast tested with a growing sleep
// (50 us up to 2 ms) costs an idle rank almost nothing and a busy one at most
// one short sleep per call.
void MpiCommunicator::broadcast_when_ready(void* data, size_t bytes, int root) {
  if (bytes > (size_t(1) << 30)) return broadcast(data, bytes, root);
  MPI_Request request;
  MPI_Ibcast(data, int(bytes), MPI_BYTE, root, comm_, &request);
  int done = 0;
  auto pause = std::chrono::microseconds(50);
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) {
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

void MpiCommunicator::barrier() { MPI_Barrier(comm_); }

}  // namespace xft::engine::comm
