// Qwen's pre-tokenizer: splits text into the pieces that BPE then encodes
// one by one. A hand-written scanner equivalent to the regex of Qwen's
// tokenizer.json (and Qwen1's tiktoken):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Every byte of the text lands in exactly one piece, in order.
#pragma once

#include <string_view>
#include <vector>

namespace xft::engine {

inline constexpr std::string_view kQwenSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Appends the pieces of `text` (views into it) to `pieces`.
void split_qwen_pieces(std::string_view text, std::vector<std::string_view>& pieces);

}  // namespace xft::engine
