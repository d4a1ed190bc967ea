// Machine roofline and engine efficiency, measured in one run:
//   1. memory read bandwidth (STREAM-like sum over >= 1 GiB, all threads, best of N)
//   2. register-only peaks, per core x cores: bf16 (vdpbf16ps), fp32 (FMA),
//      int8 (vpdpbusd) and the AMX tiles where present
//   3. the real engine (Model on fake Qwen2.5-0.5B / 1.5B weights, bf16 and
//      int8): prefill of --prompt tokens (G ops/s vs the peak of the
//      instruction its kernel path runs on), then
//      --steps decode steps after it (bytes of weights + KV read per token,
//      + a linear-attention state read and written, vs the measured bandwidth: % of the roofline)
//   4. the decode ratios between the dtypes, their steps alternated round by
//      round (bench_alternating; only this with --alternate-only)
//   5. with --kernels: each decode GEMV and prefill matmul alone on the
//      models' shapes (matrices rotated over copies that overflow the LLC)
// Usage: bench_roofline [--threads N] [--mem-gib G] [--repeats R] [--quick]
//                       [--models a,b] [--dtypes bf16,int8,int4,fp8] [--layers N] [--prompt N] [--steps N] [--kernels]
//                       [--alternate-only] [--no-alternate] [--batch-invariant]
// --batch-invariant runs the engine rows as serve, prompt and chat do by
// default (every projection through the batch-invariant kernels, so a row's
// answer never depends on what shares its step) instead of plain prefill
// (oneDNN where it is faster).
// GCC 12 reports its own _mm512_reduce_add_ps / _mm512_undefined as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.h"
#include "engine/checkpoint/presets.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/amx_linear.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"

using namespace xft::engine;
using namespace xft::bench;

