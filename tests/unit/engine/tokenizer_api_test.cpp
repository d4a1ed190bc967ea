// The Tokenizer API the engine and server use: special tokens, streaming
// decode, ChatML, lookups and load errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/unicode.h"
#include "tests/unit/engine/tokenizer_test_support.h"

namespace xft::engine {
namespace {

using Ids = std::vector<int32_t>;

class TokenizerApi : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = testing::json_tokenizer();
    ASSERT_NE(tok_, nullptr);
  }
  const Tokenizer* tok_ = nullptr;
};

TEST_F(TokenizerApi, KnowsQwenSpecialIds) {
  EXPECT_EQ(tok_->endoftext(), 151643);
  EXPECT_EQ(tok_->im_start(), 151644);
  EXPECT_EQ(tok_->im_end(), 151645);
  EXPECT_EQ(tok_->vocab_size(), 151669);  // 151643 ordinary + 26 added
  EXPECT_EQ(tok_->token_id("<think>"), 151667);
  EXPECT_EQ(tok_->token_id("Hello"), 9707);
  EXPECT_EQ(tok_->token_id(" world"), 1879);
  EXPECT_EQ(tok_->token_id("no-such-token-at-all"), -1);
  EXPECT_EQ(tok_->token_bytes(1879), " world");
  EXPECT_EQ(tok_->token_bytes(151645), "<|im_end|>");
  EXPECT_EQ(tok_->token_bytes(-1), "");
  EXPECT_EQ(tok_->token_bytes(200000), "");
  EXPECT_TRUE(tok_->is_special(151645));
  EXPECT_FALSE(tok_->is_special(151667));  // <think> is added but not special
  EXPECT_FALSE(tok_->is_special(9707));
}

TEST_F(TokenizerApi, SplitsSpecialTokensOutOfText) {
  EXPECT_EQ(tok_->encode("Hello<|im_end|>world"), (Ids{9707, 151645, 14615}));
  EXPECT_EQ(tok_->encode("<think>\nx</think>"), (Ids{151667, 198, 87, 151668}));
  EXPECT_EQ(tok_->encode("<|im_end|><|im_end|>"), (Ids{151645, 151645}));
  // A near miss is ordinary text.
  EXPECT_EQ(tok_->encode("<|im_end|"), tok_->encode_ordinary("<|im_end|"));
}

TEST_F(TokenizerApi, EncodeOrdinaryNeverProducesSpecialIds) {
  const Ids ids = tok_->encode_ordinary("<|im_start|>system");
  for (int32_t id : ids) EXPECT_FALSE(tok_->is_special(id)) << id;
  EXPECT_GT(ids.size(), 3u);
  EXPECT_EQ(tok_->decode(ids), "<|im_start|>system");
}

TEST_F(TokenizerApi, NormalizesToNfcBeforeSplitting) {
  EXPECT_EQ(tok_->encode("cafe\u0301"), tok_->encode("caf\u00e9"));
  EXPECT_EQ(tok_->decode(tok_->encode("cafe\u0301")), "caf\u00e9");
  EXPECT_EQ(tok_->encode("\u212b"), tok_->encode("\u00c5"));
}

TEST_F(TokenizerApi, EmptyTextHasNoTokens) {
  EXPECT_TRUE(tok_->encode("").empty());
  EXPECT_EQ(tok_->decode(Ids{}), "");
}

TEST_F(TokenizerApi, DecodeSkipsUnknownIdsAndRepairsBrokenUtf8) {
  EXPECT_EQ(tok_->decode(Ids{9707, -5, 999999, 1879}), "Hello world");
  // 11162 is a space and the first two bytes of a 4-byte emoji: not UTF-8 alone.
  EXPECT_EQ(tok_->decode(Ids{11162}), " \ufffd");
}

