// Python's str methods on UTF-8 text with untrusted spans kept: strip with
// Python's notion of whitespace (str.isspace: NBSP, U+3000, U+2028, U+0085,
// U+001F, ...), split, code-point indexing and slicing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_template/value.h"

namespace xft::engine::chat_template {

// Byte offsets where each code point starts, plus the total size at the end.
std::vector<size_t> code_point_starts(std::string_view s);
size_t code_point_count(std::string_view s);

enum class StripSide { Both, Left, Right };
// chars: nullopt strips whitespace; otherwise the code points it holds.
Text strip(const Text& t, StripSide side, const std::optional<std::string>& chars);
// sep: nullopt splits on runs of whitespace, dropping empty pieces. max_split < 0: no limit.
std::vector<Text> split(const Text& t, const std::optional<std::string>& sep, int64_t max_split);
// Python's s[start:stop:step] on code points (missing bounds as nullopt).
Text slice(const Text& t, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step);
// Python's s[i] (negative from the end); nullopt when out of range.
std::optional<Text> char_at(const Text& t, int64_t index);
std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);
// Fails once the result would pass max_bytes.
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                        size_t max_bytes);

// Resolves Python slice bounds for a sequence of `length` items into the
// indices the slice visits.
std::vector<int64_t> slice_indices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   int64_t step);

}  // namespace xft::engine::chat_template
