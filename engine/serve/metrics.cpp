#include "engine/serve/metrics.h"

#include <cstdio>

namespace xft::engine::serve {

namespace {

constexpr double kTtftBounds[] = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
constexpr size_t kBuckets = sizeof kTtftBounds / sizeof kTtftBounds[0];

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// A family with one unlabelled sample.
void single(std::string& out, const char* name, const char* type, const char* help, const std::string& value) {
  family(out, name, type, help);
  out += name;
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

std::string Metrics::render(const SchedulerCounters& c) {
  std::lock_guard lock(mutex_);
  if (ttft_buckets_.empty()) ttft_buckets_.assign(kBuckets, 0);
  for (double t : c.time_to_first_token_s) {
    for (size_t b = 0; b < kBuckets; ++b)
      if (t <= kTtftBounds[b]) ++ttft_buckets_[b];
    ++ttft_count_;
    ttft_sum_ += t;
  }
  std::string out;
  family(out, "xftctl_http_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, n] : requests_) {
    out += "xftctl_http_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  }
  single(out, "xftctl_prompt_tokens_total", "counter", "Prompt tokens of admitted requests (reused prefixes included).",
         std::to_string(c.prompt_tokens));
  single(out, "xftctl_generation_tokens_total", "counter", "Tokens generated and sent.",
         std::to_string(c.generated_tokens));
  single(out, "xftctl_steps_total", "counter", "Scheduler steps (one batched forward pass each).",
         std::to_string(c.steps));
  family(out, "xftctl_time_to_first_token_seconds", "histogram", "From request arrival to its first token.");
  for (size_t b = 0; b < kBuckets; ++b) {
    out += "xftctl_time_to_first_token_seconds_bucket{le=\"" + number(kTtftBounds[b]) + "\"} " +
           std::to_string(ttft_buckets_[b]) + "\n";
  }
  out += "xftctl_time_to_first_token_seconds_bucket{le=\"+Inf\"} " + std::to_string(ttft_count_) + "\n";
  out += "xftctl_time_to_first_token_seconds_sum " + number(ttft_sum_) + "\n";
  out += "xftctl_time_to_first_token_seconds_count " + std::to_string(ttft_count_) + "\n";
  single(out, "xftctl_decode_tokens_per_second", "gauge", "Tokens generated per second over the last 5 s.",
         number(c.decode_tokens_per_second));
  single(out, "xftctl_requests_running", "gauge", "Requests in the decode batch.", std::to_string(c.running));
  single(out, "xftctl_requests_waiting", "gauge", "Requests queued for a batch slot.", std::to_string(c.waiting));
  single(out, "xftctl_kv_cache_bytes", "gauge", "KV cache held by running requests on rank 0.",
         std::to_string(c.kv_bytes));
  const PrefixCacheStats& p = c.prefix_cache;
  single(out, "xftctl_prefix_cache_lookups_total", "counter", "Requests admitted with the prefix cache on.",
         std::to_string(p.lookups));
  single(out, "xftctl_prefix_cache_hits_total", "counter", "Requests that reused a cached prompt prefix.",
         std::to_string(p.hits));
  single(out, "xftctl_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens whose KV was copied from the prefix cache instead of prefilled.", std::to_string(p.hit_tokens));
  single(out, "xftctl_prefix_cache_evictions_total", "counter", "Cached prefix blocks evicted to make room.",
         std::to_string(p.evictions));
  single(out, "xftctl_prefix_cache_bytes", "gauge", "KV held by cached prompt prefixes on rank 0.",
         std::to_string(p.bytes));
  single(out, "xftctl_prefix_cache_blocks", "gauge", "Cached prompt prefix blocks (16 tokens each).",
         std::to_string(p.blocks));
  return out;
}

}  // namespace xft::engine::serve
