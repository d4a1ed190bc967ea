// The schema compiler (supported keywords, every refusal naming its keyword
// or limit), the byte matcher on exact texts, remaining() as the exact
// distance to a complete answer, and the token mask's trie-like walk against
// the plain reference that tests every token on its own.
#include <gtest/gtest.h>

#include <random>

#include "engine/constrain/json_schema.h"
#include "engine/constrain/matcher.h"
#include "engine/constrain/token_mask.h"
#include "tests/unit/engine/tokenizer_test_support.h"

namespace xft::engine::constrain {
namespace {

using json = nlohmann::json;

Grammar compiled(const char* schema) {
  auto g = compile_json_schema(json::parse(schema));
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return g.ok() ? std::move(*g) : json_object_grammar();
}

std::string refusal(const json& schema) {
  auto g = compile_json_schema(schema);
  return g.ok() ? "(compiled)" : g.error().message;
}

bool matches_whole(const Grammar& g, std::string_view text) {
  MatchState s(g);
  return s.advance(g, text) && s.remaining(g) == 0;
}

bool accepts_prefix(const Grammar& g, std::string_view text) {
  MatchState s(g);
  return s.advance(g, text);
}

TEST(ConstrainSchema, ObjectsWithRequiredAndOptionalProperties) {
  Grammar g = compiled(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
                           "required":["a"],"additionalProperties":false})");
  EXPECT_TRUE(matches_whole(g, R"({"a":1})"));
  EXPECT_TRUE(matches_whole(g, R"({"b": "x", "a": -20})"));
  EXPECT_TRUE(matches_whole(g, R"({"a":0,"b":""})"));
  EXPECT_FALSE(matches_whole(g, R"({"b":"x"})"));  // a is required
  EXPECT_FALSE(accepts_prefix(g, R"({"a":1,"a")"));  // no key twice
  EXPECT_FALSE(accepts_prefix(g, R"({"c")"));
  EXPECT_FALSE(accepts_prefix(g, R"({"a":01)"));
  EXPECT_FALSE(accepts_prefix(g, R"({"a":1.5)"));
  EXPECT_FALSE(accepts_prefix(g, R"({ "a")"));  // whitespace only after ':' and ','
  MatchState closed(g);
  ASSERT_TRUE(closed.advance(g, R"({"a":1})"));
  EXPECT_TRUE(closed.closed());
  EXPECT_FALSE(closed.advance(g, static_cast<uint8_t>(' ')));
}

TEST(ConstrainSchema, ScalarsEnumsConstAndStrings) {
  Grammar g = compiled(R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"null"},{"enum":["x","y z",true]},
                           {"type":"object","properties":{"k":{"const":"v"}},"required":["k"]}]},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(matches_whole(g, R"([1.5e+3, null,"y z"])"));
  EXPECT_TRUE(matches_whole(g, R"([true,{"k":"v"}])"));
  EXPECT_FALSE(matches_whole(g, "[]"));
  EXPECT_FALSE(accepts_prefix(g, "[1,2,3,"));
  EXPECT_FALSE(accepts_prefix(g, R"(["y")"));
  EXPECT_FALSE(accepts_prefix(g, "[false"));
  Grammar s = compiled(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(matches_whole(s, "\"\xc3\xa9\\n\""));  // é and \n: two characters
  EXPECT_TRUE(matches_whole(s, R"("\u00e9ab")"));
  EXPECT_FALSE(matches_whole(s, R"("a")"));
  EXPECT_FALSE(accepts_prefix(s, R"("abcd)"));
  EXPECT_FALSE(accepts_prefix(s, "\"a\x01"));          // control characters must be escaped
  EXPECT_FALSE(accepts_prefix(s, "\"\xc0\xaf"));       // overlong UTF-8
  EXPECT_FALSE(accepts_prefix(s, "\"\xed\xa0\x80"));   // a surrogate
  EXPECT_FALSE(accepts_prefix(s, R"("\ud800)"));      // an unpaired surrogate escape
  Grammar numbers = compiled(R"({"enum":[1,12,"a"]})");
  EXPECT_TRUE(matches_whole(numbers, "1"));
  EXPECT_TRUE(matches_whole(numbers, "12"));
  EXPECT_FALSE(accepts_prefix(numbers, "13"));
}

TEST(ConstrainSchema, RefsToDefsAreExpanded) {
  Grammar g = compiled(R"({"$defs":{"p":{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}},"required":["x"]},
                                    "n":{"type":"integer"}},
                           "type":"array","items":{"$ref":"#/$defs/p"}})");
  EXPECT_TRUE(matches_whole(g, R"([{"x":1},{"x":2}])"));
  EXPECT_FALSE(accepts_prefix(g, R"([{"x":"1")"));
}

