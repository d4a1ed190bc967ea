// The streaming JSON checker against nlohmann's parser as the reference, on
// random documents (every prefix of a valid one is accepted, and closing it at
// any safe point gives valid JSON) and on random one-byte corruptions of them
// (accepted exactly when the reference accepts the text).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/serve/json_prefix.h"

namespace xft::engine::serve {
namespace {

class JsonWriter {
 public:
  explicit JsonWriter(uint64_t seed) : rng_(seed) {}

  std::string object(int depth) {
    std::string out = "{" + ws();
    const int members = pick(0, depth > 0 ? 4 : 2);
    for (int i = 0; i < members; ++i) {
      if (i > 0) out += "," + ws();
      out += string() + ws() + ":" + ws() + value(depth - 1) + ws();
    }
    return out + "}";
  }

 private:
  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
  std::string ws() {
    static const char* spaces[] = {"", "", "", " ", "\n", "  ", "\t", "\r\n "};
    return spaces[pick(0, 7)];
  }
  std::string digits(int min_count) {
    std::string out;
    for (int i = pick(min_count, 3); i > 0; --i) out += static_cast<char>('0' + pick(0, 9));
    return out;
  }
  std::string number() {
    std::string out = pick(0, 2) == 0 ? "-" : "";
    out += pick(0, 3) == 0 ? "0" : std::string(1, static_cast<char>('1' + pick(0, 8))) + digits(0);
    if (pick(0, 2) == 0) out += "." + digits(1);
    if (pick(0, 3) == 0) out += std::string(pick(0, 1) ? "e" : "E") + (pick(0, 2) == 0 ? "-" : pick(0, 1) ? "+" : "") +
             std::to_string(pick(0, 99));  // a double's range: the reference refuses an overflow
    return out;
  }
  std::string string() {
    static const char* pieces[] = {"a", "Z", " ", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\u0041",
                                   "\xc3\xa9", "{", "]", ":", ",", "</"};
    std::string out = "\"";
    for (int i = pick(0, 6); i > 0; --i) out += pieces[pick(0, 15)];
    return out + "\"";
  }
  std::string array(int depth) {
    std::string out = "[" + ws();
    const int items = pick(0, 3);
    for (int i = 0; i < items; ++i) {
      if (i > 0) out += "," + ws();
      out += value(depth - 1) + ws();
    }
    return out + "]";
  }
  std::string value(int depth) {
    switch (pick(0, depth > 0 ? 7 : 5)) {
      case 0: return "true";
      case 1: return "false";
      case 2: return "null";
      case 3:
      case 4: return number();
      case 5: return string();
      case 6: return array(depth);
      default: return object(depth);
    }
  }

  std::mt19937_64 rng_;
};

// Whether the scanner takes `text` whole and ends exactly at its last byte.
bool scanner_accepts(const std::string& text) {
  JsonPrefixScanner scanner;
  for (char c : text)
    if (!scanner.feed(c)) return false;
  return scanner.complete();
}

TEST(ServeJsonPrefix, EveryPrefixOfValidJsonIsAcceptedAndClosesAtSafePoints) {
  JsonWriter writer(7);
  int safe_points = 0;
  for (int doc = 0; doc < 300; ++doc) {
    const std::string text = writer.object(4);
    ASSERT_TRUE(nlohmann::json::accept(text)) << text;
    JsonPrefixScanner scanner;
    for (size_t i = 0; i < text.size(); ++i) {
      ASSERT_FALSE(scanner.complete()) << text << " completed early at " << i;
      ASSERT_TRUE(scanner.feed(text[i])) << text << " refused at byte " << i;
      if (scanner.at_safe_point()) {
        ++safe_points;
        const std::string closed = text.substr(0, i + 1) + scanner.closing_suffix();
        ASSERT_TRUE(nlohmann::json::accept(closed)) << closed;
      }
    }
    EXPECT_TRUE(scanner.complete()) << text;
    EXPECT_EQ(scanner.closing_suffix(), "");
  }
  EXPECT_GT(safe_points, 3000);
}

TEST(ServeJsonPrefix, CorruptedDocumentsAreJudgedAsTheReferenceJudgesThem) {
  JsonWriter writer(11);
  std::mt19937_64 rng(3);
  const std::string bytes = "{}[]\",:\\ \n0123456789.eE+-tfnrulsax\x01/";
  int refused = 0;
  for (int doc = 0; doc < 3000; ++doc) {
    std::string text = writer.object(3);
    const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng);
    const char byte = bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)];
    switch (doc % 3) {
      case 0: text[at] = byte; break;
      case 1: text.insert(text.begin() + static_cast<long>(at), byte); break;
      default: text.erase(at, 1); break;
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
    const size_t first = text.find_first_not_of(" \n\t\r");
    if (first == std::string::npos || (text[first] != '{' && text[first] != '[')) continue;  // a bare scalar never ends
    bool reference = true;
    try {
      const nlohmann::json parsed = nlohmann::json::parse(text);
      EXPECT_FALSE(parsed.is_discarded());
    } catch (const nlohmann::json::parse_error&) {
      reference = false;
    } catch (const nlohmann::json::out_of_range&) {
      continue;  // a number beyond a double's range: valid JSON the reference cannot hold
    }
    ASSERT_EQ(scanner_accepts(text), reference) << text;
    refused += !reference;
  }
  EXPECT_GT(refused, 1000);
}

TEST(ServeJsonPrefix, NestingIsBounded) {
  JsonPrefixScanner scanner;
  for (int i = 0; i < JsonPrefixScanner::kMaxDepth; ++i) ASSERT_TRUE(scanner.feed('['));
  EXPECT_FALSE(scanner.feed('['));
  EXPECT_TRUE(scanner.failed());
  EXPECT_FALSE(scanner.feed(']'));
}

TEST(ServeJsonPrefix, SafePointsAndClosings) {
  auto after = [](const std::string& text) {
    JsonPrefixScanner scanner;
    for (char c : text) EXPECT_TRUE(scanner.feed(c)) << text;
    return scanner.at_safe_point() ? scanner.closing_suffix() : std::string("(unsafe)");
  };
  EXPECT_EQ(after("{"), "}");
  EXPECT_EQ(after("{\"a"), "(unsafe)");
  EXPECT_EQ(after("{\"a\":"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": [\"x\\"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": [\"x\\n"), "\"]}");
  EXPECT_EQ(after("{\"a\": [1,"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": [1"), "]}");
  EXPECT_EQ(after("{\"a\": [1e"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": -"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": nu"), "(unsafe)");
  EXPECT_EQ(after("{\"a\": {}"), "}");
  EXPECT_EQ(after("{\"a\": \"\\u00"), "(unsafe)");
}

}  // namespace
}  // namespace xft::engine::serve
