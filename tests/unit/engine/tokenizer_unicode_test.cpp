// NFC, UTF-8 handling and Qwen's pre-tokenizer split, checked piece by piece.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace xft::engine {
namespace {

using unicode::nfc;

TEST(TokenizerUnicode, NfcComposesDecomposedLatin) {
  EXPECT_EQ(nfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(nfc("A\u030a"), "\u00c5");
}

TEST(TokenizerUnicode, NfcReplacesSingletons) {
  EXPECT_EQ(nfc("\u212b"), "\u00c5");          // ANGSTROM SIGN -> A WITH RING
  EXPECT_EQ(nfc("\u2126 ohm"), "\u03a9 ohm");  // OHM SIGN -> OMEGA
  EXPECT_EQ(nfc("\u0958"), "\u0915\u093c");    // composition exclusion stays decomposed
}

TEST(TokenizerUnicode, NfcOrdersMarksByCombiningClassBeforeComposing) {
  // dot below (220) sorts before circumflex (230) and both compose: U+1EAD.
  EXPECT_EQ(nfc("a\u0302\u0323"), "\u1ead");
  EXPECT_EQ(nfc("a\u0323\u0302"), "\u1ead");
  // A precomposed letter is decomposed when a mark of lower class follows.
  EXPECT_EQ(nfc("\u00e9\u0323"), "\u1eb9\u0301");
  // No composite for q: the marks are only reordered.
  EXPECT_EQ(nfc("q\u0307\u0323"), "q\u0323\u0307");
}

TEST(TokenizerUnicode, NfcComposesHangulJamo) {
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");
  EXPECT_EQ(nfc("\u1100\u1161"), "\uac00");
  EXPECT_EQ(nfc("\uac00\u11a8"), "\uac01");
}

TEST(TokenizerUnicode, NfcLeavesNormalizedAndInvalidTextAlone) {
  const std::string already = "Hello, 你好 Ünïcödé 🚀 한국어";
  EXPECT_EQ(nfc(already), already);
  const std::string invalid = "a\xff\xfe" "e\u0301";
  EXPECT_EQ(nfc(invalid), "a\xff\xfe\u00e9");
}

TEST(TokenizerUnicode, ValidUtf8ReplacesEachMaximalInvalidSubsequence) {
  EXPECT_EQ(unicode::to_valid_utf8("ok"), "ok");
  EXPECT_EQ(unicode::to_valid_utf8("a\xe4\xbd" "b"), "a\ufffd" "b");  // truncated 3-byte sequence
  EXPECT_EQ(unicode::to_valid_utf8("\xff\xfe"), "\ufffd\ufffd");
  EXPECT_EQ(unicode::to_valid_utf8("\xed\xa0\x80"), "\ufffd\ufffd\ufffd");  // a surrogate
  EXPECT_EQ(unicode::to_valid_utf8("\xc0\xaf"), "\ufffd\ufffd");            // overlong
  EXPECT_EQ(unicode::to_valid_utf8("\xf0\x9f\x9a\x80"), "\U0001f680");
}

TEST(TokenizerUnicode, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(unicode::complete_utf8_prefix("ab"), 2u);
  EXPECT_EQ(unicode::complete_utf8_prefix("a\xe4"), 1u);
  EXPECT_EQ(unicode::complete_utf8_prefix("a\xe4\xbd"), 1u);
  EXPECT_EQ(unicode::complete_utf8_prefix("a\xe4\xbd\xa0"), 4u);
  EXPECT_EQ(unicode::complete_utf8_prefix("\xf0\x9f\x9a"), 0u);
  EXPECT_EQ(unicode::complete_utf8_prefix("a\xff"), 2u);      // can never complete: let it out
  EXPECT_EQ(unicode::complete_utf8_prefix("a\xe4z"), 3u);
  EXPECT_EQ(unicode::complete_utf8_prefix("\xe0\x80"), 2u);   // E0 80 is already invalid
}

TEST(TokenizerUnicode, ClassesFollowUnicodeCategories) {
  EXPECT_TRUE(unicode::is_letter(U'a'));
  EXPECT_TRUE(unicode::is_letter(U'你'));
  EXPECT_TRUE(unicode::is_letter(U'\U00020000'));  // CJK extension B
  EXPECT_FALSE(unicode::is_letter(U'1'));
  EXPECT_TRUE(unicode::is_number(U'٣'));           // Arabic-Indic digit three
  EXPECT_TRUE(unicode::is_number(U'Ⅻ'));           // Roman numeral (Nl)
  EXPECT_TRUE(unicode::is_number(U'\U0001D7CE'));  // mathematical bold digit zero
  EXPECT_TRUE(unicode::is_white_space(U'\u3000'));
  EXPECT_TRUE(unicode::is_white_space(U'\u0085'));
  EXPECT_FALSE(unicode::is_white_space(U'\u200b'));  // zero width space is not White_Space
  EXPECT_FALSE(unicode::is_white_space(U'\x1c'));
  EXPECT_TRUE(unicode::is_mark(U'\u0301'));        // combining acute accent (Mn)
  EXPECT_TRUE(unicode::is_mark(U'\u093e'));        // Devanagari vowel sign aa (Mc)
  EXPECT_TRUE(unicode::is_mark(U'\u20dd'));        // combining enclosing circle (Me)
  EXPECT_TRUE(unicode::is_mark(U'\U000E0100'));    // variation selector 17, beyond the BMP
  EXPECT_FALSE(unicode::is_mark(U'a'));
  EXPECT_FALSE(unicode::is_mark(U'\u00e9'));       // precomposed e-acute is a letter
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string_view> views;
  split_qwen_pieces(text, views);
  return {views.begin(), views.end()};
}

using Pieces = std::vector<std::string>;

TEST(TokenizerPretokenizer, SplitsWordsWithTheirLeadingSpace) {
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("a  b   c"), (Pieces{"a", " ", " b", "  ", " c"}));
  EXPECT_EQ(split("  leading and trailing   "), (Pieces{" ", " leading", " and", " trailing", "   "}));
  EXPECT_EQ(split("Tabs\tand"), (Pieces{"Tabs", "\tand"}));
}

TEST(TokenizerPretokenizer, SplitsContractionsCaseInsensitively) {
  EXPECT_EQ(split("I'm they'll it's"), (Pieces{"I", "'m", " they", "'ll", " it", "'s"}));
  EXPECT_EQ(split("YOU'LL WE'VE"), (Pieces{"YOU", "'LL", " WE", "'VE"}));
  // The contraction wins over a longer letter run: "'sa" is "'s" + "a";
  // after a space, an apostrophe goes with the space, not with the letters.
  EXPECT_EQ(split("'sa 'x"), (Pieces{"'s", "a", " '", "x"}));
}

TEST(TokenizerPretokenizer, SplitsNumbersOneDigitAtATime) {
  EXPECT_EQ(split("x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(split("3.14"), (Pieces{"3", ".", "1", "4"}));
}

TEST(TokenizerPretokenizer, KeepsPunctuationRunsWithNewlines) {
  EXPECT_EQ(split("f(x):\n    return"), (Pieces{"f", "(x", "):\n", "   ", " return"}));
  EXPECT_EQ(split("a, (b)"), (Pieces{"a", ",", " (", "b", ")"}));
}

TEST(TokenizerPretokenizer, GroupsWhiteSpaceUpToTheLastNewline) {
  EXPECT_EQ(split("\n\n\n"), (Pieces{"\n\n\n"}));
  EXPECT_EQ(split("a\r\nb"), (Pieces{"a", "\r\n", "b"}));
  EXPECT_EQ(split("x \n \ny"), (Pieces{"x", " \n \n", "y"}));
  EXPECT_EQ(split("x \n  y"), (Pieces{"x", " \n", " ", " y"}));
  EXPECT_EQ(split(" "), (Pieces{" "}));
}

TEST(TokenizerPretokenizer, SplitsCjkAndMixedScripts) {
  EXPECT_EQ(split("Mixed中文English混合text"), (Pieces{"Mixed中文English混合text"}));
  // One non-letter may lead a run of letters: "，世界".
  EXPECT_EQ(split("你好，世界！"), (Pieces{"你好", "，世界", "！"}));
  EXPECT_EQ(split("Tab\there\u00a0nbsp"), (Pieces{"Tab", "\there", "\u00a0nbsp"}));
}

TEST(TokenizerPretokenizer, CoversEveryByteOfInvalidUtf8) {
  EXPECT_EQ(split("ab\xff\xfe cd"), (Pieces{"ab", "\xff\xfe", " cd"}));
}

TEST(TokenizerByteLevel, MapsBytesToGpt2Alphabet) {
  EXPECT_EQ(bytes_to_byte_level(" hi\n"), "\u0120hi\u010a");
  EXPECT_EQ(byte_level_to_bytes("\u0120hi\u010a"), std::optional<std::string>(" hi\n"));
  EXPECT_EQ(byte_level_to_bytes("\u4f60"), std::nullopt);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_to_bytes(bytes_to_byte_level(all)), std::optional<std::string>(all));
}

}  // namespace
}  // namespace xft::engine
