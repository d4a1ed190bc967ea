// Token masks over a vocabulary: which tokens a grammar allows next.
//
// The table is built once per vocabulary: the text tokens sorted by their
// bytes, each with the length of the prefix it shares with the one before
// (so a walk reuses the matcher states of the shared prefix, like a walk of
// a trie, and skips every token under a refused prefix), and where each
// first byte's run begins (a refused first byte skips its whole run).
//
// A sequence tests the token the sampler drew first (one copy and a few
// bytes); only when the grammar refuses it is the whole mask computed and the
// token drawn again from the allowed tokens' logits.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/constrain/grammar.h"
#include "engine/constrain/matcher.h"

namespace xft::engine::constrain {

class TokenTable {
 public:
  // bytes[i]: token i's bytes; text[i]: may appear in an answer (control tokens may not).
  TokenTable(std::vector<std::string> bytes, std::vector<bool> text);
  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[id]; }
  bool is_text(int32_t id) const { return id >= 0 && id < size() && text_[id]; }
  const std::vector<int32_t>& order() const { return order_; }
  const std::vector<uint32_t>& shared_prefix() const { return lcp_; }
  // order() index where the tokens starting with byte b end.
  uint32_t run_end(uint8_t b) const { return run_end_[b]; }
  size_t longest() const { return longest_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> text_;
  std::vector<int32_t> order_;
  std::vector<uint32_t> lcp_;
  std::array<uint32_t, 256> run_end_{};
  size_t longest_ = 0;
};

// What a request is held to.
struct Constraint {
  std::shared_ptr<const Grammar> grammar;
  std::vector<int32_t> stop_ids;  // may end the answer once it is complete
  int max_tokens = 0;             // the answer closes within this many tokens
};

class ConstrainedSequence {
 public:
  ConstrainedSequence(std::shared_ptr<const Constraint> constraint);
  // Whether `token` may come next and leaves room to complete within max_tokens (true
  // once broken).
  bool allows(const TokenTable& table, int32_t token) const;
  // allowed[id] for every token of the table (stop ids included): the tokens allows() takes;
  // when none fits the budget, the grammar's tokens that leave the fewest bytes to complete.
  void allowed_tokens(const TokenTable& table, std::vector<uint8_t>& allowed) const;
  void accept(const TokenTable& table, int32_t token);
  // Nothing may follow: the answer is a whole value.
  bool closed() const { return !broken_ && state_.closed(); }
  bool broken() const { return broken_; }
  const MatchState& state() const { return state_; }

 private:
  bool is_stop(int32_t token) const;
  uint64_t tokens_left_after_this() const;

  std::shared_ptr<const Constraint> constraint_;
  MatchState state_;
  int drawn_ = 0;
  bool broken_ = false;  // a token the grammar refused was taken (no allowed token existed)
};

}  // namespace xft::engine::constrain
