#include "engine/constrain/token_mask.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace xft::engine::constrain {

TokenTable::TokenTable(std::vector<std::string> bytes, std::vector<bool> text)
    : bytes_(std::move(bytes)), text_(std::move(text)) {
  text_.resize(bytes_.size(), false);
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (text_[i] && bytes_[i].empty()) text_[i] = false;
    if (text_[i]) order_.push_back(static_cast<int32_t>(i));
  }
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });
  lcp_.assign(order_.size(), 0);
  for (size_t k = 1; k < order_.size(); ++k) {
    const std::string& a = bytes_[order_[k - 1]];
    const std::string& b = bytes_[order_[k]];
    const size_t n = std::min(a.size(), b.size());
    uint32_t l = 0;
    while (l < n && a[l] == b[l]) ++l;
    lcp_[k] = l;
  }
  for (int32_t id : order_) longest_ = std::max(longest_, bytes_[id].size());
  uint32_t k = 0;
  for (int b = 0; b < 256; ++b) {
    while (k < order_.size() && static_cast<uint8_t>(bytes_[order_[k]][0]) == b) ++k;
    run_end_[b] = k;
  }
}

ConstrainedSequence::ConstrainedSequence(std::shared_ptr<const Constraint> constraint)
    : constraint_(std::move(constraint)), state_(*constraint_->grammar) {}

bool ConstrainedSequence::is_stop(int32_t token) const {
  const auto& stops = constraint_->stop_ids;
  return std::find(stops.begin(), stops.end(), token) != stops.end();
}

uint64_t ConstrainedSequence::tokens_left_after_this() const {
  return static_cast<uint64_t>(std::max(0, constraint_->max_tokens - drawn_ - 1));
}

bool ConstrainedSequence::allows(const TokenTable& table, int32_t token) const {
  if (broken_) return true;  // nothing left to hold the answer to
  const Grammar& g = *constraint_->grammar;
  if (is_stop(token)) return state_.remaining(g) == 0;
  if (!table.is_text(token)) return false;
  MatchState next = state_;
  return next.advance(g, table.bytes(token)) && next.remaining(g) <= tokens_left_after_this();
}

void ConstrainedSequence::allowed_tokens(const TokenTable& table, std::vector<uint8_t>& allowed) const {
  const Grammar& g = *constraint_->grammar;
  allowed.assign(static_cast<size_t>(table.size()), 0);
  if (state_.remaining(g) == 0) {
    for (int32_t stop : constraint_->stop_ids) {
      if (stop >= 0 && stop < table.size()) allowed[stop] = 1;
    }
  }
  const uint64_t budget = tokens_left_after_this();
  // Tokens the grammar takes but that leave more than the budget, and the least they leave:
  // when nothing fits the budget (max_tokens below the bytes of the shortest answer), those
  // that close in fastest are allowed, and the answer ends by length.
  uint64_t least_over = UINT64_MAX;
  bool any_within = false;
  std::vector<std::pair<int32_t, uint64_t>> over;
  thread_local std::vector<MatchState> states;
  if (states.size() < table.longest() + 1) states.resize(table.longest() + 1);
  states[0] = state_;
  const auto& order = table.order();
  const auto& lcp = table.shared_prefix();
  // states[0..valid] hold the matcher after each prefix of the previous token;
  // that token's byte `refused_at` was refused (SIZE_MAX: none).
  size_t valid = 0;
  size_t refused_at = SIZE_MAX;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string& bytes = table.bytes(order[k]);
    const size_t shared = lcp[k];
    if (refused_at != SIZE_MAX && shared > refused_at) continue;  // under the refused prefix
    size_t i = std::min(shared, valid);
    for (; i < bytes.size(); ++i) {
      states[i + 1] = states[i];
      if (!states[i + 1].advance(g, static_cast<uint8_t>(bytes[i]))) break;
    }
    if (i == bytes.size()) {
      valid = bytes.size();
      refused_at = SIZE_MAX;
      const uint64_t left = states[valid].remaining(g);
      if (left <= budget) {
        allowed[order[k]] = 1;
        any_within = true;
      } else if (!any_within && left <= least_over) {
        least_over = left;
        over.emplace_back(order[k], left);
      }
      continue;
    }
    valid = i;
    refused_at = i;
    if (i == 0) k = table.run_end(static_cast<uint8_t>(bytes[0])) - 1;  // the whole first-byte run
  }
  if (any_within) return;
  for (const auto& [id, left] : over) {
    if (left == least_over) allowed[id] = 1;
  }
}

void ConstrainedSequence::accept(const TokenTable& table, int32_t token) {
  ++drawn_;
  if (broken_ || is_stop(token)) return;
  if (!table.is_text(token) || !state_.advance(*constraint_->grammar, table.bytes(token))) broken_ = true;
}

}  // namespace xft::engine::constrain
