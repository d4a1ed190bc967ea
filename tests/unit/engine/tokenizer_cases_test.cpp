// Every reference case (ids from Hugging Face's tokenizer with the Qwen2/3
// vocabulary) through tokenizer.json and through a qwen.tiktoken made from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/unit/engine/tokenizer_test_support.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine {
namespace {

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

std::vector<Case> load_cases() {
  const std::string path = xft::test::data_dir() + "/tokenizer-cases.json";
  Expected<std::string> text = read_file(path);
  if (!text) {
    ADD_FAILURE() << text.error().message;
    return {};
  }
  std::vector<Case> cases;
  for (const auto& c : nlohmann::json::parse(*text))
    cases.push_back({c["text"].get<std::string>(), c["ids"].get<std::vector<int32_t>>(),
                     c["decoded"].get<std::string>()});
  return cases;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = load_cases();
  return all;
}

void expect_all_cases(const Tokenizer& tok, const char* via) {
  ASSERT_EQ(cases().size(), 40u);
  for (const Case& c : cases()) {
    EXPECT_EQ(tok.encode(c.text), c.ids) << via << ": encoding \"" << c.text << "\"";
    EXPECT_EQ(tok.decode(c.ids), c.decoded) << via << ": decoding the ids of \"" << c.text << "\"";
  }
}

TEST(TokenizerCases, TokenizerJsonGivesReferenceIdsAndText) {
  const Tokenizer* tok = testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  expect_all_cases(*tok, "tokenizer.json");
}

TEST(TokenizerCases, QwenTiktokenGivesReferenceIdsAndText) {
  const Tokenizer* tok = testing::tiktoken_tokenizer();
  ASSERT_NE(tok, nullptr);
  expect_all_cases(*tok, "qwen.tiktoken");
}

TEST(TokenizerCases, EncodingTheSameTextTwiceUsesTheCacheConsistently) {
  const Tokenizer* tok = testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  std::string all;
  for (const Case& c : cases()) all += c.text;
  const std::vector<int32_t> first = tok->encode(all);
  EXPECT_EQ(tok->encode(all), first);
  EXPECT_EQ(tok->decode(first), all);
}

// Tokenizer::load picks qwen.tiktoken when a directory has no tokenizer.json.
TEST(TokenizerCases, LoadFindsQwenTiktokenInAModelDirectory) {
  ASSERT_FALSE(testing::tokenizer_json_text().empty()) << "run scripts/fetch-tokenizer.sh";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("xft-tiktoken-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  Expected<std::string> tiktoken = tiktoken_from_tokenizer_json(testing::tokenizer_json_text());
  ASSERT_TRUE(tiktoken) << tiktoken.error().message;
  ASSERT_TRUE(write_file_atomic((dir / "qwen.tiktoken").string(), *tiktoken));
  Expected<Tokenizer> tok = Tokenizer::load(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tok) << tok.error().message;
  // Qwen1's specials follow the 151643 ordinary ranks.
  EXPECT_EQ(tok->vocab_size(), 151643 + 3 + 205);
  EXPECT_EQ(tok->endoftext(), 151643);
  EXPECT_EQ(tok->im_start(), 151644);
  EXPECT_EQ(tok->im_end(), 151645);
  EXPECT_EQ(tok->token_id("<|extra_0|>"), 151646);
  EXPECT_EQ(tok->token_id("<|extra_204|>"), 151850);
  EXPECT_EQ(tok->encode("<|im_start|>user\nHello world<|im_end|>"),
            (std::vector<int32_t>{151644, 872, 198, 9707, 1879, 151645}));
}

TEST(TokenizerCases, TiktokenFileHasOneBase64LinePerRankInOrder) {
  ASSERT_FALSE(testing::tokenizer_json_text().empty()) << "run scripts/fetch-tokenizer.sh";
  Expected<std::string> tiktoken = tiktoken_from_tokenizer_json(testing::tokenizer_json_text());
  ASSERT_TRUE(tiktoken) << tiktoken.error().message;
  // Ranks 0..2 are the bytes '!', '"', '#'; 220 is the space byte; 9707 "Hello".
  EXPECT_TRUE(tiktoken->starts_with("IQ== 0\nIg== 1\nIw== 2\n")) << tiktoken->substr(0, 40);
  EXPECT_NE(tiktoken->find("\nIA== 220\n"), std::string::npos);
  EXPECT_NE(tiktoken->find("\nSGVsbG8= 9707\n"), std::string::npos);
  EXPECT_EQ(std::count(tiktoken->begin(), tiktoken->end(), '\n'), 151643);
}

}  // namespace
}  // namespace xft::engine
