#include "engine/serve/step_plan.h"

#include <algorithm>
#include <cstring>

namespace xft::engine::serve {

namespace {

class Writer {
 public:
  template <class T>
  void put(const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_ids(const std::vector<int32_t>& ids) {
    put(static_cast<int32_t>(ids.size()));
    for (int32_t id : ids) put(id);
  }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <class T>
  bool get(T& value) {
    if (at_ + sizeof(T) > bytes_.size()) return false;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool get_ids(std::vector<int32_t>& ids) {
    int32_t n = 0;
    if (!get(n) || n < 0 || static_cast<size_t>(n) * 4 > bytes_.size() - at_) return false;
    ids.resize(static_cast<size_t>(n));
    for (auto& id : ids) get(id);
    return true;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

void put_sampling(Writer& w, const SamplingParams& s) {
  w.put(static_cast<uint8_t>(s.greedy));
  w.put(s.temperature);
  w.put(static_cast<int32_t>(s.top_k));
  w.put(s.top_p);
  w.put(s.repetition_penalty);
  w.put(s.seed);
  w.put(static_cast<int32_t>(s.logprobs));
}

bool get_sampling(Reader& r, SamplingParams& s) {
  uint8_t greedy = 0;
  int32_t top_k = 0;
  int32_t logprobs = -1;
  bool ok = r.get(greedy) && r.get(s.temperature) && r.get(top_k) && r.get(s.top_p) &&
            r.get(s.repetition_penalty) && r.get(s.seed) && r.get(logprobs);
  s.greedy = greedy != 0;
  s.top_k = top_k;
  s.logprobs = logprobs;
  return ok;
}

}  // namespace

std::vector<uint8_t> encode_plan(const StepPlan& plan) {
  Writer w;
  w.put(static_cast<uint8_t>(plan.shutdown));
  w.put_ids(plan.drop);
  w.put(static_cast<int32_t>(plan.save.size()));
  for (const auto& save : plan.save) {
    w.put(save.slot);
    w.put(save.position);
    w.put(save.block);
    w.put(static_cast<int32_t>(save.state));
  }
  w.put_ids(plan.release);
  w.put(static_cast<int32_t>(plan.prefill.size()));
  for (const auto& op : plan.prefill) {
    w.put(op.slot);
    w.put(static_cast<uint8_t>(op.start));
    w.put(static_cast<uint8_t>(op.last));
    w.put(op.capacity);
    put_sampling(w, op.sampling);
    w.put_ids(op.tokens);
    w.put_ids(op.reuse);
  }
  w.put_ids(plan.decode);
  return std::move(w.bytes);
}

int StepPlan::draws() const {
  int n = static_cast<int>(decode.size());
  for (const auto& op : prefill) n += op.last ? 1 : 0;
  return n;
}

Expected<StepPlan> decode_plan(std::span<const uint8_t> bytes) {
  StepPlan plan;
  Reader r(bytes);
  uint8_t shutdown = 0;
  int32_t saves = 0, prefills = 0;
  bool ok = r.get(shutdown) && r.get_ids(plan.drop) && r.get(saves) && saves >= 0 &&
            static_cast<size_t>(saves) <= bytes.size();
  for (int32_t i = 0; ok && i < saves; ++i) {
    BlockSave save;
    int32_t state = 0;
    ok = r.get(save.slot) && r.get(save.position) && r.get(save.block) && r.get(state) && (state == 0 || state == 1);
    save.state = state == 1;
    plan.save.push_back(save);
  }
  ok = ok && r.get_ids(plan.release) && r.get(prefills) && prefills >= 0 &&
       static_cast<size_t>(prefills) <= bytes.size();
  for (int32_t i = 0; ok && i < prefills; ++i) {
    PrefillOp op;
    uint8_t start = 0, last = 0;
    ok = r.get(op.slot) && r.get(start) && r.get(last) && r.get(op.capacity) && get_sampling(r, op.sampling) &&
         r.get_ids(op.tokens) && r.get_ids(op.reuse);
    op.start = start != 0;
    op.last = last != 0;
    plan.prefill.push_back(std::move(op));
  }
  ok = ok && r.get_ids(plan.decode) && r.done();
  if (!ok) return make_error("a step plan from rank 0 is truncated or malformed");
  plan.shutdown = shutdown != 0;
  return plan;
}

Expected<void> share_plan(Communicator& comm, StepPlan& plan) {
  if (comm.size() <= 1) return {};
  std::vector<uint8_t> bytes;
  if (comm.rank() == 0) bytes = encode_plan(plan);
  int64_t size = static_cast<int64_t>(bytes.size());
  comm.broadcast_when_ready(&size, sizeof size, 0);  // followers wait here between requests
  bytes.resize(static_cast<size_t>(size));
  comm.broadcast(bytes.data(), bytes.size(), 0);
  if (comm.rank() == 0) return {};
  auto decoded = decode_plan(bytes);
  if (!decoded) return decoded.error();
  plan = std::move(*decoded);
  return {};
}

StepExecutor::StepExecutor(Model& model, int slots)
    : model_(model), linear_state_(model.new_sequence(1)->has_linear_state()), slots_(static_cast<size_t>(slots)) {}

Expected<void> StepExecutor::check(const StepPlan& plan) const {
  auto valid = [&](int32_t slot) { return slot >= 0 && slot < slots(); };
  for (int32_t slot : plan.release)
    if (!valid(slot)) return make_error("step plan: release of slot " + std::to_string(slot) + " out of range");
  std::vector<bool> used(slots_.size(), false);
  auto once = [&](int32_t slot) -> Expected<void> {
    if (used[slot]) return make_error("step plan: slot " + std::to_string(slot) + " appears twice");
    used[slot] = true;
    return {};
  };
  for (const auto& op : plan.prefill) {
    if (!valid(op.slot)) return make_error("step plan: prefill of slot " + std::to_string(op.slot) + " out of range");
    if (auto ok = once(op.slot); !ok) return ok;
    if (op.tokens.empty()) return make_error("step plan: empty prompt chunk for slot " + std::to_string(op.slot));
    const bool released = std::find(plan.release.begin(), plan.release.end(), op.slot) != plan.release.end();
    const bool occupied = slots_[op.slot].sequence && !released;
    if (op.start && occupied) return make_error("step plan: slot " + std::to_string(op.slot) + " is busy");
    if (!op.start && !occupied) return make_error("step plan: slot " + std::to_string(op.slot) + " is empty");
  }
  for (int32_t slot : plan.decode) {
    if (!valid(slot) || !slots_[slot].sequence) return make_error("step plan: slot " + std::to_string(slot) + " is empty");
    if (auto ok = once(slot); !ok) return ok;
  }
  return check_blocks(plan);
}

int StepExecutor::blocks() const {
  return static_cast<int>(std::count_if(blocks_.begin(), blocks_.end(), [](const auto& b) { return b != nullptr; }));
}

// Ids stay below this: a malformed plan cannot make a rank allocate a huge table.
constexpr int32_t kMaxBlockId = 1 << 24;

Expected<void> StepExecutor::check_blocks(const StepPlan& plan) const {
  std::vector<int32_t> dropped = plan.drop, filled;
  std::sort(dropped.begin(), dropped.end());
  for (size_t i = 0; i < dropped.size(); ++i) {
    if (!has_block(dropped[i]) || (i > 0 && dropped[i] == dropped[i - 1]))
      return make_error("step plan: drop of block " + std::to_string(dropped[i]) + " that is not cached");
  }
  auto is_dropped = [&](int32_t id) { return std::binary_search(dropped.begin(), dropped.end(), id); };
  for (const auto& save : plan.save) {
    const std::string what = "step plan: block " + std::to_string(save.block);
    if (save.block < 0 || save.block >= kMaxBlockId) return make_error(what + " out of range");
    if ((has_block(save.block) && !is_dropped(save.block)) ||
        std::find(filled.begin(), filled.end(), save.block) != filled.end())
      return make_error(what + " is filled while in use");
    const bool valid = save.slot >= 0 && save.slot < slots();
    const Sequence* from = valid ? slots_[save.slot].sequence.get() : nullptr;
    if (!from || save.position < 0 || save.position + kPrefixBlockTokens > from->length())
      return make_error(what + ": slot " + std::to_string(save.slot) + " has no positions " +
                        std::to_string(save.position) + "+" + std::to_string(kPrefixBlockTokens));
    if (save.state && slots_[save.slot].boundary_length != save.position + kPrefixBlockTokens)
      return make_error(what + ": slot " + std::to_string(save.slot) + " kept no linear-attention state at " +
                        std::to_string(save.position + kPrefixBlockTokens));
    filled.push_back(save.block);
  }
  for (const auto& op : plan.prefill) {
    if (!op.start && !op.reuse.empty()) return make_error("step plan: reused blocks on a prompt's later chunk");
    for (int32_t id : op.reuse) {
      const bool cached = has_block(id) && !is_dropped(id);
      if (!cached && std::find(filled.begin(), filled.end(), id) == filled.end())
        return make_error("step plan: reuse of block " + std::to_string(id) + " that is not cached");
    }
    if (!op.reuse.empty() && linear_state_) {
      const int32_t end = op.reuse.back();
      const auto saved = std::find_if(plan.save.begin(), plan.save.end(), [&](const BlockSave& s) { return s.block == end; });
      const bool kept = saved != plan.save.end() ? saved->state
                                                 : has_block(end) && !is_dropped(end) && !block_states_[end].empty();
      if (!kept) return make_error("step plan: reuse ends on block " + std::to_string(end) + ", which kept no linear-attention state");
    }
  }
  return {};
}

Expected<void> StepExecutor::apply_blocks(const StepPlan& plan) {
  for (int32_t id : plan.drop) {
    blocks_[id].reset();
    block_states_[id].clear();
  }
  for (const auto& save : plan.save) {
    if (save.block >= static_cast<int32_t>(blocks_.size())) blocks_.resize(save.block + 1);
    if (save.block >= static_cast<int32_t>(block_states_.size())) block_states_.resize(save.block + 1);
    auto block = model_.new_sequence(kPrefixBlockTokens);
    block->drop_linear_states();
    if (auto copied = block->append_copy(*slots_[save.slot].sequence, save.position, kPrefixBlockTokens); !copied)
      return copied.error();
    blocks_[save.block] = std::move(block);
    block_states_[save.block] = save.state ? slots_[save.slot].boundary : Sequence::LinearStates{};
  }
  return {};
}

Expected<void> StepExecutor::start_from_blocks(Slot& slot, std::span<const int32_t> reuse) {
  Sequence& sequence = *slot.sequence;
  if (!linear_state_) {
    for (int32_t id : reuse) {
      if (auto copied = sequence.append_copy(*blocks_[id], 0, kPrefixBlockTokens); !copied) return copied.error();
    }
    return {};
  }
  if (reuse.empty()) return {};
  std::vector<const Sequence*> blocks;
  for (int32_t id : reuse) blocks.push_back(blocks_[id].get());
  const auto& state = block_states_[reuse.back()];
  if (auto resumed = sequence.resume(blocks, state); !resumed) return resumed.error();
  slot.boundary = state;
  slot.boundary_length = sequence.length();
  return {};
}

// After a pass: every sequence that stands on a block boundary keeps its linear-attention state there.
void StepExecutor::keep_boundary_states(const StepPlan& plan) {
  auto keep = [&](int32_t index) {
    Slot& slot = slots_[index];
    const int length = slot.sequence->length();
    if (length % kPrefixBlockTokens != 0 || length == slot.boundary_length) return;
    slot.boundary = slot.sequence->linear_states();
    slot.boundary_length = length;
  };
  for (const auto& op : plan.prefill) keep(op.slot);
  for (int32_t slot : plan.decode) keep(slot);
}

Expected<std::vector<int32_t>> StepExecutor::sample(std::span<const int> slots, std::span<const int> rows,
                                                    std::span<float> logits) {
  const Range vocab = model_.partition().vocab;
  std::vector<TokenSampler*> samplers;
  std::vector<float*> row_data;
  std::vector<std::span<const int32_t>> histories;
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots_[slots[i]];
    samplers.push_back(s.sampler.get());
    row_data.push_back(logits.data() + static_cast<size_t>(rows[i]) * vocab.size());
    histories.push_back(s.sequence->tokens());
  }
  // Constrained rows keep their raw logits: the sampler scales rows in place,
  // and a refused draw is made again from the raw logits of the allowed tokens.
  std::vector<std::pair<size_t, std::vector<float>>> raw;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots_[slots[i]].constraint) continue;
    if (!tokens_ || model_.comm().size() > 1)
      return make_error("a constrained request reached an executor without a vocabulary, or on several ranks");
    const float* row = row_data[i];
    raw.emplace_back(i, std::vector<float>(row, row + vocab.size()));
  }
  std::vector<Proposal> proposals;
  auto drawn = sample_batch(model_.comm(), samplers, row_data, vocab.size(), vocab.begin, histories, &logprobs_,
                            raw.empty() ? nullptr : &proposals);
  if (!raw.empty()) redraw_refused(slots, raw, proposals, drawn);
  for (size_t i = 0; i < slots.size(); ++i) slots_[slots[i]].last = drawn[i];
  return drawn;
}

namespace {

// A constrained draw made again over the allowed tokens only: their raw
// logits packed together, so the sampler's work (and its exp) scales with
// what the grammar allows, not the vocabulary. One rank holds every logit
// here (the server constrains one-rank models only). Log-probabilities come
// out over the allowed tokens.
int32_t draw_allowed(TokenSampler& sampler, std::span<const float> raw, const std::vector<uint8_t>& allowed,
                     std::span<const int32_t> history, DrawLogprobs* logprobs) {
  std::vector<int32_t> ids;
  std::vector<float> packed;
  const size_t n = std::min(raw.size(), allowed.size());
  for (size_t id = 0; id < n; ++id) {
    if (!allowed[id]) continue;
    ids.push_back(static_cast<int32_t>(id));
    packed.push_back(raw[id]);
  }
  if (ids.empty()) return -1;
  auto packed_id = [&](int32_t id) {
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return it != ids.end() && *it == id ? static_cast<int32_t>(it - ids.begin()) : -1;
  };
  std::vector<int32_t> packed_history;  // the repetition penalty sees the allowed tokens among them
  for (int32_t id : history) {
    if (int32_t p = packed_id(id); p >= 0) packed_history.push_back(p);
  }
  const Proposal proposal = sampler.propose(packed.data(), static_cast<int>(packed.size()), 0, packed_history);
  const int32_t chosen = sampler.choose({&proposal, 1});
  if (logprobs && sampler.params().logprobs >= 0) {
    *logprobs = sampler.logprobs({&proposal, 1}, chosen);
    logprobs->chosen.id = ids[logprobs->chosen.id];
    for (TokenLogprob& t : logprobs->top) t.id = ids[t.id];
  }
  return ids[chosen];
}

}  // namespace

namespace {

// A greedy draw without penalty or log-probabilities takes the allowed token
// with the highest logit (the lower id on a tie): the first allowed one of the
// sampler's proposal, which holds the best kGreedyTries tokens in that order,
// so they are tested before a whole mask is built.
constexpr int kGreedyTries = 32;

bool takes_greedy_shortcut(const SamplingParams& params) {
  return params.is_greedy() && params.repetition_penalty == 1.0f && params.logprobs < 0;
}

// -1: none of the proposal's candidates is allowed. The proposal is rank 0's,
// which holds the whole vocabulary: structured output runs on one-rank servers.
int32_t first_allowed(const constrain::ConstrainedSequence& constraint, const constrain::TokenTable& table,
                      const Proposal& proposal, int32_t refused) {
  for (int i = 0; i < proposal.count; ++i) {
    const int32_t id = proposal.candidates[i].id;
    if (id != refused && constraint.allows(table, id)) return id;
  }
  return -1;
}

}  // namespace

void StepExecutor::redraw_refused(std::span<const int> slots, std::vector<std::pair<size_t, std::vector<float>>>& raw,
                                  std::span<const Proposal> proposals, std::vector<int32_t>& drawn) {
  // The masks of refused draws are most of a constrained step's cost; each
  // slot's mask, sampler and matcher are its own, so slots run in parallel.
  model_.pool().parallel_for_balanced(static_cast<int>(raw.size()), [&](int begin, int end) {
    std::vector<uint8_t> allowed;
    for (int k = begin; k < end; ++k) {
      const size_t i = raw[k].first;
      Slot& s = slots_[slots[i]];
      if (!s.constraint->allows(*tokens_, drawn[i])) {
        if (takes_greedy_shortcut(s.sampler->params())) {
          if (int32_t token = first_allowed(*s.constraint, *tokens_, proposals[i], drawn[i]); token >= 0) {
            drawn[i] = token;
            s.constraint->accept(*tokens_, drawn[i]);
            continue;
          }
        }
        s.constraint->allowed_tokens(*tokens_, allowed);
        DrawLogprobs* logprobs = i < logprobs_.size() ? &logprobs_[i] : nullptr;
        // No allowed token at all (a vocabulary without single-byte tokens): the draw stands and the answer breaks.
        if (int32_t token = draw_allowed(*s.sampler, raw[k].second, allowed, s.sequence->tokens(), logprobs);
            token >= 0)
          drawn[i] = token;
      }
      s.constraint->accept(*tokens_, drawn[i]);
    }
  });
}

Expected<std::vector<int32_t>> StepExecutor::run(const StepPlan& plan) {
  if (auto ok = check(plan); !ok) return ok.error();
  if (auto ok = apply_blocks(plan); !ok) return ok.error();
  for (int32_t slot : plan.release) slots_[slot] = Slot{};
  // One pass over every chunk; logits row i is chunk i's last token.
  std::vector<Chunk> chunks;
  std::vector<int> slots, rows;
  for (const auto& op : plan.prefill) {
    Slot& s = slots_[op.slot];
    if (op.start) {
      s.sequence = model_.new_sequence(op.capacity);
      const bool greedy_shortcut = op.constraint && takes_greedy_shortcut(op.sampling);
      s.sampler = std::make_unique<TokenSampler>(op.sampling, greedy_shortcut ? kGreedyTries : 1);
      s.constraint = op.constraint ? std::make_unique<constrain::ConstrainedSequence>(op.constraint) : nullptr;
      if (auto resumed = start_from_blocks(s, op.reuse); !resumed) return resumed.error();
    }
    if (op.last) {
      slots.push_back(op.slot);
      rows.push_back(static_cast<int>(chunks.size()));
    }
    chunks.push_back(Chunk{s.sequence.get(), op.tokens});
  }
  for (int32_t slot : plan.decode) {
    Slot& s = slots_[slot];
    slots.push_back(slot);
    rows.push_back(static_cast<int>(chunks.size()));
    chunks.push_back(Chunk{s.sequence.get(), {&s.last, 1}});
  }
  logprobs_.clear();
  if (chunks.empty()) return std::vector<int32_t>{};
  auto logits = model_.forward(chunks);
  if (!logits) return logits.error();
  if (linear_state_) keep_boundary_states(plan);
  if (slots.empty()) return std::vector<int32_t>{};
  return sample(slots, rows, *logits);
}

}  // namespace xft::engine::serve
