// The experts of one mixture-of-experts layer (Qwen3-30B-A3B's shapes by
// default: 128 experts, top 8, hidden 2048, width 768) under the schedules
// the block can run them with, alternated round by round so that each pair
// sees the same machine:
//  * decode (one token, 8 chosen experts, new choices for every schedule and
//    round so that none finds another's experts in cache): one parallel
//    region per expert and projection (16 fork/joins), forward_gemv_grouped
//    (2) on experts allocated one by one, and forward_gemv_grouped on the
//    same experts moved into one arena, as MixtureOfExperts keeps them, then
//    also with x staged once for all gate/up projections (as the block runs
//    a decode step), x staged per expert before; each
//    against a read pass over 1 GiB right after it (active bytes per second
//    / that pass's GB/s: the "paired" fraction bench_roofline prints) and by
//    its fastest round ("best", GB/s);
//  * prefill (--tokens rows routed top-k, grouped by expert): per expert
//    Linear::forward (oneDNN where it has bf16 matmul), per expert
//    forward_gemv, and forward_gemv_grouped, in GFLOP/s of active FLOPs,
//    wall and "excl." (per CPU-second of the pool's threads: the rate with
//    the cores to ourselves).
// Usage: bench_moe [--threads N] [--dtype bf16|int8|int4|fp8] [--experts E] [--topk K]
//                  [--hidden H] [--width I] [--tokens T] [--rounds R]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "engine/kernels/aligned_buffer.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/thread_pool.h"

using namespace xft::engine;
using namespace xft::bench;

namespace {

struct Options {
  int threads = 2;
  std::string dtype = "bf16";
  int experts = 128, topk = 8, hidden = 2048, width = 768, tokens = 512, rounds = 10;
};

// Weights in [-1, 1) from a cheap generator: the kernels' speed does not
// depend on the values, and 400 M normal draws would take longer than the run.
std::vector<float> random_matrix(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<int32_t>(s >> 32)) * (1.0f / 2147483648.0f);
  }
  return v;
}

struct Expert {
  Linear gate_up, down;
};

// Packed experts, from a fixed seed per expert; into `arena` (one
// allocation, expert after expert) when given.
std::vector<Expert> make_experts(const Options& opt, WeightFormat format, AlignedBuffer* arena) {
  std::vector<Expert> experts(opt.experts);
  size_t offset = 0;
  for (int e = 0; e < opt.experts; ++e) {
    const auto gate_up = random_matrix(size_t(2) * opt.width * opt.hidden, 2 * e);
    const auto down = random_matrix(size_t(opt.hidden) * opt.width, 2 * e + 1);
    experts[e].gate_up = Linear(gate_up.data(), 2 * opt.width, opt.hidden, format);
    experts[e].down = Linear(down.data(), opt.hidden, opt.width, format);
    if (!arena) continue;
    const size_t bytes = experts[e].gate_up.data_bytes() + experts[e].down.data_bytes();
    if (e == 0) arena->resize(bytes * opt.experts);
    experts[e].gate_up.move_data_into(arena->as<unsigned char>() + offset);
    experts[e].down.move_data_into(arena->as<unsigned char>() + offset + experts[e].gate_up.data_bytes());
    offset += bytes;
  }
  return experts;
}

// The rows of each expert: token t's k choices, grouped by expert, tokens ascending.
struct Routing {
  std::vector<int> starts;  // [experts + 1]
  std::vector<int> tokens;  // token of each grouped row
};

Routing route(const Options& opt, int tokens, std::mt19937& rng) {
  std::vector<std::vector<int>> rows(opt.experts);
  std::vector<int> order(opt.experts);
  for (int t = 0; t < tokens; ++t) {
    for (int e = 0; e < opt.experts; ++e) order[e] = e;
    for (int j = 0; j < opt.topk; ++j) {
      std::swap(order[j], order[j + rng() % (opt.experts - j)]);
      rows[order[j]].push_back(t);
    }
  }
  Routing r;
  r.starts.push_back(0);
  for (const auto& list : rows) {
    r.tokens.insert(r.tokens.end(), list.begin(), list.end());
    r.starts.push_back(static_cast<int>(r.tokens.size()));
  }
  return r;
}

// Scratch of one schedule run: x rows per grouped row, gate/up, act, out.
struct Scratch {
  std::vector<float> rows_in, gate_up, act, out;
  std::vector<GroupedProjection> calls;
};

