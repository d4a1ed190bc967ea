// Software prefetch ahead in a decode kernel's weight stream. A task's rows
// are one contiguous byte range, but the hardware stream prefetchers stop at
// every 4 KiB page (a bf16 row of 2048 inputs is exactly one page, an fp8 row
// half of one), so at the ~30 GB/s one thread must pull each page start
// waits a full memory latency. A prefetch a fixed distance ahead of the
// loads keeps the stream going across pages, rows and into the thread's next
// task. Prefetches never fault and never change a result.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdlib>

namespace xft::engine {

// TEMPORARY (measurement): distance in bytes from XFT_PREFETCH_AHEAD, 0 = off.
inline std::ptrdiff_t g_prefetch_ahead = [] {
  const char* v = std::getenv("XFT_PREFETCH_AHEAD");
  return v ? static_cast<std::ptrdiff_t>(std::atol(v)) : std::ptrdiff_t{512};
}();
inline std::ptrdiff_t stream_prefetch_ahead() { return g_prefetch_ahead; }
inline bool g_fp8_generic = false;  // TEMPORARY (measurement)
inline int g_streams = [] { const char* v = std::getenv("XFT_STREAMS"); return v ? std::atoi(v) : 1; }();

// The line `ahead` bytes past p, unless that is at or past limit (the end of
// the weight: bytes after it belong to something else).
inline void prefetch_stream(const void* p, std::ptrdiff_t ahead, const void* limit) {
  const char* target = static_cast<const char*>(p) + ahead;
  if (target < static_cast<const char*>(limit)) _mm_prefetch(target, _MM_HINT_T0);
}

// TEMPORARY (measurement): "g" generic fp8 loop, "t" two row streams, then the distance.
inline void apply_kernel_variant(const char* v) {
  g_fp8_generic = false;
  g_streams = 1;
  for (; *v == 'g' || *v == 't' || *v == 'f'; ++v) {
    if (*v == 'g') g_fp8_generic = true;
    else g_streams = *v == 't' ? 2 : 4;
  }
  g_prefetch_ahead = std::atol(v);
}

}  // namespace xft::engine
