// Machine roofline and kernel efficiency, measured in one run:
//   1. memory read bandwidth (STREAM-like sum over >= 1 GiB, all threads, best of N)
//   2. bf16 peak (register-only vdpbf16ps) and fp32 FMA peak, per core x cores
//   3. each decode GEMV (bf16, int8, f16, f32) on Qwen2.5-0.5B/1.5B shapes:
//      GB/s of weight streamed and % of the measured bandwidth (matrices are
//      rotated over enough copies to overflow the last-level cache)
//   4. oneDNN bf16 prefill matmul at m=512: GFLOP/s and % of the bf16 peak
// Usage: bench_roofline [--threads N] [--mem-gib G] [--repeats R] [--quick]
#include <immintrin.h>

#include <algorithm>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"

using namespace xft::engine;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
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
Timing timed(ThreadPool& pool, F&& body) {
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

struct Options {
  int threads = 0;
  double mem_gib = 1.0;
  int repeats = 5;
  bool quick = false;
};

// ---- memory bandwidth ----

__attribute__((target("avx512f"))) float sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) float sum_avx2(const float* p, size_t n) {
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

struct Rate {
  double wall = 0;  // units per second of wall time
  double excl = 0;  // units per second of CPU time per thread
  double share = 0;
};

Rate rate_of(double work, const Timing& t) {
  return Rate{work / t.wall, work / t.cpu_per_thread, t.share()};
}

Rate best_rate(const Rate& a, const Rate& b) { return a.wall >= b.wall ? a : b; }

Rate measure_read_bandwidth(ThreadPool& pool, const Options& opt) {
  const size_t per_thread = static_cast<size_t>(opt.mem_gib * (1ull << 30)) / pool.size() / 256 * 256;
  std::vector<AlignedBuffer> buffers(pool.size());
  // First touch by the owning thread: pages land on that thread's NUMA node.
  pool.run([&](int tid, int) {
    buffers[tid].resize(per_thread);
    float* p = buffers[tid].as<float>();
    for (size_t i = 0; i < per_thread / 4; ++i) p[i] = 1.0f;
  });
  std::vector<float> sink(pool.size());
  const double gigabytes = static_cast<double>(per_thread) * pool.size() / 1e9;
  Rate best;
  for (int rep = 0; rep < opt.repeats; ++rep) {
    const Timing t = timed(pool, [&] {
      pool.run([&](int tid, int) {
        const float* p = buffers[tid].as<float>();
        sink[tid] = use_avx512() ? sum_avx512(p, per_thread / 4) : sum_avx2(p, per_thread / 4);
      });
    });
    best = best_rate(best, rate_of(gigabytes, t));
  }
  if (sink[0] < 1.0f) std::printf(" ");  // keeps the sums alive
  return best;
}

// ---- compute peaks (register-only) ----

// Twelve independent accumulator chains hide the instruction latency; the
// values stay in registers (named variables, not an array the compiler may
// keep in memory).
#define XFT_TWELVE(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)

__attribute__((target("avx512f,avx512bf16"))) double bf16_flops(long iterations) {
#define XFT_DECL(i) __m512 acc##i = _mm512_set1_ps(static_cast<float>(i));  // distinct: no CSE
#define XFT_STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
#define XFT_SUM(i) s = _mm512_add_ps(s, acc##i);
  XFT_TWELVE(XFT_DECL)
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // 2^-24: sums stay finite
  for (long i = 0; i < iterations; ++i) {
    XFT_TWELVE(XFT_STEP)
  }
  __m512 s = _mm512_setzero_ps();
  XFT_TWELVE(XFT_SUM)
  volatile float keep = _mm512_reduce_add_ps(s);
  (void)keep;
  return 12.0 * 64.0 * iterations;  // 32 pairs: 32 mul + 32 add
#undef XFT_DECL
#undef XFT_STEP
#undef XFT_SUM
}

__attribute__((target("avx512f,fma"))) double fp32_flops_avx512(long iterations) {
#define XFT_DECL(i) __m512 acc##i = _mm512_set1_ps(static_cast<float>(i));
#define XFT_STEP(i) acc##i = _mm512_fmadd_ps(acc##i, a, b);
#define XFT_SUM(i) s = _mm512_add_ps(s, acc##i);
  XFT_TWELVE(XFT_DECL)
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    XFT_TWELVE(XFT_STEP)
  }
  __m512 s = _mm512_setzero_ps();
  XFT_TWELVE(XFT_SUM)
  volatile float keep = _mm512_reduce_add_ps(s);
  (void)keep;
  return 12.0 * 32.0 * iterations;
#undef XFT_DECL
#undef XFT_STEP
#undef XFT_SUM
}

