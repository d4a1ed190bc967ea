// Shared by the tokenizer tests: the Qwen test vocabulary, loaded once.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/atomic_file.h"
#include "engine/tokenizer/tiktoken.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine::testing {

inline std::string tokenizer_dir() { return xft::test::source_dir() + "/third_party/tokenizer-qwen3"; }

inline const std::string& tokenizer_json_text() {
  static const std::string text = [] {
    Expected<std::string> t = read_file(tokenizer_dir() + "/tokenizer.json");
    return t ? *t : std::string();
  }();
  return text;
}

// nullptr (and a failed test) when the vocabulary has not been fetched.
inline const Tokenizer* json_tokenizer() {
  static const Expected<Tokenizer> tok = Tokenizer::load(tokenizer_dir());
  if (!tok) {
    ADD_FAILURE() << tok.error().message
                  << "\nThe Qwen test vocabulary is missing: run scripts/fetch-tokenizer.sh";
    return nullptr;
  }
  return &*tok;
}

// The same vocabulary through Qwen1's format: tokenizer.json -> qwen.tiktoken.
inline const Tokenizer* tiktoken_tokenizer() {
  static const Expected<Tokenizer> tok = []() -> Expected<Tokenizer> {
    if (tokenizer_json_text().empty())
      return make_error(tokenizer_dir() + "/tokenizer.json: missing");
    Expected<std::string> tiktoken = tiktoken_from_tokenizer_json(tokenizer_json_text());
    if (!tiktoken) return tiktoken.error();
    return Tokenizer::from_tiktoken(*tiktoken, "qwen.tiktoken");
  }();
  if (!tok) {
    ADD_FAILURE() << tok.error().message
                  << "\nThe Qwen test vocabulary is missing: run scripts/fetch-tokenizer.sh";
    return nullptr;
  }
  return &*tok;
}

}  // namespace xft::engine::testing