// grouped_one_row: a decode token's x itself as every chosen expert's input,
// as MixtureOfExperts passes it (forward_gemv_grouped stages it once); grouped
// gives each expert its own copy of its rows (staged once per expert).
enum class Schedule { per_expert_forward, per_expert_gemv, grouped, grouped_one_row };

void run_experts(const std::vector<Expert>& experts, const Routing& r, const float* x, const Options& opt,
                 Schedule schedule, Scratch& s, ThreadPool& pool) {
  const size_t h = opt.hidden, w = opt.width, rows = r.tokens.size();
  s.rows_in.resize(rows * h);
  s.gate_up.resize(rows * 2 * w);
  s.act.resize(rows * w);
  s.out.resize(rows * h);
  for (size_t i = 0; i < rows; ++i) std::memcpy(&s.rows_in[i * h], x + r.tokens[i] * h, h * sizeof(float));
  if (schedule == Schedule::grouped || schedule == Schedule::grouped_one_row) {
    const bool one_row = schedule == Schedule::grouped_one_row && r.tokens.size() == size_t(opt.topk);
    s.calls.clear();
    for (int e = 0; e < opt.experts; ++e) {
      const int b = r.starts[e], n = r.starts[e + 1] - b;
      if (n) s.calls.push_back({&experts[e].gate_up, one_row ? x : &s.rows_in[b * h], n, &s.gate_up[b * 2 * w]});
    }
    forward_gemv_grouped(s.calls, pool);
    silu_mul_fused(s.gate_up.data(), static_cast<int>(rows), opt.width, s.act.data());
    s.calls.clear();
    for (int e = 0; e < opt.experts; ++e) {
      const int b = r.starts[e], n = r.starts[e + 1] - b;
      if (n) s.calls.push_back({&experts[e].down, &s.act[b * w], n, &s.out[b * h]});
    }
    forward_gemv_grouped(s.calls, pool);
    return;
  }
  for (int e = 0; e < opt.experts; ++e) {
    const int b = r.starts[e], n = r.starts[e + 1] - b;
    if (!n) continue;
    const auto project = [&](const Linear& l, const float* in, float* out) {
      if (schedule == Schedule::per_expert_forward) l.forward(in, n, out, pool);
      else l.forward_gemv(in, n, out, pool);
    };
    project(experts[e].gate_up, &s.rows_in[b * h], &s.gate_up[b * 2 * w]);
    silu_mul_fused(&s.gate_up[b * 2 * w], n, opt.width, &s.act[b * w]);
    project(experts[e].down, &s.act[b * w], &s.out[b * h]);
  }
}

