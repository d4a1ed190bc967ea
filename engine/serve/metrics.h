// /metrics in Prometheus' text format: HTTP requests by endpoint and status,
// prompt and generated tokens, time to first token (a histogram), and gauges
// for tokens/s, running and waiting requests and the KV cache in use; the
// prefix cache's lookups, hits, reused tokens, evictions and size.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/serve/scheduler.h"

namespace xft::engine::serve {

class Metrics {
 public:
  void count_request(const std::string& endpoint, int status);
  // Folds in the scheduler's counters (which hands each first-token time over once).
  std::string render(const SchedulerCounters& counters);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::vector<uint64_t> ttft_buckets_;  // cumulative counts per kTtftBounds
  uint64_t ttft_count_ = 0;
  double ttft_sum_ = 0.0;
};

}  // namespace xft::engine::serve
