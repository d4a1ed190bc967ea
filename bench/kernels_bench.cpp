// Timings of the engine's small kernels and of the thread pool itself, on
// Qwen2.5-0.5B/1.5B shapes: the costs a decode step pays besides the GEMVs;
// and the projections of Qwen2.5-0.5B for several batch sizes through both
// prefill paths: the batch-invariant kernels (forward_gemv, what the server
// runs) and oneDNN (forward_matmul), with their ratio.
// Usage: bench_kernels [--threads N] [--only pool|ops|attention|linear] [--dtype F]
//                      [--shape qkv|o|gate_up|down] [--m 1,17,512]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/kernels/amx_linear.h"
#include "engine/kernels/attention.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/thread_pool.h"

using namespace xft::engine;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median microseconds of `calls` calls.
template <class F>
double median_us(int calls, F&& call) {
  std::vector<double> times(calls);
  for (int i = 0; i < calls; ++i) {
    const double t0 = now_seconds();
    call();
    times[i] = (now_seconds() - t0) * 1e6;
  }
  std::sort(times.begin(), times.end());
  return times[calls / 2];
}

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct AttentionShape {
  const char* name;
  int heads, kv_heads, head_dim;
};

void bench_attention(ThreadPool& pool) {
  std::printf("\n== attention (bf16 KV cache) ==\n");
  std::printf("%-10s %8s %6s %10s %10s %12s\n", "model", "context", "rows", "us/call", "KV MB", "KV GB/s");
  for (const AttentionShape& s : {AttentionShape{"0.5B", 14, 2, 64}, AttentionShape{"1.5B", 12, 2, 128}, AttentionShape{"30B-A3B", 32, 4, 128}}) {
    for (int context : {512, 2048, 8192}) {
      KvCache cache(s.kv_heads, s.head_dim, context, KvFormat::bf16);
      const int kv_width = s.kv_heads * s.head_dim;
      const auto kv = random_vector(static_cast<size_t>(context) * kv_width, 1);
      std::vector<int> positions(context);
      for (int i = 0; i < context; ++i) positions[i] = i;
      cache.store(kv.data(), kv.data(), context, kv_width, positions.data());
      for (int rows : {1, 128}) {
        const int q_width = s.heads * s.head_dim;
        const auto q = random_vector(static_cast<size_t>(rows) * q_width, 2);
        std::vector<float> out(static_cast<size_t>(rows) * q_width);
        const int* pos = positions.data() + context - rows;
        const double us = median_us(rows == 1 ? 50 : 5, [&] {
          attention(q.data(), rows, q_width, pos, cache, s.heads, out.data(), q_width, pool);
        });
        const double kv_mb = 2.0 * context * kv_width * 2 / 1e6;
        std::printf("%-10s %8d %6d %10.1f %10.2f %12.1f\n", s.name, context, rows, us, kv_mb,
                    rows == 1 ? kv_mb / 1e3 / (us / 1e6) : 0.0);
      }
    }
  }
}

void bench_ops(ThreadPool& pool) {
  std::printf("\n== element-wise ops (one decode row) ==\n");
  const int hidden = 1536, inter = 8960, heads = 12, kv_heads = 2, head_dim = 128;
  auto x = random_vector(hidden, 3);
  const auto w = random_vector(hidden, 4);
  std::vector<float> y(hidden);
  std::printf("rmsnorm %d:            %8.2f us\n", hidden,
              median_us(1000, [&] { rmsnorm(x.data(), w.data(), y.data(), hidden, 1e-6f); }));
  RopeTable rope(head_dim, 4096, 1e6);
  auto qk = random_vector((heads + kv_heads) * head_dim, 5);
  const int pos = 1234;
  std::printf("rope q+k (%d heads):   %8.2f us\n", heads + kv_heads,
              median_us(1000, [&] { apply_rope(qk.data(), 1, 0, heads + kv_heads, head_dim, &pos, rope); }));
  auto gate_up = random_vector(2 * inter, 6);
  std::vector<float> act(inter);
  std::printf("silu*up %d:           %8.2f us\n", inter,
              median_us(1000, [&] { silu_mul_fused(gate_up.data(), 1, inter, act.data()); }));
  auto logits = random_vector(151936, 7);
  int idx[40];
  float val[40];
  std::printf("argmax 151936:         %8.2f us\n", median_us(200, [&] { (void)argmax(logits.data(), 151936); }));
  std::printf("top_k(40) 151936:      %8.2f us\n", median_us(200, [&] { top_k(logits.data(), 151936, 40, idx, val); }));
  std::vector<uint16_t> bf(hidden);
  std::printf("f32->bf16 %d:          %8.2f us\n", hidden, median_us(1000, [&] { f32_to_bf16(x.data(), bf.data(), hidden); }));
  (void)pool;
}

void bench_pool(ThreadPool& pool) {
  std::printf("\n== thread pool ==\n");
  std::printf("empty region, workers spinning: %6.2f us\n", median_us(10000, [&] { pool.run([](int, int) {}); }));
  std::vector<double> wake(50);
  for (auto& us : wake) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // workers go to sleep (spin 200 us)
    const double t0 = now_seconds();
    pool.run([](int, int) {});
    us = (now_seconds() - t0) * 1e6;
  }
  std::sort(wake.begin(), wake.end());
  std::printf("empty region, workers asleep (futex wake): %6.2f us\n", wake[wake.size() / 2]);
}

