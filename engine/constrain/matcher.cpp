#include "engine/constrain/matcher.h"

#include <algorithm>
#include <cstring>

namespace xft::engine::constrain {

namespace {

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Longest digit runs: an integer fits an int64 and a double keeps it exact.
constexpr uint32_t kMaxIntegerDigits = 15;
constexpr uint32_t kMaxFractionDigits = 15;
constexpr uint32_t kMaxExponentDigits = 2;

// Narrows the sorted strings [lo, hi) to those whose byte at `pos` is `byte`.
template <class KeyOf>
void narrow(uint32_t& lo, uint32_t& hi, uint32_t pos, uint8_t byte, KeyOf key_of) {
  auto matches = [&](uint32_t i) {
    const std::string& s = key_of(i);
    return s.size() > pos && static_cast<uint8_t>(s[pos]) == byte;
  };
  uint32_t first = lo;
  while (first < hi && !matches(first)) ++first;
  uint32_t last = first;
  while (last < hi && matches(last)) ++last;
  lo = first;
  hi = last;
}

uint64_t property_cost(const Grammar& g, const Property& p) {
  return 1 + p.key.size() + 1 + g.nodes[p.node].min_bytes;  // ',' key ':' value
}

// Bytes of the required properties not given yet, each with its comma.
uint64_t required_cost(const Grammar& g, const Node& node, uint64_t used, int skip = -1) {
  uint64_t total = 0;
  for (size_t i = 0; i < node.properties.size(); ++i) {
    if ((node.required_mask >> i & 1) && !(used >> i & 1) && static_cast<int>(i) != skip)
      total += property_cost(g, node.properties[i]);
  }
  return total;
}

uint64_t literals_remaining(const Grammar& g, const Frame& f) {
  uint64_t least = UINT64_MAX;
  for (uint32_t i = f.lo; i < f.hi; ++i) least = std::min<uint64_t>(least, g.literals[i].size() - f.count);
  return least;
}

uint64_t frame_remaining(const Grammar& g, const Frame& f) {
  const Node& node = g.nodes[f.node];
  if (f.phase == 0) return node.min_bytes;
  switch (node.kind) {
    case NodeKind::Any:
    case NodeKind::AnyOf:
      return node.min_bytes;  // never on the stack: resolved on the first byte
    case NodeKind::Literals:
      return literals_remaining(g, f);
    case NodeKind::Integer:
    case NodeKind::Number:
      return (f.phase == 1 || f.phase == 4 || f.phase == 6 || f.phase == 7) ? 1 : 0;
    case NodeKind::String: {
      const uint64_t chars = f.count < node.min_length ? node.min_length - f.count : 0;
      if (f.phase == 1) return chars + 1;
      if (f.phase == 2) return 1 + chars + 1;
      return f.pending + chars + 1;  // inside \u digits or a UTF-8 sequence
    }
    case NodeKind::Array: {
      const uint64_t item = g.nodes[node.items].min_bytes;
      auto more = [&](uint64_t k) { return k * (1 + item); };
      if (f.phase == 1) return node.min_items == 0 ? 1 : node.min_items * item + (node.min_items - 1) + 1;
      if (f.phase == 2) return more(f.count < node.min_items ? node.min_items - f.count : 0) + 1;
      return item + more(f.count + 1 < node.min_items ? node.min_items - f.count - 1 : 0) + 1;
    }
    case NodeKind::Object: {
      const uint64_t after_value = required_cost(g, node, f.used) + 1;
      auto value_min = [&] { return node.any_keys ? 1u : g.nodes[node.properties[f.current].node].min_bytes; };
      switch (f.phase) {
        case 1: {
          const uint64_t required = required_cost(g, node, f.used);
          return required == 0 ? 1 : required;
        }
        case 2: {
          uint64_t least = UINT64_MAX;
          for (uint32_t i = f.lo; i < f.hi; ++i) {
            if (f.used >> i & 1) continue;
            const Property& p = node.properties[i];
            least = std::min<uint64_t>(least, p.key.size() - f.count + 1 + g.nodes[p.node].min_bytes +
                                                  required_cost(g, node, f.used, static_cast<int>(i)) + 1);
          }
          return least;
        }
        case 3: return 1 + value_min() + after_value;
        case 4:
        case 5: return value_min() + after_value;
        case 6: return after_value;
        default: {  // after ','
          const uint64_t required = required_cost(g, node, f.used);
          if (required > 0) return required;
          if (node.any_keys) return 5;  // "":0}
          uint64_t least = UINT64_MAX;
          for (size_t i = 0; i < node.properties.size(); ++i) {
            if (!(f.used >> i & 1)) least = std::min<uint64_t>(least, property_cost(g, node.properties[i]) - 1 + 1);
          }
          return least;
        }
      }
    }
    case NodeKind::Seq: {
      uint64_t total = 0;
      for (size_t i = f.phase; i < node.children.size(); ++i) total += g.nodes[node.children[i]].min_bytes;
      return total;
    }
    case NodeKind::Choice: {
      if (f.phase == 1) {
        uint64_t least = UINT64_MAX;
        for (uint32_t i = f.lo; i < f.hi; ++i) {
          least = std::min<uint64_t>(least, g.literals[i].size() - f.count +
                                                g.nodes[node.children[i - node.lit_begin]].min_bytes);
        }
        return least;
      }
      if (f.phase == 2) return g.nodes[node.children[f.current]].min_bytes;
      return 0;
    }
  }
  return 0;
}

}  // namespace

MatchState& MatchState::operator=(const MatchState& other) {
  root_ = other.root_;
  depth_ = other.depth_;
  std::memcpy(frames_, other.frames_, sizeof(Frame) * static_cast<size_t>(depth_));
  return *this;
}

MatchState::Step MatchState::start_value(const Grammar& g, int32_t node, uint8_t byte) {
  const int32_t resolved = resolve(g, node, byte);
  if (resolved < 0 || depth_ == kMaxFrames) return Step::Reject;
  frames_[depth_++] = Frame{.node = resolved};
  return Step::Pushed;
}

bool MatchState::advance(const Grammar& g, uint8_t byte) {
  if (root_ >= 0) {
    const int32_t root = root_;
    root_ = -1;
    if (start_value(g, root, byte) != Step::Pushed) return false;
  }
  while (depth_ > 0) {
    switch (feed(g, frames_[depth_ - 1], byte)) {
      case Step::Consumed: return true;
      case Step::Done:
        --depth_;
        pop_finished(g);
        return true;
      case Step::Reject: return false;
      case Step::PassUp: --depth_; break;
      case Step::Pushed: break;  // the new top frame takes the byte
    }
  }
  return false;  // the value is closed: nothing may follow
}

void MatchState::pop_finished(const Grammar& g) {
  // A sequence (or choice) whose last part just closed is closed too: nothing
  // may extend it, so the answer can be over without waiting for another byte.
  while (depth_ > 0) {
    const Frame& top = frames_[depth_ - 1];
    const Node& node = g.nodes[top.node];
    const bool seq_done = node.kind == NodeKind::Seq && top.phase >= node.children.size();
    const bool choice_done = node.kind == NodeKind::Choice && top.phase == 3;
    if (!seq_done && !choice_done) return;
    --depth_;
  }
}

bool MatchState::advance(const Grammar& g, std::string_view bytes) {
  for (char c : bytes) {
    if (!advance(g, static_cast<uint8_t>(c))) return false;
  }
  return true;
}

uint64_t MatchState::remaining(const Grammar& g) const {
  if (root_ >= 0) return g.nodes[root_].min_bytes;
  uint64_t total = 0;
  for (int i = 0; i < depth_; ++i) total += frame_remaining(g, frames_[i]);
  return total;
}

MatchState::Step MatchState::feed(const Grammar& g, Frame& f, uint8_t byte) {
  switch (g.nodes[f.node].kind) {
    case NodeKind::Literals: return feed_literals(g, f, byte);
    case NodeKind::Integer:
    case NodeKind::Number: return feed_number(g, f, byte);
    case NodeKind::String: return feed_string(g, f, byte);
    case NodeKind::Array: return feed_array(g, f, byte);
    case NodeKind::Object: return feed_object(g, f, byte);
    case NodeKind::Seq: return feed_seq(g, f, byte);
    case NodeKind::Choice: return feed_choice(g, f, byte);
    case NodeKind::Any:
    case NodeKind::AnyOf: return Step::Reject;  // resolved before a frame is pushed
  }
  return Step::Reject;
}

MatchState::Step MatchState::feed_literals(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  if (f.phase == 0) {
    f.phase = 1;
    f.lo = static_cast<uint32_t>(node.lit_begin);
    f.hi = static_cast<uint32_t>(node.lit_end);
  }
  uint32_t lo = f.lo, hi = f.hi;
  narrow(lo, hi, f.count, byte, [&](uint32_t i) -> const std::string& { return g.literals[i]; });
  if (lo == hi) return g.literals[f.lo].size() == f.count ? Step::PassUp : Step::Reject;
  f.lo = lo;
  f.hi = hi;
  ++f.count;
  return (hi - lo == 1 && g.literals[lo].size() == f.count) ? Step::Done : Step::Consumed;
}

MatchState::Step MatchState::feed_number(const Grammar& g, Frame& f, uint8_t byte) {
  const bool integer = g.nodes[f.node].kind == NodeKind::Integer;
  auto to = [&](uint8_t phase, uint32_t count) {
    f.phase = phase;
    f.count = count;
    return Step::Consumed;
  };
  // Phases: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.',
  // 5 fraction digits, 6 after 'e', 7 after the exponent's sign, 8 exponent digits.
  switch (f.phase) {
    case 0:
      if (byte == '-') return to(1, 0);
      [[fallthrough]];
    case 1:
      if (byte == '0') return to(2, 1);
      if (is_digit(byte)) return to(3, 1);
      return Step::Reject;
    case 3:
      if (is_digit(byte) && f.count < kMaxIntegerDigits) return to(3, f.count + 1);
      [[fallthrough]];
    case 2:
      if (!integer && byte == '.') return to(4, 0);
      if (!integer && (byte == 'e' || byte == 'E')) return to(6, 0);
      return Step::PassUp;
    case 4:
      return is_digit(byte) ? to(5, 1) : Step::Reject;
    case 5:
      if (is_digit(byte) && f.count < kMaxFractionDigits) return to(5, f.count + 1);
      if (byte == 'e' || byte == 'E') return to(6, 0);
      return Step::PassUp;
    case 6:
      if (byte == '+' || byte == '-') return to(7, 0);
      [[fallthrough]];
    case 7:
      return is_digit(byte) ? to(8, 1) : Step::Reject;
    default:  // 8
      if (is_digit(byte) && f.count < kMaxExponentDigits) return to(8, f.count + 1);
      return Step::PassUp;
  }
}

MatchState::Step MatchState::feed_string(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  // Phases: 0 before the quote, 1 text, 2 after '\', 3 \u hex digits, 4 inside a UTF-8 sequence.
  switch (f.phase) {
    case 0:
      if (byte != '"') return Step::Reject;
      f.phase = 1;
      return Step::Consumed;
    case 1:
      if (byte == '"') return f.count >= node.min_length ? Step::Done : Step::Reject;
      if (f.count >= node.max_length || byte < 0x20) return Step::Reject;
      ++f.count;
      if (byte == '\\') {
        f.phase = 2;
      } else if (byte >= 0x80) {
        // Well-formed UTF-8 only (parsers refuse the rest): no overlongs, surrogates or code points past U+10FFFF.
        if (byte >= 0xC2 && byte <= 0xDF) {
          f.pending = 1;
        } else if (byte >= 0xE0 && byte <= 0xEF) {
          f.pending = 2;
        } else if (byte >= 0xF0 && byte <= 0xF4) {
          f.pending = 3;
        } else {
          return Step::Reject;
        }
        f.lead = (byte == 0xE0 || byte == 0xED || byte == 0xF0 || byte == 0xF4) ? byte : 0;
        f.phase = 4;
      }
      return Step::Consumed;
    case 2:
      if (byte == 'u') {
        f.phase = 3;
        f.pending = 4;
        return Step::Consumed;
      }
      if (std::strchr("\"\\/bfnrt", byte) == nullptr || byte == 0) return Step::Reject;
      f.phase = 1;
      return Step::Consumed;
    case 3:
      // \uD800-\uDFFF would need a pair: the first digit is never d.
      if (!is_hex(byte) || (f.pending == 4 && (byte == 'd' || byte == 'D'))) return Step::Reject;
      if (--f.pending == 0) f.phase = 1;
      return Step::Consumed;
    default: {  // 4
      uint8_t low = 0x80, high = 0xBF;
      if (f.lead == 0xE0) low = 0xA0;
      if (f.lead == 0xED) high = 0x9F;
      if (f.lead == 0xF0) low = 0x90;
      if (f.lead == 0xF4) high = 0x8F;
      if (byte < low || byte > high) return Step::Reject;
      f.lead = 0;
      if (--f.pending == 0) f.phase = 1;
      return Step::Consumed;
    }
  }
}

MatchState::Step MatchState::feed_array(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  auto item = [&] {
    f.phase = 2;
    ++f.count;
    return start_value(g, node.items, byte);
  };
  // Phases: 0 before '[', 1 after '[', 2 after an item, 3 after ',', 4 after ", ".
  switch (f.phase) {
    case 0:
      if (byte != '[') return Step::Reject;
      f.phase = 1;
      return Step::Consumed;
    case 1:
      if (byte == ']') return node.min_items == 0 ? Step::Done : Step::Reject;
      return node.max_items > 0 ? item() : Step::Reject;
    case 2:
      if (byte == ',' && f.count < node.max_items) {
        f.phase = 3;
        return Step::Consumed;
      }
      if (byte == ']' && f.count >= node.min_items) return Step::Done;
      return Step::Reject;
    case 3:
      if (byte == ' ') {
        f.phase = 4;
        return Step::Consumed;
      }
      return item();
    default:
      return item();
  }
}

MatchState::Step MatchState::feed_key(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  uint32_t lo = f.lo, hi = f.hi;
  narrow(lo, hi, f.count, byte, [&](uint32_t i) -> const std::string& { return node.properties[i].key; });
  bool open = false;
  for (uint32_t i = lo; i < hi && !open; ++i) open = !(f.used >> i & 1);
  if (!open) return Step::Reject;
  f.lo = lo;
  f.hi = hi;
  ++f.count;
  // Keys are JSON strings, so none is a prefix of another: a whole key is the only candidate.
  if (node.properties[lo].key.size() == f.count) {
    f.used |= uint64_t{1} << lo;
    f.current = static_cast<uint8_t>(lo);
    f.phase = 3;
  }
  return Step::Consumed;
}

MatchState::Step MatchState::feed_object(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  const bool complete = (f.used & node.required_mask) == node.required_mask;
  auto key = [&] {
    if (byte != '"') return Step::Reject;
    if (node.any_keys) {
      f.phase = 3;
      return start_value(g, g.any_string, byte);
    }
    f.phase = 2;
    f.lo = 0;
    f.hi = static_cast<uint32_t>(node.properties.size());
    f.count = 0;
    return feed_key(g, f, byte);
  };
  auto value = [&] {
    f.phase = 6;
    return start_value(g, node.any_keys ? g.any : node.properties[f.current].node, byte);
  };
  // Phases: 0 before '{', 1 after '{', 2 in a key, 3 after a key, 4 after ':', 5 after ": ",
  // 6 after a value, 7 after ',', 8 after ", ".
  switch (f.phase) {
    case 0:
      if (byte != '{') return Step::Reject;
      f.phase = 1;
      return Step::Consumed;
    case 1:
      if (byte == '}') return complete ? Step::Done : Step::Reject;
      return key();
    case 2: return feed_key(g, f, byte);
    case 3:
      if (byte != ':') return Step::Reject;
      f.phase = 4;
      return Step::Consumed;
    case 4:
      if (byte == ' ') {
        f.phase = 5;
        return Step::Consumed;
      }
      return value();
    case 5: return value();
    case 6: {
      const uint64_t all = node.properties.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << node.properties.size()) - 1;
      if (byte == ',' && (node.any_keys || (f.used & all) != all)) {
        f.phase = 7;
        return Step::Consumed;
      }
      if (byte == '}') return complete ? Step::Done : Step::Reject;
      return Step::Reject;
    }
    case 7:
      if (byte == ' ') {
        f.phase = 8;
        return Step::Consumed;
      }
      return key();
    default: return key();
  }
}

