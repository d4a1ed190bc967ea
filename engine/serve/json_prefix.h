// Checks JSON text byte by byte as a model writes it, so that a streamed tool
// call's arguments go out only as far as they are known to be valid: after
// each byte it says whether the text so far is a valid prefix, whether the
// value is complete, and whether this is a "safe point", where closing what
// is open (a string value, then every object and array) yields valid JSON.
// Strings must be well-formed UTF-8, as JSON requires and the response
// encoder needs. Bounded: nesting deeper than kMaxDepth is an error.
#pragma once

#include <string>
#include <vector>

namespace xft::engine::serve {

class JsonPrefixScanner {
 public:
  static constexpr int kMaxDepth = 64;

  // One byte; false once the text can no longer be JSON (and from then on).
  bool feed(char c);
  bool failed() const { return state_ == State::Failed; }
  // One whole value was read; the next byte fed must be the caller's, not JSON's.
  bool complete() const { return state_ == State::Done; }
  // The text so far becomes valid JSON by appending closing_suffix().
  bool at_safe_point() const;
  std::string closing_suffix() const;

 private:
  enum class State {
    Value,         // a value must start (whitespace allowed)
    FirstKey,      // just after '{': a key or '}'
    Key,           // after ',' in an object: a key
    AfterKey,      // ':' must come
    FirstItem,     // just after '[': a value or ']'
    AfterValue,    // ',' or the container's closer
    String,
    Escape,
    UnicodeEscape,
    Number,
    Literal,
    Done,
    Failed,
  };
  // Sub-states of a number, as JSON's grammar spells it.
  enum class NumberPart { Sign, Zero, Integer, Dot, Fraction, Exponent, ExponentSign, ExponentDigits };

  bool start_value(char c);
  bool end_value();  // a value just ended: the container's next state
  bool after_value(char c);
  bool number(char c);
  bool fail();
  bool utf8(unsigned char byte);  // a byte >= 0x80 inside a string


  State state_ = State::Value;
  std::vector<char> open_;  // '{' or '['
  bool string_is_key_ = false;
  int hex_left_ = 0;
  // A multi-byte UTF-8 character in a string: continuation bytes still due,
  // and the range the next one must lie in (RFC 3629: no overlong forms, no surrogates).
  int utf8_left_ = 0;
  unsigned char utf8_low_ = 0x80, utf8_high_ = 0xbf;
  NumberPart number_ = NumberPart::Sign;
  std::string literal_left_;  // what "true", "false" or "null" still needs
};

}  // namespace xft::engine::serve
