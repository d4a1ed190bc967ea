// What the benchmarks share: clocks, the wall and CPU time of a region of a
// pool, medians, and the memory read pass every "% of bandwidth" figure is
// measured against (bench_roofline's roofline, bench_moe's paired fraction),
// so that both divide by the same measurement.
#pragma once

#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/thread_pool.h"

namespace xft::bench {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Wall time of one region plus the CPU time its pool threads got. On a shared
// (oversubscribed) machine the wall figure is what a user sees; work divided
// by the mean CPU time per thread estimates the rate with the cores to
// ourselves ("excl."), and share = CPU time / (wall x threads) says how far
// apart the two are.
struct Timing {
  double wall = 0;
  double cpu_per_thread = 0;
  double share() const { return wall > 0 ? cpu_per_thread / wall : 0; }
};

template <class F>
Timing timed(engine::ThreadPool& pool, F&& body) {
  std::vector<double> before(pool.size()), after(pool.size());
  pool.run([&](int tid, int) { before[tid] = thread_cpu_seconds(); });
  const double t0 = now_seconds();
  body();
  const double t1 = now_seconds();
  pool.run([&](int tid, int) { after[tid] = thread_cpu_seconds(); });
  double cpu = 0;
  for (int i = 0; i < pool.size(); ++i) cpu += after[i] - before[i];
  return Timing{t1 - t0, cpu / pool.size()};
}

// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

__attribute__((target("avx512f"))) inline float sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

#pragma GCC diagnostic pop

__attribute__((target("avx2"))) inline float sum_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// One STREAM-like read pass over per-thread buffers (first touched by their
// owning thread, so pages land on its NUMA node), all threads at once. Kept
// for a whole run: the engine and expert benchmarks repeat a pass beside
// every decode step, so each step is compared with the bandwidth of the same
// moment.
class ReadProbe {
 public:
  ReadProbe(engine::ThreadPool& pool, double gib) : pool_(pool), buffers_(pool.size()), sink_(pool.size()) {
    per_thread_ = static_cast<size_t>(gib * (1ull << 30)) / pool.size() / 256 * 256;
    pool_.run([&](int tid, int) {
      buffers_[tid].resize(per_thread_);
      float* p = buffers_[tid].as<float>();
      for (size_t i = 0; i < per_thread_ / 4; ++i) p[i] = 1.0f;
    });
  }
  double gigabytes() const { return static_cast<double>(per_thread_) * pool_.size() / 1e9; }
  // Best wall-clock GB/s of all passes so far: the roofline of the run.
  double best_gbps() const { return best_gbps_; }
  Timing pass() {
    const Timing t = timed(pool_, [&] {
      pool_.run([&](int tid, int) {
        const float* p = buffers_[tid].as<float>();
        sink_[tid] = engine::use_avx512() ? sum_avx512(p, per_thread_ / 4) : sum_avx2(p, per_thread_ / 4);
      });
    });
    if (sink_[0] < 1.0f) std::printf(" ");  // keeps the sums alive
    best_gbps_ = std::max(best_gbps_, gigabytes() / t.wall);
    return t;
  }
  // One pass's wall-clock GB/s.
  double pass_gbps() { return gigabytes() / pass().wall; }

 private:
  engine::ThreadPool& pool_;
  std::vector<engine::AlignedBuffer> buffers_;
  std::vector<float> sink_;
  size_t per_thread_ = 0;
  double best_gbps_ = 0;
};

}  // namespace xft::bench