TEST(ConstrainSchema, JsonObjectIsAnyObject) {
  Grammar g = json_object_grammar();
  EXPECT_TRUE(matches_whole(g, R"({"a": [1, {"b": null}], "c": "d", "e": -0.5E-2})"));
  EXPECT_FALSE(accepts_prefix(g, "[1]"));
  EXPECT_FALSE(matches_whole(g, R"({"a":})"));
}

TEST(ConstrainSchema, RefusalsNameTheKeywordOrLimit) {
  EXPECT_EQ(refusal(json::parse(R"({"type":"string","pattern":"a+"})")),
            "keyword 'pattern' at the schema's root is not supported (supported: type, properties, required, "
            "additionalProperties, enum, const, items, anyOf, minItems, maxItems, minLength, maxLength, $ref to $defs)");
  EXPECT_EQ(refusal(json::parse(R"({"properties":{"a":{"type":"integer","minimum":3}}})")).substr(0, 48),
            "keyword 'minimum' at /properties/a is not suppor");
  EXPECT_EQ(refusal(json::parse(R"({"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"})")),
            "'$ref' \"#/$defs/t\" at /$defs/t/items refers back to itself: recursive schemas are not supported");
  EXPECT_EQ(refusal(json::parse(R"({"anyOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]})")),
            "the alternatives of 'anyOf' (or 'type') at the schema's root can both start with '{': only alternatives "
            "of different JSON types (or enums that start differently) are supported");
  json deep = json::object();
  for (int i = 0; i < 40; ++i) deep = json{{"type", "array"}, {"items", deep}};
  EXPECT_EQ(refusal(deep).substr(0, 37), "schemas nested deeper than 16 levels ");
  json big = json::array();
  for (int i = 0; i < 300; ++i) big.push_back(i);
  EXPECT_EQ(refusal(json{{"enum", big}}), "'enum' at /enum must list 1 to 256 values");
  // Each level refers to the next ten times: 10^4 parts once expanded.
  json defs = json::object();
  for (int i = 0; i < 4; ++i) {
    json properties = json::object();
    for (int p = 0; p < 10; ++p) properties["p" + std::to_string(p)] = {{"$ref", "#/$defs/d" + std::to_string(i + 1)}};
    defs["d" + std::to_string(i)] = {{"type", "object"}, {"properties", properties}};
  }
  defs["d4"] = {{"type", "integer"}};
  EXPECT_EQ(refusal(json{{"$defs", defs}, {"$ref", "#/$defs/d2"}}), "(compiled)");
  EXPECT_EQ(refusal(json{{"$defs", defs}, {"$ref", "#/$defs/d0"}}),
            "the schema is too large: more than 4096 parts once its $refs are expanded");
  EXPECT_EQ(refusal(json::parse(R"({"type":"object","additionalProperties":{"type":"string"}})")),
            "'additionalProperties' at the schema's root as a schema is not supported (true or false)");
  EXPECT_EQ(refusal(json::parse(R"({"type":"string","minLength":5,"maxLength":2})")),
            "'minLength' exceeds 'maxLength' at the schema's root");
  EXPECT_EQ(refusal(json::parse(R"({"type":"object","required":["x"]})")),
            "required property \"x\" at the schema's root is not among its 'properties'");
  EXPECT_EQ(refusal(json::parse(R"({"$ref":"#/$defs/missing"})")),
            "'$ref' \"#/$defs/missing\" at the schema's root does not name a schema of this document's $defs "
            "(\"#/$defs/Name\")");
  EXPECT_EQ(refusal(false), "the schema 'false' at the schema's root accepts no value");
}

TEST(ConstrainSchema, ForcedToolCallIsQwensHermesFormat) {
  auto g = compile_tool_call({{"get_weather", json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},
                                                               "required":["city"]})")},
                              {"now", nullptr}});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(matches_whole(*g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(matches_whole(*g, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts_prefix(*g, "<tool_call>\n{\"name\": \"other\""));
  EXPECT_FALSE(matches_whole(*g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_EQ(MatchState(*g).remaining(*g),
            std::string("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>").size());
}

// The fewest bytes to a complete answer, by breadth-first search over bytes:
// the reference remaining() must equal.
uint64_t shortest_completion(const Grammar& g, const MatchState& from, uint64_t limit) {
  std::vector<MatchState> level{from};
  for (uint64_t d = 0; d <= limit; ++d) {
    std::vector<MatchState> next;
    for (const MatchState& s : level) {
      if (s.closed()) return d;
    }
    for (const MatchState& s : level) {
      for (int b : {'"', '0', '1', '-', '.', 'e', 'a', 'b', 'c', 'x', 'y', 'z', 'k', ',', ':', '}', ']', '{', '[', ' '}) {
        MatchState t = s;
        if (t.advance(g, static_cast<uint8_t>(b)) && std::find(next.begin(), next.end(), t) == next.end())
          next.push_back(t);
      }
    }
    level = std::move(next);
  }
  return UINT64_MAX;
}

TEST(ConstrainMatcher, RemainingIsTheShortestCompletion) {
  Grammar g = compiled(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","minLength":1},
                           "minItems":2},"bb":{"enum":["xy","z"]},"c":{"type":"number"}},"required":["a","bb"]})");
  const std::vector<std::string> prefixes = {"", "{", "{\"", "{\"a", "{\"a\":", "{\"a\": [", "{\"a\":[\"", "{\"a\":[\"k\"",
                                             "{\"a\":[\"k\",", "{\"c\":1", "{\"c\":1.", "{\"bb\":\"x"};
  for (const std::string& prefix : prefixes) {
    MatchState s(g);
    ASSERT_TRUE(s.advance(g, prefix)) << prefix;
    EXPECT_EQ(s.remaining(g), shortest_completion(g, s, 30)) << prefix;
  }
}

// Every byte string the table holds, tested one by one: the reference the walk must equal.
std::vector<uint8_t> allowed_one_by_one(const ConstrainedSequence& seq, const TokenTable& table) {
  std::vector<uint8_t> allowed(table.size());
  for (int32_t id = 0; id < table.size(); ++id) allowed[id] = seq.allows(table, id);
  return allowed;
}

TEST(ConstrainMask, WalkEqualsTestingEveryTokenAlone) {
  const Tokenizer* tok = testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  std::vector<std::string> bytes;
  std::vector<bool> text;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    bytes.emplace_back(tok->token_bytes(id));
    text.push_back(!tok->is_special(id));
  }
  TokenTable table(bytes, text);
  auto constraint = std::make_shared<Constraint>();
  constraint->grammar = std::make_shared<const Grammar>(compiled(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"n":{"type":"integer"},
          "tags":{"type":"array","items":{"enum":["red","green"]}},"any":{}},"required":["name","n"]})"));
  constraint->stop_ids = {tok->endoftext()};
  constraint->max_tokens = 40;
  std::mt19937 rng(7);
  ConstrainedSequence seq(constraint);
  std::vector<uint8_t> walked;
  // A random walk through allowed tokens, comparing the masks at every step (the budget
  // shrinks as it goes, so the last steps check the steering too).
  for (int step = 0; step < 40 && !seq.closed(); ++step) {
    seq.allowed_tokens(table, walked);
    const std::vector<uint8_t> reference = allowed_one_by_one(seq, table);
    ASSERT_EQ(walked, reference) << "step " << step;
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < table.size(); ++id) {
      if (walked[id]) ids.push_back(id);
    }
    ASSERT_FALSE(ids.empty()) << "step " << step;
    seq.accept(table, ids[rng() % ids.size()]);
  }
  EXPECT_TRUE(seq.closed());
  EXPECT_FALSE(seq.broken());
}


