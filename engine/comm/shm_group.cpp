#include "engine/comm/shm_group.h"

#include <fcntl.h>
#include <immintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/comm/p2p_allreduce.h"
#include "engine/comm/progress.h"

namespace xft::engine::comm {

namespace {

constexpr uint64_t kMagic = 0x7866746374727368ull;  // "xftctrsh"
constexpr size_t kPage = 4096;
constexpr size_t kNameBytes = 64;
// Slices of the large-message path start on multiples of this many elements
// (whole cache lines for both dtypes).
constexpr size_t kSliceAlign = 32;

struct Header {
  uint64_t magic;
  uint64_t cookie;
  uint64_t nranks;
  uint64_t buffer_bytes;
};

size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

uint64_t random_u64() {
  uint64_t value = 0;
  if (getrandom(&value, sizeof value, 0) != sizeof value)
    value = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ uint64_t(getpid());
  return value;
}

double env_number(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  return end && *end == '\0' && value > 0 ? value : fallback;
}

Block aligned_slice(size_t count, int parts, int index) {
  size_t units = (count + kSliceAlign - 1) / kSliceAlign;
  Block b = block_of(units, parts, index);
  return {std::min(b.begin * kSliceAlign, count), std::min(b.end * kSliceAlign, count)};
}

}  // namespace

ShmOptions shm_options_from_env() {
  ShmOptions options;
  options.buffer_bytes = size_t(env_number("XFT_SHM_BUFFER_BYTES", double(options.buffer_bytes)));
  options.small_bytes = size_t(env_number("XFT_SHM_SMALL_BYTES", double(options.small_bytes)));
  options.timeout_s = env_number("XFT_COMM_TIMEOUT_S", options.timeout_s);
  return options;
}

Expected<std::unique_ptr<ShmGroup>> ShmGroup::create(MPI_Comm node_comm, std::vector<int> world_ranks,
                                                     std::string host, ShmOptions options) {
  std::unique_ptr<ShmGroup> group(new ShmGroup());
  group->comm_ = node_comm;
  MPI_Comm_rank(node_comm, &group->rank_);
  MPI_Comm_size(node_comm, &group->size_);
  group->world_ranks_ = std::move(world_ranks);
  group->host_ = std::move(host);
  options.buffer_bytes = round_up(std::max<size_t>(options.buffer_bytes, kPage), kPage);
  group->options_ = options;
  group->known_arrive_.assign(size_t(group->size_), 0);
  if (group->size_ == 1) return group;

  // Node rank 0 creates the segment; the others learn its name and cookie.
  char name[kNameBytes] = {};
  uint64_t cookie = 0;
  std::string create_error;
  if (group->rank_ == 0) {
    uint64_t token = random_u64();
    std::snprintf(name, sizeof name, "/xftctl-%d-%016llx", int(getpid()), (unsigned long long)token);
    group->name_ = name;
    auto made = group->map_segment(true);
    if (made) {
      cookie = random_u64() | 1;
      auto* header = static_cast<Header*>(group->base_);
      header->nranks = uint64_t(group->size_);
      header->buffer_bytes = options.buffer_bytes;
      header->cookie = cookie;
      std::atomic_thread_fence(std::memory_order_release);
      header->magic = kMagic;
    } else {
      create_error = made.error().message;
      name[0] = '\0';
    }
  }
  MPI_Bcast(name, int(kNameBytes), MPI_CHAR, 0, node_comm);
  MPI_Bcast(&cookie, 1, MPI_UINT64_T, 0, node_comm);
  std::string open_error;
  if (group->rank_ != 0) {
    group->name_ = name;
    if (name[0] == '\0') {
      open_error = "node rank 0 could not create it";
    } else if (auto opened = group->map_segment(false); !opened) {
      open_error = opened.error().message;
    } else {
      auto* header = static_cast<const Header*>(group->base_);
      if (header->magic != kMagic || header->cookie != cookie ||
          header->nranks != uint64_t(group->size_))
        open_error = "segment " + group->name_ + " opened but holds another job's data (no shared /dev/shm with node rank 0)";
    }
  } else {
    open_error = create_error;
  }

  // Everyone must have mapped the same segment, else no rank uses it.
  int first_failed = open_error.empty() ? group->size_ : group->rank_;
  int any_failed = 0;
  MPI_Allreduce(&first_failed, &any_failed, 1, MPI_INT, MPI_MIN, node_comm);
  if (group->rank_ == 0 && !group->name_.empty() && create_error.empty()) shm_unlink(group->name_.c_str());
  if (any_failed < group->size_) {
    std::string reason = open_error;
    if (reason.empty()) reason = "another rank failed (see its message)";
    return make_error("shared memory among the ranks on " + group->host_ + " is not usable: rank " +
                      std::to_string(group->world_ranks_[size_t(any_failed)]) + " could not map " +
                      (group->name_.empty() ? std::string("the segment") : group->name_) + ": " +
                      (any_failed == group->rank_ ? reason : std::string("see that rank's message")));
  }
  // First touch of this rank's own buffers: pages land on this rank's NUMA node
  // and the page faults are paid here, not in the first timed call.
  std::memset(group->buffer(group->rank_, 0), 0, 2 * options.buffer_bytes);
  MPI_Barrier(node_comm);
  return group;
}

Expected<void> ShmGroup::map_segment(bool create) {
  size_t flags_bytes = round_up(2 * size_t(size_) * sizeof(Flag), kPage);
  mapped_bytes_ = kPage + flags_bytes + size_t(size_) * 2 * options_.buffer_bytes;
  int fd = create ? shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)
                  : shm_open(name_.c_str(), O_RDWR, 0);
  if (fd < 0) return make_error("shm_open(" + name_ + "): " + std::strerror(errno));
  if (create && ftruncate(fd, off_t(mapped_bytes_)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name_.c_str());
    return make_error("ftruncate(" + name_ + ", " + std::to_string(mapped_bytes_) +
                      " bytes): " + std::strerror(err) + " (is /dev/shm large enough?)");
  }
  struct stat st {};
  if (!create && (fstat(fd, &st) != 0 || size_t(st.st_size) < mapped_bytes_)) {
    close(fd);
    return make_error("segment " + name_ + " is smaller than expected");
  }
  void* base = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) {
    if (create) shm_unlink(name_.c_str());
    return make_error("mmap(" + name_ + "): " + std::strerror(err));
  }
  base_ = base;
  return {};
}

