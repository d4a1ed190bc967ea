#include "engine/serve/scheduler.h"

#include <algorithm>
#include <limits>

namespace xft::engine::serve {

namespace {

using Clock = RequestStream::Clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

constexpr auto kGaugeWindow = std::chrono::seconds(5);

}  // namespace

bool RequestStream::next(std::vector<int32_t>& tokens, std::chrono::milliseconds wait,
                         std::vector<DrawLogprobs>* logprobs) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, wait, [this] { return !pending_.empty() || done_; });
  tokens.insert(tokens.end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (logprobs) logprobs->insert(logprobs->end(), pending_logprobs_.begin(), pending_logprobs_.end());
  pending_logprobs_.clear();
  return !done_;
}

std::string RequestStream::finish_reason() const {
  std::lock_guard lock(mutex_);
  return finish_reason_;
}

std::string RequestStream::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void RequestStream::push(int32_t token, const DrawLogprobs* logprobs) {
  std::lock_guard lock(mutex_);
  pending_.push_back(token);
  if (logprobs) pending_logprobs_.push_back(*logprobs);
  ready_.notify_all();
}

void RequestStream::finish(std::string reason, std::string error) {
  std::lock_guard lock(mutex_);
  if (done_) return;
  done_ = true;
  finish_reason_ = std::move(reason);
  error_ = std::move(error);
  ready_.notify_all();
}

Scheduler::Scheduler(Model& model, SchedulerOptions options)
    : model_(model), options_(options), executor_(model, options.max_batch) {
  slots_.resize(static_cast<size_t>(options_.max_batch));
  const auto one_position = model_.new_sequence(1);
  kv_per_position_ = one_position->kv_bytes();
  linear_state_bytes_ = one_position->linear_state_bytes();
  // A running sequence's state, and the copy kept at its last block boundary for the prefix cache.
  state_per_sequence_ = linear_state_bytes_ * (options_.prefix_cache ? 2 : 1);
  if (options_.prefix_cache) prefix_ = std::make_unique<PrefixCache>(kv_per_position_ * kPrefixBlockTokens, linear_state_bytes_);
}

size_t Scheduler::prefix_room() const {
  if (options_.kv_budget_bytes == 0) {
    return static_cast<size_t>(options_.max_batch) * (model_.max_context() * kv_per_position_ + linear_state_bytes_);
  }
  return options_.kv_budget_bytes > kv_used_ ? options_.kv_budget_bytes - kv_used_ : 0;
}

void Scheduler::cache_prefix(int32_t slot, std::span<const int32_t> tokens, StepPlan& plan) {
  if (!prefix_) return;
  const int state_end = executor_.state_boundary(slot);
  for (const auto& block : prefix_->insert(tokens, prefix_room(), plan.drop, state_end)) {
    plan.save.push_back(BlockSave{slot, block.position, block.id, block.state});
  }
}

int Scheduler::capacity_for(const GenerationRequest& request) const {
  const long want = static_cast<long>(request.prompt.size()) + request.max_tokens;
  return static_cast<int>(std::min<long>(want, model_.max_context()));
}

Expected<std::shared_ptr<RequestStream>, SubmitError> Scheduler::submit(GenerationRequest request) {
  const int context = model_.max_context();
  const int prompt = static_cast<int>(request.prompt.size());
  if (prompt == 0) return SubmitError{400, "the prompt has no tokens", ""};
  if (prompt >= context) {
    return SubmitError{400,
                       "the prompt has " + std::to_string(prompt) + " tokens; this server's context is " +
                           std::to_string(context) + " (start it with a larger --max-context, or shorten the prompt)",
                       "context_length_exceeded"};
  }
  const size_t need = static_cast<size_t>(capacity_for(request)) * kv_per_position_ + state_per_sequence_;
  if (options_.kv_budget_bytes > 0 && need > options_.kv_budget_bytes) {
    return SubmitError{400,
                       "prompt + max_tokens need " + std::to_string(need >> 20) + " MiB of KV cache; the server has " +
                           std::to_string(options_.kv_budget_bytes >> 20) + " MiB (--kv-cache-mib)",
                       "context_length_exceeded"};
  }
  auto stream = std::make_shared<RequestStream>();
  stream->prompt_tokens_ = prompt;
  std::lock_guard lock(mutex_);
  if (static_cast<int>(waiting_.size()) >= options_.max_queue) {
    return SubmitError{429,
                       "the server is busy: " + std::to_string(waiting_.size()) +
                           " requests are waiting already (--max-queue); retry later",
                       "rate_limit_exceeded"};
  }
  waiting_.push_back(Waiting{stream, std::move(request), Clock::now()});
  work_.notify_one();
  return stream;
}

