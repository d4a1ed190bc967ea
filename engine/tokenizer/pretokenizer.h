// Qwen's pre-tokenizer: splits text into the pieces that BPE then encodes
// one by one. A hand-written scanner equivalent to the regex of Qwen2/3's
// tokenizer.json (and Qwen1's tiktoken):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// and to Qwen3.5's, which writes [\p{L}\p{M}]+ for \p{L}+ and
// [^\s\p{L}\p{M}\p{N}]+ for the punctuation run: a combining mark stays with
// the letters before it instead of starting a punctuation piece.
// Every byte of the text lands in exactly one piece, in order.
#pragma once

#include <string_view>
#include <vector>

namespace xft::engine {

inline constexpr std::string_view kQwenSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

inline constexpr std::string_view kQwen35SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class SplitPattern { qwen2, qwen35 };

// Appends the pieces of `text` (views into it) to `pieces`.
void split_qwen_pieces(std::string_view text, std::vector<std::string_view>& pieces,
                       SplitPattern pattern = SplitPattern::qwen2);

}  // namespace xft::engine
