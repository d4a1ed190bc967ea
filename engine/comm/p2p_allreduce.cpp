#include "engine/comm/p2p_allreduce.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "engine/comm/progress.h"

namespace xft::engine::comm {

namespace {

constexpr int kTag = 7311;
// MPI counts are ints: larger messages go in pieces.
constexpr size_t kMaxPiece = size_t(1) << 30;

void bf16_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_sum(DType::bf16, inout, in, size_t(*len));
}

int largest_pow2_at_most(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

Progress& progress() {
  static Progress instance;
  return instance;
}

Block block_of(size_t count, int parts, int index) {
  size_t base = count / size_t(parts);
  size_t extra = count % size_t(parts);
  size_t i = size_t(index);
  size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

P2pAllreduce::P2pAllreduce(MPI_Comm comm, std::vector<int> world_ranks)
    : comm_(comm), world_ranks_(std::move(world_ranks)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Op_create(&bf16_sum_op, 1, &bf16_sum_);
}

P2pAllreduce::~P2pAllreduce() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
}

char* P2pAllreduce::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void P2pAllreduce::sendrecv(const void* send, size_t send_bytes, int dest, void* recv,
                            size_t recv_bytes, int source) {
  note_waiting_on(world_ranks_[size_t(source)]);
  if (send_bytes <= kMaxPiece && recv_bytes <= kMaxPiece) {
    // Always one message each way, empty ones included, so both sides agree on the count.
    MPI_Sendrecv(send, int(send_bytes), MPI_BYTE, dest, kTag, recv, int(recv_bytes), MPI_BYTE, source, kTag,
                 comm_, MPI_STATUS_IGNORE);
  } else {
    // Each direction in its own pieces; message order per peer keeps them paired.
    std::vector<MPI_Request> requests;
    auto* in = static_cast<char*>(recv);
    for (size_t done = 0; done == 0 || done < recv_bytes; done += kMaxPiece) {  // empty: one message
      requests.emplace_back();
      MPI_Irecv(in + done, int(std::min(kMaxPiece, recv_bytes - done)), MPI_BYTE, source, kTag, comm_,
                &requests.back());
    }
    auto* out = static_cast<const char*>(send);
    for (size_t done = 0; done == 0 || done < send_bytes; done += kMaxPiece) {
      requests.emplace_back();
      MPI_Isend(out + done, int(std::min(kMaxPiece, send_bytes - done)), MPI_BYTE, dest, kTag, comm_,
                &requests.back());
    }
    MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  }
  note_step_done();
}

void P2pAllreduce::send(const void* data, size_t bytes, int dest) {
  note_waiting_on(world_ranks_[size_t(dest)]);
  auto* p = static_cast<const char*>(data);
  do {
    size_t n = std::min(bytes, kMaxPiece);
    MPI_Send(p, int(n), MPI_BYTE, dest, kTag, comm_);
    p += n;
    bytes -= n;
  } while (bytes > 0);
  note_step_done();
}

void P2pAllreduce::recv(void* data, size_t bytes, int source) {
  note_waiting_on(world_ranks_[size_t(source)]);
  auto* p = static_cast<char*>(data);
  do {
    size_t n = std::min(bytes, kMaxPiece);
    MPI_Recv(p, int(n), MPI_BYTE, source, kTag, comm_, MPI_STATUS_IGNORE);
    p += n;
    bytes -= n;
  } while (bytes > 0);
  note_step_done();
}

Expected<void> P2pAllreduce::allreduce(Algorithm algo, void* data, size_t count, DType dtype) {
  if (size_ == 1 || count == 0) return {};
  char* bytes = static_cast<char*>(data);
  switch (algo) {
    case Algorithm::mpi: mpi_allreduce(data, count, dtype); return {};
    case Algorithm::ring: ring(bytes, count, dtype); return {};
    case Algorithm::recursive_doubling: recursive_doubling(bytes, count, dtype); return {};
    case Algorithm::rabenseifner: rabenseifner(bytes, count, dtype); return {};
    case Algorithm::direct: direct(bytes, count, dtype); return {};
    default:
      return make_error(std::string("allreduce algorithm '") + algorithm_name(algo) +
                        "' is not a point-to-point algorithm");
  }
}

void P2pAllreduce::mpi_allreduce(void* data, size_t count, DType dtype) {
  note_waiting_on(-1);
  size_t max_elems = size_t(INT_MAX);
  auto* p = static_cast<char*>(data);
  while (count > 0) {
    size_t n = std::min(count, max_elems);
    if (dtype == DType::f32)
      MPI_Allreduce(MPI_IN_PLACE, p, int(n), MPI_FLOAT, MPI_SUM, comm_);
    else
      MPI_Allreduce(MPI_IN_PLACE, p, int(n), MPI_UINT16_T, bf16_sum_, comm_);
    p += n * dtype_size(dtype);
    count -= n;
  }
  note_step_done();
}

// Reduce-scatter then allgather around the ring: 2(n-1) steps, each moving
// 1/n of the vector; bandwidth-optimal for large messages.
void P2pAllreduce::ring(char* data, size_t count, DType dtype) {
  const size_t es = dtype_size(dtype);
  const int n = size_;
  const int right = (rank_ + 1) % n;
  const int left = (rank_ + n - 1) % n;
  char* tmp = scratch(block_of(count, n, 0).size() * es);
  for (int step = 0; step < n - 1; ++step) {
    Block out = block_of(count, n, (rank_ - step + n) % n);
    Block in = block_of(count, n, (rank_ - step - 1 + 2 * n) % n);
    sendrecv(data + out.begin * es, out.size() * es, right, tmp, in.size() * es, left);
    reduce_sum(dtype, data + in.begin * es, tmp, in.size());
  }
  // Rank r now holds the finished block r+1; pass finished blocks around.
  for (int step = 0; step < n - 1; ++step) {
    Block out = block_of(count, n, (rank_ + 1 - step + n) % n);
    Block in = block_of(count, n, (rank_ - step + n) % n);
    sendrecv(data + out.begin * es, out.size() * es, right, data + in.begin * es,
             in.size() * es, left);
  }
}

int P2pAllreduce::real_rank(int folded_rank, int pow2) const {
  int rem = size_ - pow2;
  return folded_rank < rem ? folded_rank * 2 + 1 : folded_rank + rem;
}

int P2pAllreduce::fold_in(char* data, size_t count, DType dtype, int pow2) {
  const int rem = size_ - pow2;
  const size_t bytes = count * dtype_size(dtype);
  if (rank_ >= 2 * rem) return rank_ - rem;
  if (rank_ % 2 == 0) {
    send(data, bytes, rank_ + 1);
    return -1;
  }
  char* tmp = scratch(bytes);
  recv(tmp, bytes, rank_ - 1);
  reduce_sum(dtype, data, tmp, count);
  return rank_ / 2;
}

void P2pAllreduce::fold_out(char* data, size_t count, DType dtype, int pow2) {
  const int rem = size_ - pow2;
  const size_t bytes = count * dtype_size(dtype);
  if (rank_ >= 2 * rem) return;
  if (rank_ % 2 == 0) recv(data, bytes, rank_ + 1);
  else send(data, bytes, rank_ - 1);
}

// log2(n) exchanges of the whole vector: latency-optimal for small messages.
void P2pAllreduce::recursive_doubling(char* data, size_t count, DType dtype) {
  const int pow2 = largest_pow2_at_most(size_);
  const size_t bytes = count * dtype_size(dtype);
  const int folded = fold_in(data, count, dtype, pow2);
  if (folded >= 0) {
    char* tmp = scratch(bytes);
    for (int mask = 1; mask < pow2; mask <<= 1) {
      int peer = real_rank(folded ^ mask, pow2);
      sendrecv(data, bytes, peer, tmp, bytes, peer);
      reduce_sum(dtype, data, tmp, count);  // a+b == b+a: both partners get the same bits
    }
  }
  fold_out(data, count, dtype, pow2);
}

// Recursive halving (reduce-scatter) then recursive doubling (allgather):
// log2(n) steps like recursive doubling, the bandwidth of the ring.
void P2pAllreduce::rabenseifner(char* data, size_t count, DType dtype) {
  const int pow2 = largest_pow2_at_most(size_);
  const size_t es = dtype_size(dtype);
  const int folded = fold_in(data, count, dtype, pow2);
  if (folded >= 0) {
    // [lo, hi) is the range of blocks (of pow2) this rank is responsible for.
    auto span = [&](int lo, int hi) {
      return Block{block_of(count, pow2, lo).begin, block_of(count, pow2, hi - 1).end};
    };
    int lo = 0, hi = pow2;
    char* tmp = scratch(span(0, (pow2 + 1) / 2).size() * es + es);
    for (int mask = pow2 >> 1; mask >= 1; mask >>= 1) {
      int peer = real_rank(folded ^ mask, pow2);
      int mid = lo + (hi - lo) / 2;
      bool lower = (folded & mask) == 0;
      Block keep = lower ? span(lo, mid) : span(mid, hi);
      Block give = lower ? span(mid, hi) : span(lo, mid);
      sendrecv(data + give.begin * es, give.size() * es, peer, tmp, keep.size() * es, peer);
      reduce_sum(dtype, data + keep.begin * es, tmp, keep.size());
      if (lower) hi = mid;
      else lo = mid;
    }
    for (int mask = 1; mask < pow2; mask <<= 1) {
      int peer = real_rank(folded ^ mask, pow2);
      int width = hi - lo;
      bool lower = (folded & mask) == 0;
      int other_lo = lower ? hi : lo - width;
      Block mine = span(lo, hi);
      Block theirs = span(other_lo, other_lo + width);
      sendrecv(data + mine.begin * es, mine.size() * es, peer, data + theirs.begin * es,
               theirs.size() * es, peer);
      lo = std::min(lo, other_lo);
      hi = lo + 2 * width;
    }
  }
  fold_out(data, count, dtype, pow2);
}

// nreduce-style: every rank owns block r, receives block r from everyone at
// once, reduces it, and sends the result to everyone: 2 steps of n-1
// simultaneous messages. Good when latency matters and n is small.
void P2pAllreduce::direct(char* data, size_t count, DType dtype) {
  const int n = size_;
  const size_t es = dtype_size(dtype);
  const Block own = block_of(count, n, rank_);
  char* tmp = scratch(own.size() * es * size_t(n) + es);
  std::vector<MPI_Request> sends;
  std::vector<MPI_Request> recvs(size_t(n), MPI_REQUEST_NULL);
  sends.reserve(size_t(n));
  for (int p = 0; p < n; ++p) {
    if (p == rank_) continue;
    MPI_Irecv(tmp + size_t(p) * own.size() * es, int(own.size() * es), MPI_BYTE, p, kTag, comm_,
              &recvs[size_t(p)]);
  }
  for (int k = 1; k < n; ++k) {
    int p = (rank_ + k) % n;  // staggered so no rank is everyone's first target
    Block b = block_of(count, n, p);
    sends.emplace_back();
    MPI_Isend(data + b.begin * es, int(b.size() * es), MPI_BYTE, p, kTag, comm_, &sends.back());
  }
  std::vector<const void*> sources(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    if (p == rank_) {
      sources[size_t(p)] = data + own.begin * es;
      continue;
    }
    note_waiting_on(world_ranks_[size_t(p)]);
    MPI_Wait(&recvs[size_t(p)], MPI_STATUS_IGNORE);
    note_step_done();
    sources[size_t(p)] = tmp + size_t(p) * own.size() * es;
  }
  reduce_sum_n(dtype, data + own.begin * es, sources.data(), n, own.size());
  MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  sends.clear();

  for (int p = 0; p < n; ++p) {
    if (p == rank_) continue;
    Block b = block_of(count, n, p);
    MPI_Irecv(data + b.begin * es, int(b.size() * es), MPI_BYTE, p, kTag, comm_,
              &recvs[size_t(p)]);
  }
  for (int k = 1; k < n; ++k) {
    int p = (rank_ + k) % n;
    sends.emplace_back();
    MPI_Isend(data + own.begin * es, int(own.size() * es), MPI_BYTE, p, kTag, comm_,
              &sends.back());
  }
  for (int p = 0; p < n; ++p) {
    if (p == rank_) continue;
    note_waiting_on(world_ranks_[size_t(p)]);
    MPI_Wait(&recvs[size_t(p)], MPI_STATUS_IGNORE);
    note_step_done();
  }
  MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
}

}  // namespace xft::engine::comm
