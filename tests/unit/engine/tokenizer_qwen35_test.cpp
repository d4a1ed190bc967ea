// Qwen3.5's tokenizer.json: the same byte-level BPE and NFC normalizer as
// Qwen2/3, but a Split regex that keeps combining marks (\p{M}) with the
// letters before them. The expected pieces below are what Python's `regex`
// module gives for the two tokenizer.json patterns; the expected ids come from
// a plain Python byte-level BPE over the Qwen3 test vocabulary that reproduces
// every reference case of tests/data/tokenizer-cases.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenizer.h"
#include "tests/unit/engine/tokenizer_test_support.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine {
namespace {

using Ids = std::vector<int32_t>;
using Pieces = std::vector<std::string>;

Pieces split(const std::string& text, SplitPattern pattern) {
  std::vector<std::string_view> views;
  split_qwen_pieces(text, views, pattern);
  return Pieces(views.begin(), views.end());
}

struct SplitCase {
  std::string text;
  Pieces qwen2, qwen35;
};

TEST(TokenizerQwen35, MarksStayWithTheirLettersWhereQwen2SplitsThem) {
  const std::vector<SplitCase> cases = {
      {"cafe\u0301 au lait", {"cafe", "\u0301", " au", " lait"}, {"cafe\u0301", " au", " lait"}},
      {"\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",  // Hindi
       {"\u0928\u092e\u0938", "\u094d\u0924", "\u0947", " \u0926", "\u0941\u0928", "\u093f\u092f", "\u093e"},
       {"\u0928\u092e\u0938\u094d\u0924\u0947", " \u0926\u0941\u0928\u093f\u092f\u093e"}},
      {"q\u0301!", {"q", "\u0301!"}, {"q\u0301", "!"}},
      {"(\u0301)", {"(\u0301)"}, {"(\u0301", ")"}},
      {" \u0301abc", {" \u0301", "abc"}, {" \u0301abc"}},
      {"x\u20dd\u20dd y", {"x", "\u20dd\u20dd", " y"}, {"x\u20dd\u20dd", " y"}},
      {"I'm 42\u0301.\n\n", {"I", "'m", " ", "4", "2", "\u0301.\n\n"}, {"I", "'m", " ", "4", "2", "\u0301", ".\n\n"}},
      {"\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e1c\u0e21",  // Thai
       {"\u0e2a\u0e27", "\u0e31\u0e2a\u0e14", "\u0e35\u0e04\u0e23", "\u0e31\u0e1a", " \u0e1c\u0e21"},
       {"\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a", " \u0e1c\u0e21"}},
      {"Hello, world! 123 'll\r\n  x", {"Hello", ",", " world", "!", " ", "1", "2", "3", " '", "ll", "\r\n", " ", " x"},
       {"Hello", ",", " world", "!", " ", "1", "2", "3", " '", "ll", "\r\n", " ", " x"}},
  };
  for (const SplitCase& c : cases) {
    EXPECT_EQ(split(c.text, SplitPattern::qwen2), c.qwen2) << c.text;
    EXPECT_EQ(split(c.text, SplitPattern::qwen35), c.qwen35) << c.text;
  }
}

nlohmann::json split_step(std::string_view pattern) {
  return {{"type", "Split"}, {"pattern", {{"Regex", std::string(pattern)}}}, {"behavior", "Isolated"}, {"invert", false}};
}

// The pre_tokenizer member as Qwen3.5's tokenizer.json writes it.
nlohmann::json qwen35_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {split_step(kQwen35SplitPattern),
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

// The 256 byte tokens (id = byte value), "q" + U+0301 merged as 256 and 257.
std::string tiny_json(const nlohmann::json& pre_tokenizer) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  vocab[bytes_to_byte_level("\u0301")] = 256;
  vocab[bytes_to_byte_level("q\u0301")] = 257;
  const nlohmann::json merges = nlohmann::json::array(
      {nlohmann::json::array({bytes_to_byte_level("\xcc"), bytes_to_byte_level("\x81")}),
       nlohmann::json::array({"q", bytes_to_byte_level("\u0301")})});
  return nlohmann::json{{"added_tokens", nlohmann::json::array({{{"id", 258}, {"content", "<|im_end|>"}, {"special", true}}})},
                        {"normalizer", {{"type", "NFC"}}},
                        {"pre_tokenizer", pre_tokenizer},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}}
      .dump();
}