MatchState::Step MatchState::feed_seq(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  if (f.phase >= node.children.size()) return Step::PassUp;
  ++f.phase;
  return start_value(g, node.children[f.phase - 1], byte);
}

MatchState::Step MatchState::feed_choice(const Grammar& g, Frame& f, uint8_t byte) {
  const Node& node = g.nodes[f.node];
  // Phases: 0 start, 1 in a prefix, 2 after the prefix, 3 after its node.
  if (f.phase == 0) {
    f.phase = 1;
    f.lo = static_cast<uint32_t>(node.lit_begin);
    f.hi = static_cast<uint32_t>(node.lit_end);
  }
  if (f.phase == 1) {
    uint32_t lo = f.lo, hi = f.hi;
    narrow(lo, hi, f.count, byte, [&](uint32_t i) -> const std::string& { return g.literals[i]; });
    if (lo == hi) return Step::Reject;
    f.lo = lo;
    f.hi = hi;
    if (g.literals[lo].size() == ++f.count) {
      f.current = static_cast<uint8_t>(lo - node.lit_begin);
      f.phase = 2;
    }
    return Step::Consumed;
  }
  if (f.phase == 2) {
    f.phase = 3;
    return start_value(g, node.children[f.current], byte);
  }
  return Step::PassUp;
}

}  // namespace xft::engine::constrain
