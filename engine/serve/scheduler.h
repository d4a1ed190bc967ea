// Continuous batching: requests from any number of HTTP threads wait in a
// queue; the scheduler thread (rank 0's main thread, the one that may call
// collectives) admits them while a batch slot and KV memory are free, and
// every step decodes one token for all running requests at once, together
// with up to prefill_chunk prompt tokens of admitted requests (oldest first,
// a long prompt cut over several steps, several short ones in one step), so
// a long prompt never stalls the others' next token for long. A finished or
// abandoned request leaves at the next step. Past the queue limit a request
// is refused (HTTP 429).
//
// The KV of a prompt prefix an earlier request computed (a shared system
// prompt, a chat's earlier turns) is copied in instead of prefilled again
// (prefix_cache.h): a request's prompt is cached in whole blocks once
// prefilled, its prompt and answer when it ends. Cached blocks share
// kv_budget_bytes with the running requests and give way to them, least
// recently used first; without a budget they hold at most max_batch full
// contexts. With linear-attention layers (Qwen3.5) a cached prefix also
// carries the layers' state at its last block, kept by the executor when a
// sequence stands on a block boundary (a prompt chunk is cut there).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "engine/model/model.h"
#include "engine/model/sampler.h"
#include "engine/serve/prefix_cache.h"
#include "engine/serve/step_plan.h"

namespace xft::engine::serve {

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_tokens = 16;
  std::vector<int32_t> stop_ids;  // drawn but neither emitted nor fed back
  // Structured output: the grammar the answer is held to (one-rank servers); null: free text.
  std::shared_ptr<const constrain::Constraint> constraint;
};

// The tokens of one request as the scheduler produces them. The HTTP thread
// takes them with next(); cancel() (the client went away) frees the slot.
class RequestStream {
 public:
  using Clock = std::chrono::steady_clock;
  // Waits up to `wait` for tokens; appends them to `tokens`. Returns false
  // once the request is over and every token was taken (finish_reason() set).
  // logprobs (when given) gets one entry per token, for requests whose
  // sampling params ask for them.
  bool next(std::vector<int32_t>& tokens, std::chrono::milliseconds wait,
            std::vector<DrawLogprobs>* logprobs = nullptr);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  // "stop" | "length" | "context" | "cancelled" | "error"
  std::string finish_reason() const;
  std::string error() const;
  int prompt_tokens() const { return prompt_tokens_; }

 private:
  friend class Scheduler;
  void push(int32_t token, const DrawLogprobs* logprobs);
  void finish(std::string reason, std::string error = "");

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<int32_t> pending_;
  std::vector<DrawLogprobs> pending_logprobs_;
  bool done_ = false;
  std::string finish_reason_, error_;
  std::atomic<bool> cancelled_{false};
  int prompt_tokens_ = 0;
};

struct SchedulerOptions {
  int max_batch = 16;       // sequences decoded together
  int max_queue = 64;       // requests waiting beyond the batch; more get 429
  size_t kv_budget_bytes = 0;  // KV cache of all running sequences on this rank; 0: unlimited
  int prefill_chunk = 64;   // prompt tokens per step, over all requests; 0: whole prompts
  bool prefix_cache = true;  // reuse the KV of prompt prefixes seen before
};

struct SubmitError {
  int status = 400;  // 400: the request can never run; 429: full
  std::string message;
  std::string code;
};

// What /metrics reports.
struct SchedulerCounters {
  int running = 0;
  int waiting = 0;
  size_t kv_bytes = 0;
  uint64_t steps = 0;
  uint64_t prompt_tokens = 0;
  uint64_t generated_tokens = 0;
  double decode_tokens_per_second = 0.0;  // over the last few seconds of decoding
  std::vector<double> time_to_first_token_s;  // since the last take (for a histogram)
  PrefixCacheStats prefix_cache;
};

class Scheduler {
 public:
  Scheduler(Model& model, SchedulerOptions options);
  const SchedulerOptions& options() const { return options_; }
  size_t kv_bytes_per_position() const { return kv_per_position_; }
  int max_context() const { return model_.max_context(); }
  // Constrained requests need the vocabulary's bytes (rank 0; one-rank servers).
  void set_token_table(std::shared_ptr<const constrain::TokenTable> table) { executor_.set_token_table(std::move(table)); }
  bool can_constrain() const { return model_.comm().size() == 1; }

  // From any thread.
  Expected<std::shared_ptr<RequestStream>, SubmitError> submit(GenerationRequest request);
  SchedulerCounters take_counters();

  // Rank 0: runs steps until `stop` is set, then tells the other ranks to
  // end. Every open request is finished ("cancelled") on the way out.
  Expected<void> run(const std::atomic<bool>& stop);
  // Every other rank: executes rank 0's plans until it says shutdown.
  static Expected<void> follow(Model& model, int max_batch);

 private:
  struct Active {
    std::shared_ptr<RequestStream> stream;
    GenerationRequest request;
    int generated = 0;
    int prefilled = 0;   // prompt tokens planned (or reused) so far
    bool started = false;  // the first prompt chunk is planned
    bool prompt_cached = false;
    std::vector<int32_t> reuse;  // cached blocks the first chunk copies in
    uint64_t order = 0;  // admission order: older prompts are fed first
    size_t kv_bytes = 0;
    bool finished = false;
    RequestStream::Clock::time_point submitted;
  };
  struct Waiting {
    std::shared_ptr<RequestStream> stream;
    GenerationRequest request;
    RequestStream::Clock::time_point submitted;
  };

  StepPlan plan_step();  // under mutex_
  void plan_prefill(StepPlan& plan);  // under mutex_
  void plan_admissions(StepPlan& plan);  // under mutex_
  // Caches the whole blocks of slot's first `tokens` positions (as far as room allows).
  void cache_prefix(int32_t slot, std::span<const int32_t> tokens, StepPlan& plan);
  size_t prefix_room() const;  // bytes cached blocks may hold now
  void deliver(const StepPlan& plan, const std::vector<int32_t>& drawn, const std::vector<DrawLogprobs>& logprobs);
  void accept_token(int slot, int32_t token, const DrawLogprobs* logprobs);
  void finish_all(const std::string& reason, const std::string& error);
  int capacity_for(const GenerationRequest& request) const;

  Model& model_;
  SchedulerOptions options_;
  size_t kv_per_position_ = 0;
  size_t linear_state_bytes_ = 0;  // one sequence's linear-attention state (Qwen3.5)
  size_t state_per_sequence_ = 0;  // linear-attention state bytes a running request holds
  StepExecutor executor_;
  std::unique_ptr<PrefixCache> prefix_;  // null: SchedulerOptions::prefix_cache off

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Waiting> waiting_;
  std::vector<std::unique_ptr<Active>> slots_;  // index = executor slot
  size_t kv_used_ = 0;
  uint64_t admitted_ = 0;
  SchedulerCounters counters_;
  // (time, tokens) of recent decode steps, for the tokens/s gauge.
  std::deque<std::pair<RequestStream::Clock::time_point, int>> recent_;
};

}  // namespace xft::engine::serve