// Streaming a CJK and emoji text id by id: every piece is whole UTF-8 and
// together they are exactly the decoded text.
TEST_F(TokenizerApi, StreamDecoderNeverEmitsPartialCharacters) {
  const std::string text = "分布式推理 🚀🔥 한국어 👨‍👩‍👧‍👦 Ünïcödé ∑∫√";
  const Ids ids = tok_->encode(text);
  StreamDecoder stream(*tok_);
  std::string joined;
  int held = 0;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    EXPECT_EQ(unicode::to_valid_utf8(piece), piece) << "partial UTF-8 after id " << id;
    if (piece.empty()) ++held;
    joined += piece;
  }
  joined += stream.flush();
  EXPECT_EQ(joined, text);
  EXPECT_GT(held, 0) << "the text should contain characters split across tokens";
}

TEST_F(TokenizerApi, StreamDecoderHoldsAnEmojiUntilItsLastByte) {
  const Ids ids = tok_->encode("Emoji 🚀");
  ASSERT_EQ(ids, (Ids{92731, 11162, 248, 222}));  // "Emoji", " \xF0\x9F", "\x9A", "\x80"
  StreamDecoder stream(*tok_);
  EXPECT_EQ(stream.push(ids[0]), "Emoji");
  EXPECT_EQ(stream.push(ids[1]), " ");
  EXPECT_EQ(stream.push(ids[2]), "");
  EXPECT_EQ(stream.push(ids[3]), "🚀");
  EXPECT_EQ(stream.flush(), "");
  // A stream cut short leaves a replacement character, not raw bytes.
  EXPECT_EQ(stream.push(ids[1]), " ");
  EXPECT_EQ(stream.flush(), "\ufffd");
}

TEST_F(TokenizerApi, ChatPromptRendersChatMlWithDefaultSystem) {
  EXPECT_EQ(tok_->chat_prompt({{"user", "What is RDMA?"}}, true),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nWhat is RDMA?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(tok_->chat_prompt({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n");
  const Ids ids = tok_->encode(tok_->chat_prompt({{"user", "Hi"}}, true));
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), tok_->im_start());
  EXPECT_EQ((Ids{ids.end() - 3, ids.end()}), (Ids{151644, 77091, 198}));  // "<|im_start|>assistant\n"
}

TEST(TokenizerLoad, MissingDirectoryNamesTheFilesLookedFor) {
  Expected<Tokenizer> tok = Tokenizer::load("/nonexistent/model-dir");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "/nonexistent/model-dir: no tokenizer found (looked for tokenizer.json and qwen.tiktoken); "
            "point --model at a Qwen checkpoint directory");
}

TEST(TokenizerLoad, AcceptsThePathOfTheVocabularyFileItself) {
  Expected<Tokenizer> tok = Tokenizer::load(testing::tokenizer_dir() + "/tokenizer.json");
  ASSERT_TRUE(tok) << tok.error().message << "\nrun scripts/fetch-tokenizer.sh";
  EXPECT_EQ(tok->encode("Hello world"), (Ids{9707, 1879}));
}

TEST(TokenizerLoad, BadJsonAndUnsupportedPiecesAreNamed) {
  Expected<Tokenizer> tok = Tokenizer::from_tokenizer_json("{", "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message.rfind("m/tokenizer.json: not valid JSON", 0), 0u) << tok.error().message;

  tok = Tokenizer::from_tokenizer_json(R"({"model": {"type": "Unigram"}})", "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message, "m/tokenizer.json: model.type: \"Unigram\" is not supported, only BPE");

  tok = Tokenizer::from_tokenizer_json(
      R"({"normalizer": {"type": "NFKC"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})",
      "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "m/tokenizer.json: normalizer: only {\"type\": \"NFC\"} or null is supported, found "
            "{\"type\":\"NFKC\"}");
}

// A tokenizer.json written here: the 256 byte tokens (id = byte value), then
// `extra` tokens and `merges`, with Qwen's normalizer and pre-tokenizer.
std::string tiny_tokenizer_json(const std::vector<std::string>& extra, const nlohmann::json& merges,
                                const nlohmann::json& added = nlohmann::json::array()) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  for (size_t i = 0; i < extra.size(); ++i) vocab[bytes_to_byte_level(extra[i])] = 256 + i;
  nlohmann::json split = {{"type", "Split"},
                          {"pattern", {{"Regex", std::string(kQwenSplitPattern)}}},
                          {"behavior", "Isolated"},
                          {"invert", false}};
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  return nlohmann::json{{"added_tokens", added},
                        {"normalizer", {{"type", "NFC"}}},
                        {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}}},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}}
      .dump(2);
}