// max_tokens below the shortest answer's bytes: the grammar still holds, and
// each token is one of those that leave the fewest bytes to complete.
TEST(ConstrainMask, WithoutRoomTheTokensThatCloseFastestAreAllowed) {
  std::vector<std::string> bytes = {"{", "}", "\"", "a", "\"a\":", "1", "x", "{\"a\":1}"};
  TokenTable table(bytes, std::vector<bool>(bytes.size(), true));
  auto constraint = std::make_shared<Constraint>();
  constraint->grammar = std::make_shared<const Grammar>(
      compiled(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"));
  constraint->max_tokens = 2;
  ConstrainedSequence seq(constraint);
  std::vector<uint8_t> allowed;
  seq.allowed_tokens(table, allowed);
  EXPECT_EQ(allowed, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 1}));  // {"a":1} whole fits
  constraint->max_tokens = 1;
  seq.accept(table, 0);  // '{', past the budget: now nothing fits
  seq.allowed_tokens(table, allowed);
  EXPECT_EQ(allowed, (std::vector<uint8_t>{0, 0, 0, 0, 1, 0, 0, 0}));  // "a": leaves 2 bytes, '"' leaves 5
  EXPECT_FALSE(seq.allows(table, 4));  // over the budget all the same
  seq.accept(table, 4);
  EXPECT_FALSE(seq.broken());
}

}  // namespace
}  // namespace xft::engine::constrain