__attribute__((target("avx2,fma"))) double fp32_flops_avx2(long iterations) {
#define XFT_DECL(i) __m256 acc##i = _mm256_set1_ps(static_cast<float>(i));
#define XFT_STEP(i) acc##i = _mm256_fmadd_ps(acc##i, a, b);
#define XFT_SUM(i) s = _mm256_add_ps(s, acc##i);
  XFT_TWELVE(XFT_DECL)
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    XFT_TWELVE(XFT_STEP)
  }
  __m256 s = _mm256_setzero_ps();
  XFT_TWELVE(XFT_SUM)
  float out[8];
  _mm256_storeu_ps(out, s);
  volatile float keep = out[0];
  (void)keep;
  return 12.0 * 16.0 * iterations;
#undef XFT_DECL
#undef XFT_STEP
#undef XFT_SUM
}

// GFLOP/s of all threads together, best of repeats.
template <class F>
Rate measure_peak(ThreadPool& pool, const Options& opt, F kernel) {
  const long iterations = opt.quick ? 2'000'000 : 20'000'000;
  Rate best;
  for (int rep = 0; rep < std::max(2, opt.repeats / 2); ++rep) {
    std::vector<double> flops(pool.size());
    const Timing t = timed(pool, [&] { pool.run([&](int tid, int) { flops[tid] = kernel(iterations); }); });
    double total = 0;
    for (double f : flops) total += f;
    best = best_rate(best, rate_of(total / 1e9, t));
  }
  return best;
}

// ---- kernels on model shapes ----

struct Shape {
  const char* name;
  int out, in;
};

std::vector<float> random_weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> w(n);
  for (auto& v : w) v = dist(rng);
  return w;
}

// Timing of `calls` calls of call(i % copies), after one warm-up pass.
template <class F>
Timing time_calls(ThreadPool& pool, int copies, int calls, F call) {
  for (int i = 0; i < std::min(copies, calls); ++i) call(i);
  Timing t = timed(pool, [&] {
    for (int i = 0; i < calls; ++i) call(i % copies);
  });
  t.wall /= calls;
  t.cpu_per_thread /= calls;
  return t;
}

void bench_gemv(ThreadPool& pool, const Options& opt, const Rate& bandwidth, const std::vector<Shape>& shapes) {
  std::printf("\n== decode GEMV (m=1), weight streamed from DRAM ==\n");
  std::printf("%-30s %-6s %-17s %7s %9s %7s %6s %7s %6s %6s\n", "shape (out x in)", "format", "kernel", "MB",
              "us/call", "GB/s", "% bw", "excl.", "% bw", "share");
  for (const Shape& shape : shapes) {
    const auto w = random_weights(static_cast<size_t>(shape.out) * shape.in, 1);
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::f16, WeightFormat::f32}) {
      std::vector<Linear> copies;
      const Linear first(w.data(), shape.out, shape.in, format);
      const size_t bytes = first.weight_bytes();
      // Enough copies to overflow any last-level cache (>= 512 MiB in total).
      const int limited = std::max<int>(2, static_cast<int>(((512ull << 20) + bytes - 1) / bytes));
      copies.reserve(limited);
      for (int i = 0; i < limited; ++i) copies.emplace_back(w.data(), shape.out, shape.in, format);
      std::vector<float> x(shape.in, 0.5f), y(shape.out);
      const int calls = std::max(limited * 2, opt.quick ? 20 : 60);
      const Timing t = time_calls(pool, limited, calls, [&](int i) { copies[i].forward(x.data(), 1, y.data(), pool); });
      const Rate r = rate_of(static_cast<double>(bytes) / 1e9, t);
      char label[64];
      std::snprintf(label, sizeof(label), "%s %dx%d", shape.name, shape.out, shape.in);
      std::printf("%-30s %-6s %-17s %7.1f %9.1f %7.1f %5.1f%% %7.1f %5.1f%% %5.0f%%\n", label,
                  weight_format_name(format), first.kernel_name().c_str(), bytes / 1e6, t.wall * 1e6, r.wall,
                  100.0 * r.wall / bandwidth.wall, r.excl, 100.0 * r.excl / bandwidth.excl, 100.0 * r.share);
    }
  }
}

