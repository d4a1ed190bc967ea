// GPT-2's byte-level alphabet: each byte is shown as a printable code point so
// that vocabularies can be stored as text ("Ġ" is the byte 0x20). The
// tokenizer works on raw bytes; this converts the stored vocabulary.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xft::engine {

// The raw bytes a byte-level token string stands for; nullopt when it holds
// a code point outside the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view token);
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace xft::engine
