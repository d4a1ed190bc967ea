// A byte-level pushdown matcher over a Grammar: the state is a fixed-size
// stack of frames (one per open value), so copying it is a memcpy of the
// frames in use and testing a token is copy + advance over its bytes.
//
// remaining() is the exact fewest bytes that complete the answer from a
// state. Every byte of an answer that can still complete has a single-byte
// token in a byte-level vocabulary, so a token is safe under a budget of
// `left` further tokens when remaining() after it is at most `left`: that is
// how the answer is steered to close before max_tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "engine/constrain/grammar.h"

namespace xft::engine::constrain {

// Values nested deeper than this (Any values inside the schema's) are refused byte by byte.
inline constexpr int kMaxFrames = 40;

struct Frame {
  int32_t node = -1;
  uint8_t phase = 0;
  uint8_t pending = 0;  // String: UTF-8 continuation bytes still to come (or \u hex digits)
  uint8_t lead = 0;     // String: the UTF-8 lead byte whose second byte comes next (0: none)
  uint8_t current = 0;  // Object: the property whose value comes; Choice: the prefix chosen
  uint32_t count = 0;   // String: code points; Array: items; Literals/keys/Choice: bytes matched
  uint32_t lo = 0, hi = 0;  // Literals/keys/Choice: the candidates still matching, [lo, hi) of grammar.literals or properties
  uint64_t used = 0;        // Object: properties given
  bool operator==(const Frame&) const = default;
};

class MatchState {
 public:
  MatchState() = default;
  explicit MatchState(const Grammar& grammar) : root_(grammar.root) {}
  MatchState(const MatchState& other) { *this = other; }
  MatchState& operator=(const MatchState& other);

  // Feeds one byte; false (and the state is then unusable) when the grammar refuses it.
  bool advance(const Grammar& grammar, uint8_t byte);
  bool advance(const Grammar& grammar, std::string_view bytes);
  // The fewest bytes that complete the answer; 0: it may end here.
  uint64_t remaining(const Grammar& grammar) const;
  // The whole value is closed: no byte may follow.
  bool closed() const { return root_ < 0 && depth_ == 0; }
  int depth() const { return depth_; }
  bool operator==(const MatchState& other) const {
    return root_ == other.root_ && depth_ == other.depth_ && std::equal(frames_, frames_ + depth_, other.frames_);
  }

 private:
  void pop_finished(const Grammar& grammar);
  enum class Step { Consumed, Done, Reject, PassUp, Pushed };
  Step feed(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_literals(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_number(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_string(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_array(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_object(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_key(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_seq(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step feed_choice(const Grammar& grammar, Frame& frame, uint8_t byte);
  Step start_value(const Grammar& grammar, int32_t node, uint8_t byte);

  int32_t root_ = -1;  // the root node until its first byte, then -1
  int32_t depth_ = 0;
  Frame frames_[kMaxFrames];
};

}  // namespace xft::engine::constrain