void bench_matmul(ThreadPool& pool, const Options& opt, const Rate& bf16_peak, const std::vector<Shape>& shapes) {
  const int m = 512;
  std::printf("\n== prefill matmul (oneDNN, m=%d) ==\n", m);
  std::printf("%-30s %-6s %9s %9s %7s %9s %7s %6s\n", "shape (out x in)", "format", "ms/call", "GFLOP/s", "% peak",
              "excl.", "% peak", "share");
  for (const Shape& shape : shapes) {
    if (static_cast<size_t>(shape.out) * shape.in > 50'000'000) continue;  // the head is decode-only
    const auto w = random_weights(static_cast<size_t>(shape.out) * shape.in, 2);
    const auto x = random_weights(static_cast<size_t>(m) * shape.in, 3);
    std::vector<float> y(static_cast<size_t>(m) * shape.out);
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8}) {
      const Linear linear(w.data(), shape.out, shape.in, format);
      const Timing t = time_calls(pool, 1, opt.quick ? 3 : 7, [&](int) { linear.forward(x.data(), m, y.data(), pool); });
      const Rate r = rate_of(2.0 * m * shape.in * static_cast<double>(shape.out) / 1e9, t);
      char label[64];
      std::snprintf(label, sizeof(label), "%s %dx%d", shape.name, shape.out, shape.in);
      std::printf("%-30s %-6s %9.2f %9.1f %6.1f%% %9.1f %6.1f%% %5.0f%%\n", label, weight_format_name(format),
                  t.wall * 1e3, r.wall, 100.0 * r.wall / bf16_peak.wall, r.excl, 100.0 * r.excl / bf16_peak.excl,
                  100.0 * r.share);
    }
  }
}

bool parse_args(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_roofline: %s needs a value\n", name);
        std::exit(1);
      }
      return argv[++i];
    };
    if (arg == "--threads") opt->threads = std::atoi(next("--threads"));
    else if (arg == "--mem-gib") opt->mem_gib = std::atof(next("--mem-gib"));
    else if (arg == "--repeats") opt->repeats = std::max(1, std::atoi(next("--repeats")));
    else if (arg == "--quick") opt->quick = true;
    else {
      std::fprintf(stderr, "usage: bench_roofline [--threads N] [--mem-gib G] [--repeats R] [--quick]\n");
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_args(argc, argv, &opt)) return 1;
  if (opt.threads <= 0) opt.threads = static_cast<int>(std::thread::hardware_concurrency());
  if (opt.quick) {
    opt.mem_gib = std::min(opt.mem_gib, 1.0);
    opt.repeats = std::min(opt.repeats, 3);
  }
  std::vector<int> cpus;
  for (int i = 0; i < opt.threads; ++i) cpus.push_back(i % static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(opt.threads, cpus);

  std::printf("cpu features: %s\n", describe(cpu_features()).c_str());
  std::printf("kernel family: %s, threads: %d\n", isa_name(active_isa()), pool.size());

  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) std::printf("load average: %.2f (cores: %u)\n", load[0], std::thread::hardware_concurrency());
  std::printf("columns: wall-clock figures; \"excl.\" = work / CPU time per thread (the rate with the cores to\n"
              "ourselves); share = CPU time / (wall x threads), below 100%% when the machine is shared\n");

  const Rate bandwidth = measure_read_bandwidth(pool, opt);
  std::printf("\n== machine ==\n");
  std::printf("memory read bandwidth (%.1f GiB, best of %d): %.1f GB/s wall, %.1f GB/s excl. (%.1f per thread), share %.0f%%\n",
              opt.mem_gib, opt.repeats, bandwidth.wall, bandwidth.excl, bandwidth.excl / pool.size(), 100 * bandwidth.share);
  Rate bf16_peak;
  if (use_avx512_bf16()) {
    bf16_peak = measure_peak(pool, opt, bf16_flops);
    std::printf("bf16 peak (vdpbf16ps):  %.1f GFLOP/s wall; excl. %.1f GFLOP/s = %.1f per core x %d, share %.0f%%\n",
                bf16_peak.wall, bf16_peak.excl, bf16_peak.excl / pool.size(), pool.size(), 100 * bf16_peak.share);
  }
  const Rate fp32_peak =
      use_avx512() ? measure_peak(pool, opt, fp32_flops_avx512) : measure_peak(pool, opt, fp32_flops_avx2);
  std::printf("fp32 peak (FMA):        %.1f GFLOP/s wall; excl. %.1f GFLOP/s = %.1f per core x %d, share %.0f%%\n",
              fp32_peak.wall, fp32_peak.excl, fp32_peak.excl / pool.size(), pool.size(), 100 * fp32_peak.share);
  if (bf16_peak.wall == 0) bf16_peak = fp32_peak;  // no vdpbf16ps: oneDNN bf16 runs on fp32 FMAs

  const std::vector<Shape> shapes = {
      {"0.5B mlp.down", 896, 4864},
      {"0.5B mlp.gate_up", 9728, 896},
      {"1.5B mlp.down", 1536, 8960},
      {"1.5B mlp.up", 8960, 1536},
      {"0.5B lm_head", 151936, 896},
  };
  bench_gemv(pool, opt, bandwidth, shapes);
  bench_matmul(pool, opt, bf16_peak, shapes);
  std::printf("\ntargets: decode GEMV >= 85%% of bandwidth (bf16, int8); prefill >= 50%% of bf16 peak at m=512\n");
  return 0;
}
