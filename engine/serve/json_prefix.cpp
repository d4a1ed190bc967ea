#include "engine/serve/json_prefix.h"

namespace xft::engine::serve {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

bool JsonPrefixScanner::fail() {
  state_ = State::Failed;
  return false;
}

bool JsonPrefixScanner::end_value() {
  state_ = open_.empty() ? State::Done : State::AfterValue;
  return true;
}

bool JsonPrefixScanner::start_value(char c) {
  switch (c) {
    case '{':
    case '[':
      if (static_cast<int>(open_.size()) >= kMaxDepth) return fail();
      open_.push_back(c);
      state_ = c == '{' ? State::FirstKey : State::FirstItem;
      return true;
    case '"':
      string_is_key_ = false;
      state_ = State::String;
      return true;
    case 't': literal_left_ = "rue"; state_ = State::Literal; return true;
    case 'f': literal_left_ = "alse"; state_ = State::Literal; return true;
    case 'n': literal_left_ = "ull"; state_ = State::Literal; return true;
    default: break;
  }
  if (c == '-' || is_digit(c)) {
    number_ = c == '-' ? NumberPart::Sign : c == '0' ? NumberPart::Zero : NumberPart::Integer;
    state_ = State::Number;
    return true;
  }
  return fail();
}

bool JsonPrefixScanner::after_value(char c) {
  if (is_ws(c)) return true;
  const char open = open_.back();
  if (c == ',') {
    state_ = open == '{' ? State::Key : State::Value;
    return true;
  }
  if ((open == '{' && c == '}') || (open == '[' && c == ']')) {
    open_.pop_back();
    return end_value();
  }
  return fail();
}

bool JsonPrefixScanner::utf8(unsigned char byte) {
  if (utf8_left_ > 0) {
    if (byte < utf8_low_ || byte > utf8_high_) return fail();
    --utf8_left_;
    utf8_low_ = 0x80;
    utf8_high_ = 0xbf;
    return true;
  }
  utf8_low_ = 0x80;
  utf8_high_ = 0xbf;
  if (byte >= 0xc2 && byte <= 0xdf) {
    utf8_left_ = 1;
  } else if (byte >= 0xe0 && byte <= 0xef) {
    utf8_left_ = 2;
    if (byte == 0xe0) utf8_low_ = 0xa0;
    if (byte == 0xed) utf8_high_ = 0x9f;
  } else if (byte >= 0xf0 && byte <= 0xf4) {
    utf8_left_ = 3;
    if (byte == 0xf0) utf8_low_ = 0x90;
    if (byte == 0xf4) utf8_high_ = 0x8f;
  } else {
    return fail();
  }
  return true;
}

// A byte after a number's digits that is no part of it ends the number and is read again.
bool JsonPrefixScanner::number(char c) {
  const bool digit = is_digit(c);
  switch (number_) {
    case NumberPart::Sign:
      if (!digit) return fail();
      number_ = c == '0' ? NumberPart::Zero : NumberPart::Integer;
      return true;
    case NumberPart::Zero:
    case NumberPart::Integer:
      if (digit && number_ == NumberPart::Integer) return true;
      if (c == '.') { number_ = NumberPart::Dot; return true; }
      if (c == 'e' || c == 'E') { number_ = NumberPart::Exponent; return true; }
      if (digit) return fail();  // a leading zero
      break;
    case NumberPart::Dot:
      if (!digit) return fail();
      number_ = NumberPart::Fraction;
      return true;
    case NumberPart::Fraction:
      if (digit) return true;
      if (c == 'e' || c == 'E') { number_ = NumberPart::Exponent; return true; }
      break;
    case NumberPart::Exponent:
      if (c == '+' || c == '-') { number_ = NumberPart::ExponentSign; return true; }
      [[fallthrough]];
    case NumberPart::ExponentSign:
      if (!digit) return fail();
      number_ = NumberPart::ExponentDigits;
      return true;
    case NumberPart::ExponentDigits:
      if (digit) return true;
      break;
  }
  if (open_.empty()) return fail();  // a bare number never knows it ended: callers stream objects
  state_ = State::AfterValue;
  return after_value(c);
}

bool JsonPrefixScanner::feed(char c) {
  const auto byte = static_cast<unsigned char>(c);
  switch (state_) {
    case State::Failed:
    case State::Done:
      return fail();
    case State::Value:
      return is_ws(c) || start_value(c);
    case State::FirstItem:
      if (is_ws(c)) return true;
      if (c == ']') {
        open_.pop_back();
        return end_value();
      }
      return start_value(c);
    case State::FirstKey:
    case State::Key:
      if (is_ws(c)) return true;
      if (c == '}' && state_ == State::FirstKey) {
        open_.pop_back();
        return end_value();
      }
      if (c != '"') return fail();
      string_is_key_ = true;
      state_ = State::String;
      return true;
    case State::AfterKey:
      if (is_ws(c)) return true;
      if (c != ':') return fail();
      state_ = State::Value;
      return true;
    case State::AfterValue:
      return after_value(c);
    case State::String:
      if (byte >= 0x80 || utf8_left_ > 0) return utf8(byte);
      if (c == '\\') {
        state_ = State::Escape;
        return true;
      }
      if (c == '"') {
        if (string_is_key_) {
          state_ = State::AfterKey;
          return true;
        }
        return end_value();
      }
      return byte >= 0x20 || fail();
    case State::Escape:
      if (c == 'u') {
        hex_left_ = 4;
        state_ = State::UnicodeEscape;
        return true;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't') return fail();
      state_ = State::String;
      return true;
    case State::UnicodeEscape:
      if (!is_hex(c)) return fail();
      if (--hex_left_ == 0) state_ = State::String;
      return true;
    case State::Number:
      return number(c);
    case State::Literal:
      if (literal_left_.empty() || c != literal_left_.front()) return fail();
      literal_left_.erase(0, 1);
      return literal_left_.empty() ? end_value() : true;
  }
  return fail();
}

bool JsonPrefixScanner::at_safe_point() const {
  switch (state_) {
    case State::FirstKey:
    case State::FirstItem:
    case State::AfterValue:
    case State::Done:
      return true;
    case State::String:
      return !string_is_key_ && utf8_left_ == 0;
    case State::Number:
      return number_ == NumberPart::Zero || number_ == NumberPart::Integer || number_ == NumberPart::Fraction ||
             number_ == NumberPart::ExponentDigits;
    default:
      return false;
  }
}

std::string JsonPrefixScanner::closing_suffix() const {
  std::string suffix = state_ == State::String ? "\"" : "";
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) suffix += *it == '{' ? '}' : ']';
  return suffix;
}

}  // namespace xft::engine::serve