struct LinearShape {
  const char* name;
  int in, out;
};

// GFLOP/s of y[m][out] = x[m][in] · Wᵀ done in `us` microseconds.
double gflops(const LinearShape& s, int m, double us) { return 2.0 * m * s.in * s.out / (us * 1e3); }

// Fastest of `calls` calls: on a shared machine the minimum is the figure
// least disturbed by other work.
template <class F>
double best_us(int calls, F&& call) {
  double best = 1e300;
  for (int i = 0; i < calls; ++i) {
    const double t0 = now_seconds();
    call();
    best = std::min(best, (now_seconds() - t0) * 1e6);
  }
  return best;
}

// shape_filter: a projection name or empty for all; batch sizes: m_list or the defaults.
void bench_linear(ThreadPool& pool, WeightFormat format, const std::string& shape_filter, std::vector<int> m_list) {
  std::printf("\n== projections of Qwen2.5-0.5B, %s weights: batch-invariant kernels vs oneDNN ==\n",
              weight_format_name(format));
  std::printf("(fastest of several calls; own: forward_gemv, oneDNN: forward_matmul)\n");
  std::printf("%-8s %5s %5s %5s %11s %8s %11s %8s %10s\n", "proj", "in", "out", "m", "own us", "GFLOP/s",
              "oneDNN us", "GFLOP/s", "own/oneDNN");
  const LinearShape shapes[] = {{"qkv", 896, 1152}, {"o", 896, 896}, {"gate_up", 896, 9728}, {"down", 4864, 896}};
  if (m_list.empty()) m_list = {1, 4, 8, 17, 64, 512};
  for (const LinearShape& s : shapes) {
    if (!shape_filter.empty() && shape_filter != s.name) continue;
    const auto w = random_vector(static_cast<size_t>(s.out) * s.in, 11);
    const Linear linear(w.data(), s.out, s.in, format);
    for (int m : m_list) {
      const auto x = random_vector(static_cast<size_t>(m) * s.in, 12);
      std::vector<float> y(static_cast<size_t>(m) * s.out);
      const int calls = std::max(5, std::min(200, 20000 / m));
      const double own = best_us(calls, [&] { linear.forward_gemv(x.data(), m, y.data(), pool); });
      const double dnnl = best_us(calls, [&] { linear.forward_matmul(x.data(), m, y.data(), pool); });
      std::printf("%-8s %5d %5d %5d %11.1f %8.1f %11.1f %8.1f %10.2f\n", s.name, s.in, s.out, m, own,
                  gflops(s, m, own), dnnl, gflops(s, m, dnnl), dnnl / own);
    }
  }
  std::printf("(own/oneDNN > 1: the batch-invariant kernels are faster)\n");
}

// "1,17,512" -> {1, 17, 512}; anything that is not a positive count is dropped.
std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> counts;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const int n = std::atoi(text.substr(at, comma - at).c_str());
    if (n > 0) counts.push_back(n);
    at = comma + 1;
  }
  return counts;
}

}  // namespace

// The AMX tile units' peak on one core (register-only TDPBF16PS / TDPBSSD,
// best of 3), printed beside the vector kernel family; or why there is none.
void print_amx_peak() {
  if (!amx_support().bf16 && !amx_support().int8) {
    std::printf("%s\n", amx_status_line().c_str());
    return;
  }
  auto best_rate = [](double (*loop)(long)) {
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      const double work = loop(2'000'000);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, work / seconds / 1e9);
    }
    return best;
  };
  std::printf("%s; peak per core:", amx_status_line().c_str());
  if (amx_support().bf16) std::printf(" bf16 %.1f GFLOP/s (tdpbf16ps)", best_rate(amx_bf16_peak_flops));
  if (amx_support().int8) std::printf(" int8 %.1f GOP/s (tdpbssd)", best_rate(amx_int8_peak_ops));
  std::printf("\n");
}

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  std::string only, shape;
  std::vector<int> m_list;
  WeightFormat format = WeightFormat::bf16;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--shape" && i + 1 < argc) {
      shape = argv[++i];
    } else if (arg == "--m" && i + 1 < argc) {
      m_list = parse_counts(argv[++i]);
    } else if (arg == "--dtype" && i + 1 < argc && parse_weight_format(argv[i + 1], &format)) {
      ++i;
    } else {
      std::fprintf(stderr,
                   "usage: bench_kernels [--threads N] [--only pool|ops|attention|linear] "
                   "[--dtype f32|bf16|f16|int8|int4] [--shape qkv|o|gate_up|down] [--m 1,17,512]\n");
      return 1;
    }
  }
  std::vector<int> cpus;
  for (int i = 0; i < threads; ++i) cpus.push_back(i % static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(threads, cpus);
  std::printf("kernel family: %s, threads: %d\n", isa_name(active_isa()), pool.size());
  print_amx_peak();
  if (only.empty() || only == "pool") bench_pool(pool);
  if (only.empty() || only == "ops") bench_ops(pool);
  if (only.empty() || only == "attention") bench_attention(pool);
  if (only.empty() || only == "linear") bench_linear(pool, format, shape, m_list);
  return 0;
}