ShmGroup::~ShmGroup() {
  if (base_) munmap(base_, mapped_bytes_);
}

ShmGroup::Flag* ShmGroup::arrive() const {
  return reinterpret_cast<Flag*>(static_cast<char*>(base_) + kPage);
}

ShmGroup::Flag* ShmGroup::reduced() const { return arrive() + size_; }

char* ShmGroup::buffer(int rank, uint64_t seq) const {
  size_t flags_bytes = round_up(2 * size_t(size_) * sizeof(Flag), kPage);
  return static_cast<char*>(base_) + kPage + flags_bytes +
         (size_t(rank) * 2 + size_t(seq & 1)) * options_.buffer_bytes;
}

Expected<void> ShmGroup::wait_flag(Flag* flags, int peer, uint64_t target, const char* what) {
  auto& flag = flags[peer].value;
  if (flag.load(std::memory_order_acquire) >= target) return {};
  for (int spin = 0; spin < options_.spins_before_yield; ++spin) {
    _mm_pause();
    if (flag.load(std::memory_order_acquire) >= target) return {};
  }
  // Slow path: the peer is late (or shares our core). Yield, and give up
  // after the timeout naming the peer.
  note_waiting_on(world_ranks_[size_t(peer)]);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options_.timeout_s));
  for (uint64_t spin = 0;; ++spin) {
    if (flag.load(std::memory_order_acquire) >= target) break;
    sched_yield();
    if ((spin & 63) == 63 && std::chrono::steady_clock::now() > deadline) {
      return make_error("shm " + std::string(what) + ": rank " +
                        std::to_string(world_ranks_[size_t(peer)]) + " (" + host_ +
                        ") did not arrive within " + std::to_string(int(options_.timeout_s)) +
                        " s (call " + std::to_string(target) + "); it died or is stalled");
    }
  }
  note_step_done();
  return {};
}