TEST(TokenizerLoad, BuildsAWorkingTokenizerFromASmallVocabulary) {
  const std::string json = tiny_tokenizer_json(
      {"ab", " a", " ab"}, nlohmann::json::array({nlohmann::json::array({"a", "b"}), "\u0120a b",
                                                   nlohmann::json::array({"\u0120", "ab"})}),
      nlohmann::json::array({{{"id", 300}, {"content", "<|end|>"}, {"special", true}}}));
  Expected<Tokenizer> tok = Tokenizer::from_tokenizer_json(json, "tiny/tokenizer.json");
  ASSERT_TRUE(tok) << tok.error().message;
  // "ab ab": pieces "ab", " ab"; " ab" merges "a"+"b" (rank 0) then " "+"ab" (rank 2).
  EXPECT_EQ(tok->encode("ab ab<|end|>"), (Ids{256, 258, 300}));
  // " a" is in the vocabulary but no merge makes it: BPE never reaches it.
  EXPECT_EQ(tok->encode(" a"), (Ids{' ', 'a'}));
  EXPECT_EQ(tok->decode(Ids{256, 258, 300}), "ab ab<|end|>");
  EXPECT_EQ(tok->vocab_size(), 301);
  EXPECT_EQ(tok->im_start(), -1);  // not a ChatML vocabulary
}

TEST(TokenizerLoad, VocabularyAndMergeErrorsNameTheField) {
  Expected<Tokenizer> tok = Tokenizer::from_tokenizer_json(
      tiny_tokenizer_json({}, nlohmann::json::array({"a b"})), "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "m/tokenizer.json: model.merges[0]: \"a\" + \"b\" or their merge is not in model.vocab");

  tok = Tokenizer::from_tokenizer_json(tiny_tokenizer_json({"ab"}, nlohmann::json::array({"ab"})),
                                       "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message.rfind("m/tokenizer.json: model.merges[0]: malformed at line ", 0), 0u)
      << tok.error().message;

  tok = Tokenizer::from_tokenizer_json(
      R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}, "pre_tokenizer": null})",
      "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "m/tokenizer.json: pre_tokenizer: expected Qwen's Split regex and a ByteLevel step, found null");

  std::string json = tiny_tokenizer_json({}, nlohmann::json::array());
  json.replace(json.find("\"!\": 33"), 7, "\"!\": \"x\"");
  tok = Tokenizer::from_tokenizer_json(json, "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message, "m/tokenizer.json: model.vocab[\"!\"]: id is not a small non-negative integer");

  json = tiny_tokenizer_json({"ab"}, nlohmann::json::array(),
                             nlohmann::json::array({{{"id", 256}, {"content", "<x>"}, {"special", true}}}));
  tok = Tokenizer::from_tokenizer_json(json, "m/tokenizer.json");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "m/tokenizer.json: added token \"<x>\" reuses id 256 of an ordinary token; that is not supported");
}

TEST(TokenizerLoad, TiktokenErrorsNameTheLine) {
  Expected<Tokenizer> tok = Tokenizer::from_tiktoken("IQ== 0\nIg==1\n", "m/qwen.tiktoken");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message, "m/qwen.tiktoken:2: expected \"base64 rank\", found \"Ig==1\"");
  tok = Tokenizer::from_tiktoken("IQ== 0\nIg== x\n", "m/qwen.tiktoken");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message, "m/qwen.tiktoken:2: rank is not a small non-negative integer");
  tok = Tokenizer::from_tiktoken("IQ== 0\n", "m/qwen.tiktoken");
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.error().message,
            "m/qwen.tiktoken: byte 0x00 has no token; every byte-level BPE vocabulary has all 256");
}

}  // namespace
}  // namespace xft::engine
