// One thread's decode GEMV (m = 1) per weight format, with the weight read
// from DRAM: each call takes the next of `copies` copies of the same matrix
// (together past the last-level cache), so a kernel's figure is its memory
// stream, which the cached benchmarks (bench_kernels) do not show. Formats
// are alternated round by round and timed in thread CPU time, so other
// processes on a shared machine move the figures less than the ratios; a
// one-thread read pass after each format's round gives "paired" (the round's
// wall-clock GB/s over that pass's). --cached instead calls the first copy
// `copies` times: the kernel's own speed with the weight in cache (the
// ceiling its stream can reach).
// Usage: bench_stream_gemv [--shape OUTxIN] [--copies N] [--rounds N] [--dtypes int4,int8] [--cached]
// Prints the median (and its GB/s of weight bytes) and best microseconds per
// call of each format, its paired fraction, and its speed against the last one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "engine/kernels/linear.h"
#include "engine/kernels/thread_pool.h"

using namespace xft::engine;

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) parts.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

int usage(const char* why) {
  std::fprintf(stderr, "bench_stream_gemv: %s\nusage: bench_stream_gemv [--shape OUTxIN] [--copies N] [--rounds N] [--dtypes int4,int8] [--cached]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int out = 1536, in = 8960, copies = 24, rounds = 15;
  std::string dtypes = "int4,int8";
  bool cached = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cached") {
      cached = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--shape") {
      if (std::sscanf(value, "%dx%d", &out, &in) != 2 || out < 1 || in < 1) return usage("--shape: expected OUTxIN, e.g. 1536x8960");
    } else if (arg == "--copies") {
      copies = std::atoi(value);
      if (copies < 1) return usage("--copies: expected a count >= 1");
    } else if (arg == "--rounds") {
      rounds = std::atoi(value);
      if (rounds < 1) return usage("--rounds: expected a count >= 1");
    } else if (arg == "--dtypes") {
      dtypes = value;
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  std::vector<WeightFormat> formats;
  const std::vector<std::string> names = split(dtypes);
  for (const std::string& name : names) {
    WeightFormat format;
    if (!parse_weight_format(name.c_str(), &format)) return usage(("--dtypes: unknown format " + name).c_str());
    formats.push_back(format);
  }
  if (formats.empty()) return usage("--dtypes: expected at least one format");

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
  std::vector<float> weight(static_cast<size_t>(out) * in), x(in), y(out);
  for (float& v : weight) v = uniform(rng);
  for (float& v : x) v = uniform(rng) * 20;
  std::vector<std::vector<Linear>> layers(formats.size());
  for (size_t f = 0; f < formats.size(); ++f) {
    for (int c = 0; c < copies; ++c) layers[f].emplace_back(weight.data(), out, in, formats[f]);
  }
  ThreadPool pool(1);
  // A read pass right after each format's round: the bandwidth of that
  // moment, which other processes on a shared machine move by 2x.
  xft::bench::ReadProbe probe(pool, 0.25);
  std::vector<std::vector<double>> us(formats.size()), paired(formats.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t f = 0; f < formats.size(); ++f) {
      if (cached) {
        // The first copy again and again: the kernel's own speed, weight in cache.
        const Linear& layer = layers[f][0];
        layer.forward(x.data(), 1, y.data(), pool);
        const double t0 = xft::bench::thread_cpu_seconds();
        for (int c = 0; c < copies; ++c) layer.forward(x.data(), 1, y.data(), pool);
        us[f].push_back((xft::bench::thread_cpu_seconds() - t0) / copies * 1e6);
        continue;
      }
      const double t0 = xft::bench::thread_cpu_seconds(), wall0 = xft::bench::now_seconds();
      for (const Linear& layer : layers[f]) layer.forward(x.data(), 1, y.data(), pool);
      us[f].push_back((xft::bench::thread_cpu_seconds() - t0) / copies * 1e6);
      const double gbps = static_cast<double>(layers[f][0].weight_bytes()) * copies / (xft::bench::now_seconds() - wall0) / 1e9;
      paired[f].push_back(gbps / probe.pass_gbps());
    }
  }
  std::printf("%dx%d, %d copies, %d rounds, 1 thread (thread CPU time per call)%s\n", out, in, copies, rounds,
              cached ? ", weight in cache" : "");
  for (size_t f = 0; f < formats.size(); ++f) std::sort(us[f].begin(), us[f].end());
  for (size_t f = 0; f < formats.size(); ++f) {
    const double bytes = static_cast<double>(layers[f][0].weight_bytes());
    char paired_text[32] = "";
    if (!cached) std::snprintf(paired_text, sizeof paired_text, "  paired %5.1f%%", 100 * xft::bench::median(paired[f]));
    std::printf("%-6s %-28s median %8.1f us (%5.1f GB/s)  best %8.1f us%s  speed vs %s %.2fx\n", names[f].c_str(),
                layers[f][0].kernel_name().c_str(), us[f][rounds / 2], bytes / us[f][rounds / 2] / 1e3, us[f][0],
                paired_text, names.back().c_str(), us.back()[rounds / 2] / us[f][rounds / 2]);
  }
}
