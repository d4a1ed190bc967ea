// A grow-only, 64-byte aligned, zero-initialized byte buffer: packed weights
// and per-thread scratch (rows padded to cache lines, no tails in kernels).
// A borrowed buffer reads and writes memory that another buffer owns (the
// arena a mixture of experts keeps its experts' weights in) and frees nothing.
// Buffers of 2 MiB and more are 2 MiB aligned and asked for transparent huge
// pages over their whole 2 MiB blocks: a decode step streams every packed
// weight once, and with 4 KiB pages each 4 KiB costs a TLB miss (a
// two-level page walk under a hypervisor). No memory is added: a tail
// shorter than 2 MiB stays on small pages.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <utility>

namespace xft::engine {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { resize(bytes); }
  ~AlignedBuffer() { release(); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_), owned_(other.owned_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(owned_, other.owned_);
    return *this;
  }

  // `bytes` at `data` (64-byte aligned), owned by a buffer that outlives this one.
  static AlignedBuffer borrowed(unsigned char* data, size_t bytes) {
    AlignedBuffer view;
    view.data_ = data;
    view.size_ = bytes;
    view.owned_ = false;
    return view;
  }

  // Reallocates (zeroed, old contents dropped) when `bytes` exceeds the size.
  void resize(size_t bytes) {
    if (bytes <= size_) return;
    release();
    const size_t rounded = (bytes + 63) / 64 * 64;
    const bool huge = rounded >= kHugePage;
    void* memory = nullptr;
    if (posix_memalign(&memory, huge ? kHugePage : 64, rounded) != 0) throw std::bad_alloc();
    data_ = static_cast<unsigned char*>(memory);
    // Advice only: the kernel may refuse (THP off); the buffer works either way.
    if (huge) madvise(data_, rounded / kHugePage * kHugePage, MADV_HUGEPAGE);
    std::memset(data_, 0, rounded);  // first touch: faults the (huge) pages in
    size_ = rounded;
  }

  template <class T>
  T* as() { return reinterpret_cast<T*>(data_); }
  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(data_); }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kHugePage = size_t(2) << 20;
  void release() {
    if (owned_) std::free(data_);
    data_ = nullptr;
    size_ = 0;
    owned_ = true;
  }
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = true;
};

}  // namespace xft::engine