namespace {

struct Options {
  int threads = 0;
  double mem_gib = 1.0;
  int repeats = 5;
  bool quick = false;
  bool kernels = false;
  bool alternate_only = false;
  bool alternate = true;  // --no-alternate: skip it (it holds every dtype's model at once)
  bool batch_invariant = false;  // --batch-invariant: the engine as serve/prompt/chat run it
  int prompt = 512;
  int steps = 32;
  int layers = 0;  // > 0: the presets cut to their first N layers (MoE presets to fit a test machine)
  std::vector<std::string> models = {"qwen2.5-0.5b", "qwen2.5-1.5b"};
  std::vector<std::string> dtypes = {"bf16", "int8", "int4"};
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// ---- memory bandwidth ----

struct Rate {
  double wall = 0;  // units per second of wall time
  double excl = 0;  // units per second of CPU time per thread
  double share = 0;
};

Rate rate_of(double work, const Timing& t) {
  return Rate{work / t.wall, work / t.cpu_per_thread, t.share()};
}

Rate best_rate(const Rate& a, const Rate& b) { return a.wall >= b.wall ? a : b; }

Rate measure_read_bandwidth(ReadProbe& probe, const Options& opt) {
  Rate best;
  for (int rep = 0; rep < opt.repeats; ++rep) best = best_rate(best, rate_of(probe.gigabytes(), probe.pass()));
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

// vpdpbusd: 16 lanes x 4 u8*s8 products, each a multiply and an add.
__attribute__((target("avx512f,avx512vnni"))) double vnni_ops(long iterations) {
#define XFT_DECL(i) __m512i acc##i = _mm512_set1_epi32(i);
#define XFT_STEP(i) acc##i = _mm512_dpbusd_epi32(acc##i, a, b);
#define XFT_SUM(i) s = _mm512_add_epi32(s, acc##i);
  XFT_TWELVE(XFT_DECL)
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  for (long i = 0; i < iterations; ++i) {
    XFT_TWELVE(XFT_STEP)
  }
  __m512i s = _mm512_setzero_si512();
  XFT_TWELVE(XFT_SUM)
  volatile int keep = _mm512_reduce_add_epi32(s);
  (void)keep;
  return 12.0 * 128.0 * iterations;
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
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4, WeightFormat::f16, WeightFormat::f32}) {
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
    for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::int4}) {
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

// ---- the real engine on fake Qwen weights ----

struct EngineResult {
  std::string model, dtype, kernel;
  double load_s = 0;
  double decode_ms = 0;          // median step
  double decode_best_ms = 0;     // fastest step
  double decode_share = 0;       // CPU time / (wall x threads) over the steps
  double bytes_per_token = 0;    // weights + KV read by one decode step (mean over the steps)
  double paired_fraction = 0;    // median over steps of (step GB/s) / (read pass GB/s just after it)
  double paired_bandwidth = 0;   // median GB/s of those read passes
  double prefill_ms = 0;         // best run
  double prefill_share = 0;
  double prefill_flop = 0;
};

// Linear-layer parameters one token multiplies through (all layers, without
// the LM head; of a mixture of experts the router, its top-k experts and the
// shared expert: active FLOPs only) and attention FLOPs of a causal prefill of n tokens.
double layer_params(const ModelConfig& c) {
  const double q = static_cast<double>(c.heads) * c.head_dim, kv = static_cast<double>(c.kv_heads) * c.head_dim;
  const double attention = c.hidden * (q + 2 * kv) + q * c.hidden;
  const MoeConfig& moe = c.moe;
  const double sparse = static_cast<double>(c.hidden) * (moe.experts + 3.0 * moe.experts_per_token * moe.expert_intermediate +
                                                         3.0 * moe.shared_expert_intermediate);
  double params = 0;
  for (int l = 0; l < c.layers; ++l) params += attention + (is_moe_layer(c, l) ? sparse : 3.0 * c.hidden * c.intermediate);
  return params;
}

xft::Expected<ModelConfig> preset_config(const std::string& preset, const Options& opt) {
  auto config = fake_model_config(preset);
  if (!config || opt.layers <= 0) return config;
  return with_layers(*config, opt.layers);
}

double prefill_flop(const ModelConfig& c, int n) {
  const double linear = 2.0 * n * layer_params(c) + 2.0 * c.hidden * static_cast<double>(c.vocab);  // head: last row
  const double attention = 4.0 * c.layers * c.heads * c.head_dim * (static_cast<double>(n) * (n + 1) / 2);
  return linear + attention;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

bool bench_engine_one(const std::string& preset, const std::string& dtype_name, const Options& opt,
                      const std::vector<int>& cpus, ReadProbe& probe, EngineResult* out) {
  auto config = preset_config(preset, opt);
  if (!config) {
    std::fprintf(stderr, "bench_roofline: %s\n", config.error().message.c_str());
    return false;
  }
  WeightFormat format;
  if (!parse_weight_format(dtype_name == "fp32" ? "f32" : dtype_name == "fp16" ? "f16" : dtype_name, &format)) {
    std::fprintf(stderr, "bench_roofline: unknown dtype %s (bf16, int8, int4, fp8, fp16, fp32)\n", dtype_name.c_str());
    return false;
  }
  const auto weights = make_fake_weights(*config, 0);
  ModelOptions options;
  options.dtype = format;
  options.kv = KvFormat::bf16;
  options.cpus = cpus;
  options.max_context = opt.prompt + opt.steps + 1;
  options.batch_invariant = opt.batch_invariant;
  const double t0 = now_seconds();
  auto loaded = Model::load(*weights, options);
  if (!loaded) {
    std::fprintf(stderr, "bench_roofline: %s: %s\n", preset.c_str(), loaded.error().message.c_str());
    return false;
  }
  Model& model = **loaded;
  const ModelConfig& c = model.config();
  out->model = preset;
  out->dtype = dtype_name;
  out->kernel = model.kernel_name();
  out->load_s = now_seconds() - t0;

  std::vector<int32_t> prompt(opt.prompt);
  for (int i = 0; i < opt.prompt; ++i) prompt[i] = static_cast<int32_t>((1000003ll * (i + 1)) % c.vocab);

  // Prefill: the first run also creates oneDNN's primitives; best of the runs.
  std::unique_ptr<Sequence> seq;
  int32_t next = 0;
  const int prefill_runs = opt.quick ? 1 : 2;
  out->prefill_ms = 1e30;
  for (int run = 0; run < prefill_runs; ++run) {
    seq = model.new_sequence(opt.prompt + opt.steps + 1);
    const Chunk chunk{seq.get(), prompt};
    xft::Expected<std::span<float>> logits = std::span<float>();
    const Timing t = timed(model.pool(), [&] { logits = model.forward({&chunk, 1}); });
    if (!logits) {
      std::fprintf(stderr, "bench_roofline: prefill: %s\n", logits.error().message.c_str());
      return false;
    }
    next = argmax(*logits);
    if (t.wall * 1e3 < out->prefill_ms) {
      out->prefill_ms = t.wall * 1e3;
      out->prefill_share = t.share();
    }
  }
  out->prefill_flop = prefill_flop(c, opt.prompt);

  // Bytes one step moves: every packed weight but the embedding table (one
  // row of it), the KV cache of the positions attended (mean over steps) in
  // the attention layers, and a linear-attention (Qwen3.5) sequence's state,
  // read and written back whole every step (the weights streamed since the
  // last step have pushed it out of the caches).
  int attention_layers = 0;
  for (int layer = 0; layer < c.layers; ++layer) attention_layers += !xft::engine::is_linear_attention_layer(c, layer);
  const double kv_per_position = 2.0 * attention_layers * c.kv_heads * c.head_dim * sizeof(uint16_t);
  const double mean_positions = opt.prompt + (opt.steps + 1) / 2.0;
  const double state_traffic = 2.0 * static_cast<double>(seq->linear_state_bytes());
  out->bytes_per_token =
      static_cast<double>(model.decode_weight_bytes()) + kv_per_position * mean_positions + state_traffic;

  // Decode after the prompt, greedy; median step time. A read pass follows
  // every step: on a shared machine the bandwidth left to us changes from
  // second to second, and the pair measures both under the same conditions.
  std::vector<double> step_ms, fractions, pass_gbps;
  double wall = 0, cpu = 0;
  for (int step = 0; step < opt.steps; ++step) {
    const Chunk chunk{seq.get(), {&next, 1}};
    xft::Expected<std::span<float>> logits = std::span<float>();
    const Timing t = timed(model.pool(), [&] { logits = model.forward({&chunk, 1}); });
    if (!logits) {
      std::fprintf(stderr, "bench_roofline: decode: %s\n", logits.error().message.c_str());
      return false;
    }
    next = argmax(*logits);
    step_ms.push_back(t.wall * 1e3);
    wall += t.wall;
    cpu += t.cpu_per_thread;
    // The model's idle workers spin for up to XFT_SPIN_US (200 us) before
    // they sleep; the pass starts after that, so they do not take its cycles.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double pass_rate = probe.gigabytes() / probe.pass().wall;
    pass_gbps.push_back(pass_rate);
    fractions.push_back(out->bytes_per_token / t.wall / 1e9 / pass_rate);
  }
  out->decode_ms = median(step_ms);
  out->decode_best_ms = *std::min_element(step_ms.begin(), step_ms.end());
  out->decode_share = wall > 0 ? cpu / wall : 0;
  out->paired_fraction = median(fractions);
  out->paired_bandwidth = median(pass_gbps);
  return true;
}

// The decode ratios between dtypes, measured step by step in turn: every
// dtype of a model loaded at once, then round k runs one decode step of each.
// On a shared machine the CPU share and the memory bus left to us change from
// second to second; a dtype measured a minute after another can be 2x off
// (bench_engine's tables, one dtype after the other, differ that way from
// run to run), while neighbouring steps see nearly the same machine. Each
// round gives one ratio; the median and the spread (min, max) of those are
// printed, in wall time and in CPU time per thread ("excl.": the rate with
// the cores to ourselves).
struct AlternatingRun {
  std::string dtype;
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<Sequence> seq;
  int32_t next = 0;
  std::vector<double> wall_ms, cpu_ms;
};

bool start_alternating(const ModelConfig& config, const std::string& dtype, const Options& opt,
                       const std::vector<int>& cpus, AlternatingRun* run) {
  WeightFormat format;
  if (!parse_weight_format(dtype, &format)) return false;
  run->dtype = dtype;
  run->weights = make_fake_weights(config, 0);
  ModelOptions options;
  options.dtype = format;
  options.kv = KvFormat::bf16;
  options.cpus = cpus;
  options.max_context = opt.prompt + opt.steps + 1;
  auto loaded = Model::load(*run->weights, options);
  if (!loaded) {
    std::fprintf(stderr, "bench_roofline: %s: %s\n", dtype.c_str(), loaded.error().message.c_str());
    return false;
  }
  run->model = std::move(*loaded);
  const int vocab = run->model->config().vocab;
  std::vector<int32_t> prompt(opt.prompt);
  for (int i = 0; i < opt.prompt; ++i) prompt[i] = static_cast<int32_t>((1000003ll * (i + 1)) % vocab);
  run->seq = run->model->new_sequence(opt.prompt + opt.steps + 1);
  const Chunk chunk{run->seq.get(), prompt};
  auto logits = run->model->forward({&chunk, 1});
  if (!logits) return false;
  run->next = argmax(*logits);
  return true;
}

bool alternating_step(AlternatingRun& run) {
  const Chunk chunk{run.seq.get(), {&run.next, 1}};
  xft::Expected<std::span<float>> logits = std::span<float>();
  const Timing t = timed(run.model->pool(), [&] { logits = run.model->forward({&chunk, 1}); });
  if (!logits) return false;
  run.next = argmax(*logits);
  run.wall_ms.push_back(t.wall * 1e3);
  run.cpu_ms.push_back(t.cpu_per_thread * 1e3);
  return true;
}

// "median [min, max]" of a[k] / b[k] over the rounds (b is the faster one's time).
std::string ratio_spread(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) r.push_back(a[k] / b[k]);
  if (r.empty()) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.2fx [%.2f, %.2f]", median(r), *std::min_element(r.begin(), r.end()),
                *std::max_element(r.begin(), r.end()));
  return text;
}

void bench_alternating(const Options& opt, const std::vector<int>& cpus) {
  for (const std::string& preset : opt.models) {
    auto config = preset_config(preset, opt);
    // One dtype has no ratio to measure: loading it again would only hold
    // a second copy of the weights (the first one's pages are not all
    // returned to the system) on a machine the first one nearly filled.
    if (!config || opt.dtypes.size() < 2) continue;
    std::vector<AlternatingRun> runs(opt.dtypes.size());
    bool ok = true;
    for (size_t d = 0; d < runs.size() && ok; ++d) {
      std::fprintf(stderr, "bench_roofline: %s %s (alternating) ...\n", preset.c_str(), opt.dtypes[d].c_str());
      ok = start_alternating(*config, opt.dtypes[d], opt, cpus, &runs[d]);
    }
    if (!ok) continue;
    for (int step = 0; step < opt.steps && ok; ++step) {
      for (auto& run : runs) ok = ok && alternating_step(run);
    }
    if (!ok) continue;
    std::printf("\n== %s decode, dtypes alternated step by step (%d rounds after a %d-token prompt, %d threads) ==\n",
                preset.c_str(), opt.steps, opt.prompt, static_cast<int>(cpus.size()));
    std::printf("%-5s %9s %9s %8s %8s %6s\n", "dtype", "ms/token", "tok/s", "excl. ms", "excl.t/s", "share");
    for (const auto& run : runs) {
      const double wall = median(run.wall_ms), cpu = median(run.cpu_ms);
      std::printf("%-5s %9.1f %9.2f %8.1f %8.2f %5.0f%%\n", run.dtype.c_str(), wall, 1e3 / wall, cpu, 1e3 / cpu,
                  100.0 * cpu / wall);
    }
    for (const auto& a : runs) {
      for (const auto& b : runs) {
        const bool pair = (a.dtype == "bf16" && (b.dtype == "int8" || b.dtype == "int4")) ||
                          (a.dtype == "int8" && b.dtype == "int4");
        if (!pair) continue;
        std::printf("ratio %s %s/%s alternating: decode speed %s wall, %s excl. (median [min, max] over rounds)\n",
                    preset.c_str(), b.dtype.c_str(), a.dtype.c_str(), ratio_spread(a.wall_ms, b.wall_ms).c_str(),
                    ratio_spread(a.cpu_ms, b.cpu_ms).c_str());
      }
    }
  }
}

// The register-only peaks per CPU-second (what the cores do when they are
// ours), one per instruction a prefill kernel path runs on; 0 where absent.
struct Peaks {
  double bf16 = 0;      // vdpbf16ps, or the fp32 FMA peak without it
  double fp32 = 0;      // FMA
  double vnni = 0;      // vpdpbusd (int8 ops)
  double amx_bf16 = 0;  // tdpbf16ps
  double amx_int8 = 0;  // tdpbssd (int8 ops)
};

struct PathPeak {
  double value;
  const char* name;
};

// The peak of the instruction a model's kernel (Model::kernel_name(),
// "format/isa[-bf16][-vnni][-int8x]" or "format/amx") runs prefill on: the
// tiles for bf16 and int8 weights on real AMX, vpdpbusd for the VNNI
// kernels (int8, int4 with int8 inputs), vdpbf16ps for bf16 and FP8, else
// the FMA.
PathPeak peak_of_kernel(const std::string& kernel, const Peaks& peaks) {
  const auto has = [&](const char* part) { return kernel.find(part) != std::string::npos; };
  if (has("/amx") && !has("emulated")) {
    if (kernel.rfind("int8/", 0) == 0 && peaks.amx_int8 > 0) return {peaks.amx_int8, "amx-i8"};
    if (peaks.amx_bf16 > 0) return {peaks.amx_bf16, "amx-bf"};
  }
  if (has("-vnni") && peaks.vnni > 0) return {peaks.vnni, "vnni"};
  if (has("-bf16") && peaks.bf16 > 0) return {peaks.bf16, "bf16"};
  return {peaks.fp32, "fma"};
}

// Runs every model x dtype, then prints the table against the best read
// bandwidth seen in the whole run (the passes beside the decode steps
// included) and the peak of each row's kernel path.
void bench_engine(const Options& opt, const std::vector<int>& cpus, ReadProbe& probe, const Peaks& peaks) {
  std::vector<EngineResult> results;
  for (const std::string& preset : opt.models) {
    for (const std::string& dtype : opt.dtypes) {
      std::fprintf(stderr, "bench_roofline: %s %s ...\n", preset.c_str(), dtype.c_str());
      EngineResult r;
      if (bench_engine_one(preset, dtype, opt, cpus, probe, &r)) results.push_back(r);
    }
  }
  const double roofline = probe.best_gbps();
  std::printf("\n== engine (Model on fake weights): prefill %d tokens, then %d decode steps, %d threads ==\n",
              opt.prompt, opt.steps, static_cast<int>(cpus.size()));
  std::printf("roofline: best read bandwidth of the run %.1f GB/s; peaks (G ops/s): bf16 %.1f, fma %.1f", roofline, peaks.bf16,
              peaks.fp32);
  if (peaks.vnni > 0) std::printf(", vnni %.1f", peaks.vnni);
  if (peaks.amx_bf16 > 0) std::printf(", amx-bf %.1f", peaks.amx_bf16);
  if (peaks.amx_int8 > 0) std::printf(", amx-i8 %.1f", peaks.amx_int8);
  std::printf("\nprefill: \"%% peak\" = its G ops/s / the peak of the instruction its kernel path runs on (\"of\"); %s\n",
              opt.batch_invariant ? "batch-invariant kernels (the default of serve, prompt and chat)"
                                  : "plain prefill (oneDNN where faster; serve, prompt and chat take --no-batch-invariant for it)");
  std::printf("decode: median step. \"%% roof\" = its GB/s / roofline; \"best\" = the fastest step's GB/s / roofline;\n"
              "\"paired\" = median over steps of the step's GB/s / a read pass run right after it (\"pass\": their\n"
              "median GB/s): both under the same conditions when other work shares the memory bus\n");
  std::printf("%-13s %-5s %-17s %7s %9s %6s %7s %7s %7s %5s %6s | %8s %8s %7s %-6s %6s | %6s\n", "model", "dtype",
              "kernel", "tok/s", "MB/token", "GB/s", "% roof", "best", "paired", "pass", "share", "pf tok/s",
              "G ops/s", "% peak", "of", "share", "load s");
  for (const EngineResult& r : results) {
    const double gbps = r.bytes_per_token / (r.decode_ms * 1e6);
    const double gflops = r.prefill_flop / (r.prefill_ms * 1e6);
    const double best_gbps = r.bytes_per_token / (r.decode_best_ms * 1e6);
    const PathPeak peak = peak_of_kernel(r.kernel, peaks);
    std::printf("%-13s %-5s %-17s %7.2f %9.1f %6.1f %6.1f%% %6.1f%% %6.1f%% %5.1f %5.0f%% | %8.1f %8.1f %6.1f%% %-6s %5.0f%% | %6.1f\n",
                r.model.c_str(), r.dtype.c_str(), r.kernel.c_str(), 1e3 / r.decode_ms, r.bytes_per_token / 1e6, gbps,
                100.0 * gbps / roofline, 100.0 * best_gbps / roofline, 100.0 * r.paired_fraction, r.paired_bandwidth, 100.0 * r.decode_share,
                1e3 * opt.prompt / r.prefill_ms, gflops, 100.0 * gflops / peak.value, peak.name, 100.0 * r.prefill_share,
                r.load_s);
  }
  // Ratio lines: what int8 buys over bf16 in decode (ideal: bytes ratio), and model-size scaling.
  for (const EngineResult& a : results) {
    for (const EngineResult& b : results) {
      const bool pair = (a.dtype == "bf16" && (b.dtype == "int8" || b.dtype == "int4")) ||
                        (a.dtype == "int8" && b.dtype == "int4");
      if (a.model == b.model && pair) {
        std::printf("ratio %s %s/%s: decode speed %.2fx (bytes %.2fx), prefill speed %.2fx\n", a.model.c_str(),
                    b.dtype.c_str(), a.dtype.c_str(), a.decode_ms / b.decode_ms, a.bytes_per_token / b.bytes_per_token,
                    a.prefill_ms / b.prefill_ms);
      }
    }
  }
  for (const EngineResult& a : results) {
    for (const EngineResult& b : results) {
      if (a.dtype == b.dtype && a.model < b.model) {
        std::printf("ratio %s %s/%s: decode time %.2fx (bytes %.2fx), prefill time %.2fx (flop %.2fx)\n",
                    a.dtype.c_str(), b.model.c_str(), a.model.c_str(), b.decode_ms / a.decode_ms,
                    b.bytes_per_token / a.bytes_per_token, b.prefill_ms / a.prefill_ms, b.prefill_flop / a.prefill_flop);
      }
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
    else if (arg == "--kernels") opt->kernels = true;
    else if (arg == "--alternate-only") opt->alternate_only = true;
    else if (arg == "--no-alternate") opt->alternate = false;
    else if (arg == "--batch-invariant") opt->batch_invariant = true;
    else if (arg == "--prompt") opt->prompt = std::max(1, std::atoi(next("--prompt")));
    else if (arg == "--steps") opt->steps = std::max(2, std::atoi(next("--steps")));
    else if (arg == "--models") opt->models = split_commas(next("--models"));
    else if (arg == "--dtypes") opt->dtypes = split_commas(next("--dtypes"));
    else if (arg == "--layers") opt->layers = std::max(1, std::atoi(next("--layers")));
    else {
      std::fprintf(stderr,
                   "usage: bench_roofline [--threads N] [--mem-gib G] [--repeats R] [--quick] [--models a,b]\n"
                   "                      [--dtypes bf16,int8,int4,fp8] [--layers N] [--prompt N] [--steps N] [--kernels]\n"
                   "                      [--alternate-only] [--no-alternate] [--batch-invariant]\n");
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
  // The read passes share the model's cpus: a worker of this pool that spun
  // after a pass would take cycles from the model's next step, so it sleeps
  // at once (spin 0).
  ThreadPool pool(opt.threads, cpus, 0);

  std::printf("cpu features: %s\n", describe(cpu_features()).c_str());
  std::printf("kernel family: %s, threads: %d\n", isa_name(active_isa()), pool.size());

  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) std::printf("load average: %.2f (cores: %u)\n", load[0], std::thread::hardware_concurrency());
  std::printf("columns: wall-clock figures; \"excl.\" = work / CPU time per thread (the rate with the cores to\n"
              "ourselves); share = CPU time / (wall x threads), below 100%% when the machine is shared\n");

  if (opt.alternate_only) {
    bench_alternating(opt, cpus);
    return 0;
  }
  ReadProbe probe(pool, opt.mem_gib);
  const Rate bandwidth = measure_read_bandwidth(probe, opt);
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
  const auto per_cpu_second = [](const Rate& r) { return std::max(r.wall, r.excl); };
  Peaks peaks;
  peaks.bf16 = per_cpu_second(bf16_peak);
  peaks.fp32 = per_cpu_second(fp32_peak);
  if (use_avx512_vnni()) {
    const Rate vnni = measure_peak(pool, opt, vnni_ops);
    std::printf("int8 peak (vpdpbusd):   %.1f GOP/s wall; excl. %.1f GOP/s = %.1f per core x %d, share %.0f%%\n", vnni.wall,
                vnni.excl, vnni.excl / pool.size(), pool.size(), 100 * vnni.share);
    peaks.vnni = per_cpu_second(vnni);
  }
  if (amx_support().bf16) {
    const Rate amx = measure_peak(pool, opt, amx_bf16_peak_flops);
    std::printf("AMX bf16 peak (tdpbf16ps): %.1f GFLOP/s wall; excl. %.1f GFLOP/s = %.1f per core x %d (%.1fx the vector bf16 peak)\n",
                amx.wall, amx.excl, amx.excl / pool.size(), pool.size(), amx.wall / bf16_peak.wall);
    peaks.amx_bf16 = per_cpu_second(amx);
  }
  if (amx_support().int8) {
    const Rate amx = measure_peak(pool, opt, amx_int8_peak_ops);
    std::printf("AMX int8 peak (tdpbssd):   %.1f GOP/s wall; excl. %.1f GOP/s = %.1f per core x %d\n", amx.wall,
                amx.excl, amx.excl / pool.size(), pool.size());
    peaks.amx_int8 = per_cpu_second(amx);
  }
  if (!amx_support().bf16 && !amx_support().int8) std::printf("%s\n", amx_status_line().c_str());

  const std::vector<Shape> shapes = {
      {"0.5B mlp.down", 896, 4864},
      {"0.5B mlp.gate_up", 9728, 896},
      {"1.5B mlp.down", 1536, 8960},
      {"1.5B mlp.up", 8960, 1536},
      {"0.5B lm_head", 151936, 896},
  };
  bench_engine(opt, cpus, probe, peaks);
  std::fflush(stdout);  // the table survives a later section running out of memory
  if (opt.alternate) bench_alternating(opt, cpus);
  if (opt.kernels) {
    bench_gemv(pool, opt, bandwidth, shapes);
    bench_matmul(pool, opt, bf16_peak, shapes);
  }
  std::printf("\ntargets: decode >= 85%% of the roofline (bf16, int8); prefill >= 50%% of its path's peak at 512 tokens\n");
  return 0;
}