SchedulerCounters Scheduler::take_counters() {
  std::lock_guard lock(mutex_);
  SchedulerCounters copy = counters_;
  counters_.time_to_first_token_s.clear();
  copy.waiting = static_cast<int>(waiting_.size());
  // A finished request keeps its slot until the next step frees it, but its answer may already be
  // out: it is not running any more, and its KV is as good as freed.
  copy.running = 0;
  copy.kv_bytes = 0;
  if (prefix_) copy.prefix_cache = prefix_->stats();
  for (const auto& active : slots_) {
    if (!active || active->finished) continue;
    ++copy.running;
    copy.kv_bytes += active->kv_bytes;
  }
  int tokens = 0;
  const auto now = Clock::now();
  for (const auto& step : recent_) tokens += step.second;
  if (!recent_.empty()) {
    const double span = std::max(seconds(now - recent_.front().first), 1e-3);
    copy.decode_tokens_per_second = seconds(now - recent_.back().first) > 2.0 ? 0.0 : tokens / span;
  }
  return copy;
}

// Under the lock: frees what ended (caching its blocks), admits what fits,
// lists what decodes and which prompt chunks run.
StepPlan Scheduler::plan_step() {
  StepPlan plan;
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    auto& active = slots_[slot];
    if (!active) continue;
    if (active->stream->cancelled() && !active->finished) {
      active->finished = true;
      active->stream->finish("cancelled");
    }
    if (!active->finished) continue;
    plan.release.push_back(static_cast<int32_t>(slot));
    kv_used_ -= active->kv_bytes;
    // Its prompt and answer, for the conversation's next turn: saved before the release frees them.
    if (const Sequence* sequence = executor_.sequence(static_cast<int>(slot)); sequence && active->started)
      cache_prefix(static_cast<int32_t>(slot), sequence->tokens(), plan);
    active.reset();
  }
  while (!waiting_.empty() && waiting_.front().stream->cancelled()) {
    waiting_.front().stream->finish("cancelled");
    waiting_.pop_front();
  }
  // Whatever finished its prompt in an earlier step decodes (its first token is drawn), and
  // its prompt is cached for requests that share it while it still runs.
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    const auto& active = slots_[slot];
    if (!active || active->prefilled != static_cast<int>(active->request.prompt.size())) continue;
    plan.decode.push_back(static_cast<int32_t>(slot));
    if (!active->prompt_cached) {
      active->prompt_cached = true;
      cache_prefix(static_cast<int32_t>(slot), active->request.prompt, plan);
    }
  }
  plan_admissions(plan);
  plan_prefill(plan);
  if (prefix_) prefix_->release_holds();
  return plan;
}

// Waiting requests take free slots while their KV fits (cached blocks give
// way); a cached prefix, whole blocks of all but the prompt's last token
// (which must run to draw the first token), is copied instead of prefilled.
void Scheduler::plan_admissions(StepPlan& plan) {
  const size_t budget = options_.kv_budget_bytes;
  for (size_t slot = 0; slot < slots_.size() && !waiting_.empty(); ++slot) {
    if (slots_[slot]) continue;
    Waiting& next = waiting_.front();
    const int capacity = capacity_for(next.request);
    const size_t bytes = static_cast<size_t>(capacity) * kv_per_position_ + state_per_sequence_;
    if (budget > 0 && kv_used_ + bytes > budget) break;
    std::vector<int32_t> reuse;
    if (prefix_) {
      const auto& prompt = next.request.prompt;
      reuse = prefix_->lookup(prompt, static_cast<int>(prompt.size()) - 1);
      if (budget > 0 && !prefix_->shrink_to(budget - kv_used_ - bytes, plan.drop)) break;
      prefix_->count_lookup(static_cast<int>(reuse.size()));
    }
    auto active = std::make_unique<Active>();
    active->stream = next.stream;
    active->request = std::move(next.request);
    active->kv_bytes = bytes;
    active->submitted = next.submitted;
    active->order = admitted_++;
    active->prefilled = static_cast<int>(reuse.size()) * kPrefixBlockTokens;
    active->reuse = std::move(reuse);
    waiting_.pop_front();
    kv_used_ += bytes;
    counters_.prompt_tokens += active->request.prompt.size();
    slots_[slot] = std::move(active);
  }
}