Expected<void> ShmGroup::peers_done_before(uint64_t seq) {
  if (seq < 2) return {};
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || known_arrive_[size_t(p)] >= seq - 1) continue;
    if (auto ok = wait_flag(arrive(), p, seq - 1, "buffer reuse"); !ok) return ok;
    known_arrive_[size_t(p)] = seq - 1;
  }
  return {};
}

Expected<void> ShmGroup::chunk_reduce(char* data, size_t count, DType dtype, int root) {
  const size_t es = dtype_size(dtype);
  const size_t bytes = count * es;
  const uint64_t seq = ++seq_;
  if (auto ok = peers_done_before(seq); !ok) return ok;
  char* mine = buffer(rank_, seq);
  const bool small = bytes <= options_.small_bytes;
  Block slice = aligned_slice(count, size_, rank_);
  if (small) {
    std::memcpy(mine, data, bytes);
  } else {
    // Peers read only their own slices of my buffer; mine stays in `data`.
    std::memcpy(mine, data, slice.begin * es);
    std::memcpy(mine + slice.end * es, data + slice.end * es, (count - slice.end) * es);
  }
  arrive()[rank_].value.store(seq, std::memory_order_release);

  const void* sources[64];
  std::vector<const void*> many;
  const void** srcs = sources;
  if (size_ > 64) {
    many.resize(size_t(size_));
    srcs = many.data();
  }
  if (small && root >= 0 && rank_ != root) return {};
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    if (auto ok = wait_flag(arrive(), p, seq, "allreduce"); !ok) return ok;
    known_arrive_[size_t(p)] = seq;
  }
  if (small) {
    for (int p = 0; p < size_; ++p) srcs[p] = buffer(p, seq);
    reduce_sum_n(dtype, data, srcs, size_, count);
    return {};
  }
  // My slice is reduced straight into `data` (my own part read from there,
  // still in cache), then published in my buffer for the peers; only the
  // peers' slices are copied back. Less memory traffic than reducing in the
  // segment and copying every slice out.
  for (int p = 0; p < size_; ++p) srcs[p] = (p == rank_ ? data : buffer(p, seq)) + slice.begin * es;
  reduce_sum_n(dtype, data + slice.begin * es, srcs, size_, slice.size());
  std::memcpy(mine + slice.begin * es, data + slice.begin * es, slice.size() * es);
  reduced()[rank_].value.store(seq, std::memory_order_release);
  if (root >= 0 && rank_ != root) return {};
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Block theirs = aligned_slice(count, size_, p);
    if (auto ok = wait_flag(reduced(), p, seq, "allreduce"); !ok) return ok;
    std::memcpy(data + theirs.begin * es, buffer(p, seq) + theirs.begin * es, theirs.size() * es);
  }
  return {};
}

Expected<void> ShmGroup::chunk_broadcast(char* data, size_t bytes, int root) {
  const uint64_t seq = ++seq_;
  if (rank_ == root) {
    if (auto ok = peers_done_before(seq); !ok) return ok;
    std::memcpy(buffer(rank_, seq), data, bytes);
    arrive()[rank_].value.store(seq, std::memory_order_release);
    return {};
  }
  if (auto ok = wait_flag(arrive(), root, seq, "broadcast"); !ok) return ok;
  known_arrive_[size_t(root)] = seq;
  std::memcpy(data, buffer(root, seq), bytes);
  arrive()[rank_].value.store(seq, std::memory_order_release);
  return {};
}

Expected<void> ShmGroup::allreduce(void* data, size_t count, DType dtype) {
  return reduce(data, count, dtype, -1);
}

Expected<void> ShmGroup::reduce(void* data, size_t count, DType dtype, int root) {
  if (size_ == 1) return {};
  const size_t chunk = options_.buffer_bytes / dtype_size(dtype);
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < count; done += chunk) {
    size_t n = std::min(chunk, count - done);
    if (auto ok = chunk_reduce(p + done * dtype_size(dtype), n, dtype, root); !ok) return ok;
  }
  return {};
}

Expected<void> ShmGroup::broadcast(void* data, size_t bytes, int root) {
  if (size_ == 1) return {};
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += options_.buffer_bytes) {
    size_t n = std::min(options_.buffer_bytes, bytes - done);
    if (auto ok = chunk_broadcast(p + done, n, root); !ok) return ok;
  }
  return {};
}

}  // namespace xft::engine::comm