bool parse(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_moe: %s needs a value\n", arg.c_str());
      return false;
    }
    const char* value = argv[++i];
    if (arg == "--threads") opt->threads = std::atoi(value);
    else if (arg == "--dtype") opt->dtype = value;
    else if (arg == "--experts") opt->experts = std::atoi(value);
    else if (arg == "--topk") opt->topk = std::atoi(value);
    else if (arg == "--hidden") opt->hidden = std::atoi(value);
    else if (arg == "--width") opt->width = std::atoi(value);
    else if (arg == "--tokens") opt->tokens = std::atoi(value);
    else if (arg == "--rounds") opt->rounds = std::atoi(value);
    else {
      std::fprintf(stderr, "bench_moe: unknown option %s\n", arg.c_str());
      return false;
    }
  }
  if (opt->threads < 1 || opt->experts < 1 || opt->topk < 1 || opt->topk > opt->experts || opt->hidden < 1 ||
      opt->width < 1 || opt->tokens < 1 || opt->rounds < 1) {
    std::fprintf(stderr, "bench_moe: every count must be >= 1 and --topk <= --experts\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) return 1;
  WeightFormat format;
  if (!parse_weight_format(opt.dtype, &format)) {
    std::fprintf(stderr, "bench_moe: --dtype %s: expected bf16, int8, int4 or fp8\n", opt.dtype.c_str());
    return 1;
  }
  std::vector<int> cpus;
  for (int i = 0; i < opt.threads; ++i) cpus.push_back(i);
  ThreadPool pool(opt.threads, cpus);
  const std::vector<Expert> experts = make_experts(opt, format, nullptr);
  AlignedBuffer arena;
  const std::vector<Expert> arena_experts = make_experts(opt, format, &arena);
  const double expert_bytes = double(experts[0].gate_up.weight_bytes() + experts[0].down.weight_bytes());
  std::printf("experts: %d x (gate/up %dx%d, down %dx%d), %s (%s), top %d, %d threads; %.1f MB per expert\n",
              opt.experts, 2 * opt.width, opt.hidden, opt.hidden, opt.width, opt.dtype.c_str(),
              experts[0].gate_up.kernel_name().c_str(), opt.topk, opt.threads, expert_bytes / 1e6);
  ReadProbe read(pool, 1.0);  // 1 GiB: the bandwidth of the moment
  std::mt19937 rng(7);
  Scratch scratch;

  // Decode: a new token each round, each schedule on choices of its own.
  const auto x1 = random_matrix(opt.hidden, 99);
  const double active = opt.topk * expert_bytes;
  struct DecodeSchedule {
    const char* name;
    const std::vector<Expert>* experts;
    Schedule schedule;
    std::vector<double> ms, paired;
  };
  char per_expert_name[64];
  std::snprintf(per_expert_name, sizeof per_expert_name, "per expert (%d regions)", 2 * opt.topk);
  DecodeSchedule decode[] = {{per_expert_name, &experts, Schedule::per_expert_gemv, {}, {}},
                             {"grouped (2 regions)", &experts, Schedule::grouped, {}, {}},
                             {"grouped, one arena", &arena_experts, Schedule::grouped, {}, {}},
                             {"arena, x staged once", &arena_experts, Schedule::grouped_one_row, {}, {}}};
  std::vector<double> pass_gbps;
  for (int round = 0; round < opt.rounds * 4; ++round) {
    for (DecodeSchedule& d : decode) {
      const Routing r = route(opt, 1, rng);
      const double t0 = now_seconds();
      run_experts(*d.experts, r, x1.data(), opt, d.schedule, scratch, pool);
      const double t = now_seconds() - t0;
      const double gbps = read.pass_gbps();
      pass_gbps.push_back(gbps);
      d.ms.push_back(t * 1e3);
      d.paired.push_back(active / t / 1e9 / gbps);
    }
  }
  std::printf("decode, 1 token, %d rounds (medians; paired: active bytes/s over a 1 GiB read pass right after;\n"
              "best: the fastest round's GB/s; read pass %.1f GB/s, best %.1f):\n",
              opt.rounds * 4, median(pass_gbps), read.best_gbps());
  for (const DecodeSchedule& d : decode) {
    const double best_ms = *std::min_element(d.ms.begin(), d.ms.end());
    std::printf("  %-24s %7.3f ms, paired %5.1f%%, best %5.1f GB/s\n", d.name, median(d.ms), 100 * median(d.paired),
                active / best_ms / 1e6);
  }

  // Prefill: --tokens rows routed top-k, each schedule in turn per round.
  const auto x = random_matrix(size_t(opt.tokens) * opt.hidden, 98);
  const Routing r = route(opt, opt.tokens, rng);
  const double flop = 2.0 * opt.tokens * opt.topk * 3.0 * opt.width * opt.hidden;
  const Schedule schedules[] = {Schedule::per_expert_forward, Schedule::per_expert_gemv, Schedule::grouped};
  const char* names[] = {"per expert Linear::forward", "per expert forward_gemv", "grouped forward_gemv"};
  std::vector<double> wall[3], excl[3];
  for (int s = 0; s < 3; ++s) run_experts(experts, r, x.data(), opt, schedules[s], scratch, pool);  // warm-up
  for (int round = 0; round < opt.rounds; ++round) {
    for (int s = 0; s < 3; ++s) {
      const Timing t = timed(pool, [&] { run_experts(experts, r, x.data(), opt, schedules[s], scratch, pool); });
      wall[s].push_back(flop / t.wall / 1e9);
      excl[s].push_back(flop / t.cpu_per_thread / 1e9);
    }
  }
  std::printf("prefill, %d tokens (%d rows over %d experts; %.1f GFLOP active), %d rounds, median GFLOP/s:\n",
              opt.tokens, opt.tokens * opt.topk, opt.experts, flop / 1e9, opt.rounds);
  for (int s = 0; s < 3; ++s) {
    std::printf("  %-27s %7.1f wall %7.1f excl. (%.1f GFLOP/s per thread)\n", names[s], median(wall[s]),
                median(excl[s]), median(excl[s]) / opt.threads);
  }
  return 0;
}
