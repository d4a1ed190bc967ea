// A grow-only, 64-byte aligned, zero-initialized byte buffer: packed weights
// and per-thread scratch (rows padded to cache lines, no tails in kernels).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace xft::engine {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { resize(bytes); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }

  // Reallocates (zeroed, old contents dropped) when `bytes` exceeds the size.
  void resize(size_t bytes) {
    if (bytes <= size_) return;
    std::free(data_);
    const size_t rounded = (bytes + 63) / 64 * 64;
    data_ = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
    size_ = rounded;
  }

  template <class T>
  T* as() { return reinterpret_cast<T*>(data_); }
  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(data_); }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace xft::engine