TEST(TokenizerQwen35, ASmallVocabularyWithQwen35sPreTokenizerMergesALetterAndItsMark) {
  Expected<Tokenizer> qwen35 = Tokenizer::from_tokenizer_json(tiny_json(qwen35_pre_tokenizer()), "q35/tokenizer.json");
  ASSERT_TRUE(qwen35) << qwen35.error().message;
  // "q\u0301" (no precomposed form, so NFC keeps it) is one piece and one token.
  EXPECT_EQ(qwen35->encode("q\u0301!<|im_end|>"), (Ids{257, '!', 258}));
  EXPECT_EQ(qwen35->decode(Ids{257, '!', 258}), "q\u0301!<|im_end|>");

  nlohmann::json qwen2_pre = qwen35_pre_tokenizer();
  qwen2_pre["pretokenizers"][0] = split_step(kQwenSplitPattern);
  Expected<Tokenizer> qwen2 = Tokenizer::from_tokenizer_json(tiny_json(qwen2_pre), "q2/tokenizer.json");
  ASSERT_TRUE(qwen2) << qwen2.error().message;
  // Qwen2/3's split puts the mark in the punctuation piece "\u0301!": the pair never meets.
  EXPECT_EQ(qwen2->encode("q\u0301!<|im_end|>"), (Ids{'q', 256, '!', 258}));
}

TEST(TokenizerQwen35, AnotherSplitRegexIsRefusedNamingBoth) {
  nlohmann::json pre = qwen35_pre_tokenizer();
  pre["pretokenizers"][0] = split_step(R"(\p{L}+|\s+)");
  Expected<Tokenizer> tok = Tokenizer::from_tokenizer_json(tiny_json(pre), "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().message.find("m/tokenizer.json: pre_tokenizer: unsupported step "), std::string::npos)
      << tok.error().message;
  EXPECT_NE(tok.error().message.find("only Qwen2/3's or Qwen3.5's Split regex (Isolated) followed by ByteLevel"),
            std::string::npos)
      << tok.error().message;
}

// The Qwen3 test vocabulary (151,643 ordinary tokens) with the pre-tokenizer
// swapped for Qwen3.5's: a full-size tokenizer.json in Qwen3.5's configuration.
const Tokenizer* qwen3_vocabulary_with_qwen35_split() {
  static const Expected<Tokenizer> tok = []() -> Expected<Tokenizer> {
    if (testing::tokenizer_json_text().empty()) return make_error("the Qwen test vocabulary is missing");
    nlohmann::json doc = nlohmann::json::parse(testing::tokenizer_json_text());
    doc["pre_tokenizer"] = qwen35_pre_tokenizer();
    return Tokenizer::from_tokenizer_json(doc.dump(), "qwen35/tokenizer.json");
  }();
  if (!tok) {
    ADD_FAILURE() << tok.error().message << "\nrun scripts/fetch-tokenizer.sh";
    return nullptr;
  }
  return &*tok;
}

TEST(TokenizerQwen35, AFullVocabularyGivesQwen2IdsOnTextWithoutMarksAndJoinsThaiVowelSigns) {
  const Tokenizer* q35 = qwen3_vocabulary_with_qwen35_split();
  const Tokenizer* q3 = testing::json_tokenizer();
  ASSERT_TRUE(q35 && q3);
  // No reference case has a combining mark: every one tokenizes as with Qwen2/3's split.
  Expected<std::string> text = read_file(xft::test::data_dir() + "/tokenizer-cases.json");
  ASSERT_TRUE(text) << text.error().message;
  for (const auto& c : nlohmann::json::parse(*text)) {
    EXPECT_EQ(q35->encode(c["text"].get<std::string>()), c["ids"].get<Ids>()) << c["text"];
  }
  const std::string thai = "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e1c\u0e21";
  EXPECT_EQ(q3->encode(thai), (Ids{143126, 23271, 125136, 28319, 123886, 83546, 130131}));
  EXPECT_EQ(q35->encode(thai), (Ids{35648, 124294, 35648, 124311, 125459, 130131}));
  EXPECT_EQ(q35->decode(q35->encode(thai)), thai);
}

}  // namespace
}  // namespace xft::engine