// The next chunks of the oldest unfinished prompts, prefill_chunk tokens in all.
void Scheduler::plan_prefill(StepPlan& plan) {
  std::vector<int32_t> feeding;
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    const auto& active = slots_[slot];
    if (active && active->prefilled < static_cast<int>(active->request.prompt.size())) {
      feeding.push_back(static_cast<int32_t>(slot));
    }
  }
  std::sort(feeding.begin(), feeding.end(), [&](int32_t a, int32_t b) { return slots_[a]->order < slots_[b]->order; });
  long budget = options_.prefill_chunk > 0 ? options_.prefill_chunk : std::numeric_limits<long>::max();
  for (int32_t slot : feeding) {
    if (budget <= 0) break;
    Active& a = *slots_[slot];
    const auto& prompt = a.request.prompt;
    const long left = static_cast<long>(prompt.size()) - a.prefilled;
    int take = static_cast<int>(std::min(left, budget));
    // A chunk ends on the prompt's last block boundary, where the executor keeps the
    // linear-attention state for the prompt's cached blocks.
    const int boundary = static_cast<int>(prompt.size()) / kPrefixBlockTokens * kPrefixBlockTokens;
    if (linear_state_bytes_ > 0 && a.prefilled < boundary && a.prefilled + take > boundary) take = boundary - a.prefilled;
    PrefillOp op;
    op.slot = slot;
    op.start = !a.started;
    op.last = take == left;
    op.capacity = op.start ? capacity_for(a.request) : 0;
    op.sampling = a.request.sampling;
    op.tokens.assign(prompt.begin() + a.prefilled, prompt.begin() + a.prefilled + take);
    if (op.start) {
      op.reuse = std::move(a.reuse);
      op.constraint = a.request.constraint;
    }
    a.started = true;
    a.prefilled += take;
    budget -= take;
    plan.prefill.push_back(std::move(op));
  }
}

void Scheduler::accept_token(int slot, int32_t token, const DrawLogprobs* logprobs) {
  Active& a = *slots_[slot];
  if (a.finished) return;
  const auto& stops = a.request.stop_ids;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
    a.finished = true;
    a.stream->finish("stop");
    return;
  }
  a.stream->push(token, a.request.sampling.logprobs >= 0 ? logprobs : nullptr);
  ++a.generated;
  ++counters_.generated_tokens;
  const Sequence* sequence = executor_.sequence(slot);
  if (executor_.constraint_closed(slot)) {  // a whole JSON value: only the end may follow
    a.finished = true;
    a.stream->finish("stop");
  } else if (a.generated >= a.request.max_tokens) {
    a.finished = true;
    a.stream->finish("length");
  } else if (sequence->length() >= sequence->capacity()) {
    a.finished = true;
    a.stream->finish(sequence->capacity() >= model_.max_context() ? "context" : "length");
  }
}

void Scheduler::deliver(const StepPlan& plan, const std::vector<int32_t>& drawn,
                        const std::vector<DrawLogprobs>& logprobs) {
  std::lock_guard lock(mutex_);
  size_t i = 0;
  auto logprobs_of = [&](size_t draw) { return draw < logprobs.size() ? &logprobs[draw] : nullptr; };
  const auto now = Clock::now();
  for (const auto& op : plan.prefill) {  // a prompt's last chunk draws the request's first token
    if (!op.last) continue;
    counters_.time_to_first_token_s.push_back(seconds(now - slots_[op.slot]->submitted));
    accept_token(op.slot, drawn[i], logprobs_of(i));
    ++i;
  }
  for (int32_t slot : plan.decode) {
    accept_token(slot, drawn[i], logprobs_of(i));
    ++i;
  }
  ++counters_.steps;
  recent_.emplace_back(now, static_cast<int>(drawn.size()));
  while (!recent_.empty() && now - recent_.front().first > kGaugeWindow) recent_.pop_front();
}

void Scheduler::finish_all(const std::string& reason, const std::string& error) {
  std::lock_guard lock(mutex_);
  for (auto& active : slots_) {
    if (active) active->stream->finish(reason, error);
    active.reset();
  }
  for (auto& w : waiting_) w.stream->finish(reason, error);
  waiting_.clear();
  kv_used_ = 0;
}

Expected<void> Scheduler::run(const std::atomic<bool>& stop) {
  Communicator& comm = model_.comm();
  while (true) {
    StepPlan plan;
    {
      std::unique_lock lock(mutex_);
      if (!stop) {
        plan = plan_step();
        if (plan.empty()) {
          work_.wait_for(lock, std::chrono::milliseconds(50));
          continue;
        }
      } else {
        plan.shutdown = true;
      }
    }
    if (plan.shutdown) {
      finish_all("cancelled", "the server is shutting down");
      if (auto shared = share_plan(comm, plan); !shared) return shared.error();
      return {};
    }
    if (auto shared = share_plan(comm, plan); !shared) return shared.error();
    auto drawn = executor_.run(plan);
    if (!drawn) {
      finish_all("error", drawn.error().message);
      return drawn.error();
    }
    deliver(plan, *drawn, executor_.logprobs());
  }
}

Expected<void> Scheduler::follow(Model& model, int max_batch) {
  StepExecutor executor(model, max_batch);
  while (true) {
    StepPlan plan;
    if (auto shared = share_plan(model.comm(), plan); !shared) return shared.error();
    if (plan.shutdown) return {};
    auto drawn = executor.run(plan);
    if (!drawn) return drawn.error();
  }
}

}  // namespace xft::engine::serve
