// A minimal JSON reader for the two huge members of a tokenizer.json
// (model.vocab: ~150k entries, model.merges: ~150k pairs). Building a DOM for
// them costs seconds; scanning them in place costs tens of milliseconds. The
// rest of the file (small) still goes through nlohmann::json.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xft::engine::json_scan {

size_t skip_space(std::string_view text, size_t pos);
// Parses the string literal at `pos` (which must be '"') into `out`; returns
// the position after the closing quote, or npos if malformed.
size_t read_string(std::string_view text, size_t pos, std::string& out);
// Position after the JSON value at `pos`, or npos if malformed/truncated.
size_t skip_value(std::string_view text, size_t pos);

// Where a member's value lies in the text: [begin, end).
struct Span {
  size_t begin = std::string_view::npos;
  size_t end = std::string_view::npos;
  bool found() const { return begin != std::string_view::npos; }
};
// The value of `key` in the object at `pos`; not found when the key is
// missing, or the object is malformed (`malformed` is then set).
Span find_member(std::string_view text, size_t pos, std::string_view key, bool& malformed);

}  // namespace xft::engine::json_scan
