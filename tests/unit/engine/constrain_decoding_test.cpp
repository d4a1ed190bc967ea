// Constrained decoding through the real path (scheduler, executor, sampler,
// the Qwen tokenizer's vocabulary) on the random-weight test model, whose
// free output is noise: 200 schemas drawn from a generator covering every
// supported keyword each get an answer that parses and validates, checked by
// a validator written here independently of the compiler; a forced tool call
// always names one of the tools with valid arguments.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "engine/constrain/json_schema.h"
#include "engine/serve/assistant_output.h"
#include "engine/serve/scheduler.h"
#include "tests/unit/engine/serve_test_support.h"
#include "tests/unit/engine/tokenizer_test_support.h"

namespace xft::engine::serve {
namespace {

using json = nlohmann::json;

// ---- an independent validator for the supported keywords ----

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

bool valid(const json& v, const json& schema, const json& root) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    return valid(v, root["$defs"][ref.substr(std::string("#/$defs/").size())], root);
  }
  if (schema.contains("anyOf")) {
    for (const json& option : schema["anyOf"]) {
      if (valid(v, option, root)) return true;
    }
    return false;
  }
  if (schema.contains("const") && v != schema["const"]) return false;
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    return false;
  if (schema.contains("type")) {
    const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    if (std::none_of(types.begin(), types.end(), [&](const json& t) { return has_type(v, t.get<std::string>()); }))
      return false;
  }
  if (v.is_object()) {
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key)) {
        if (!valid(value, properties[key], root)) return false;
      } else if (schema.value("additionalProperties", true) == false) {
        return false;
      }
    }
    for (const json& name : schema.value("required", json::array())) {
      if (!v.contains(name.get<std::string>())) return false;
    }
  }
  if (v.is_array()) {
    if (v.size() < schema.value("minItems", 0u) || v.size() > schema.value("maxItems", 1000000u)) return false;
    if (schema.contains("items")) {
      for (const json& item : v) {
        if (!valid(item, schema["items"], root)) return false;
      }
    }
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get<std::string>());
    if (n < schema.value("minLength", 0u) || n > schema.value("maxLength", 1000000u)) return false;
  }
  return true;
}

TEST(ConstrainValidator, RefusesWhatTheSchemaRefuses) {
  const json schema = json::parse(R"({"type":"object","properties":{"a":{"type":"array","items":{"enum":[1,"x"]},
                                      "maxItems":2},"s":{"type":"string","minLength":2}},"required":["a"],
                                      "additionalProperties":false})");
  EXPECT_TRUE(valid(json::parse(R"({"a":[1,"x"],"s":"\u00e9\u00e9"})"), schema, schema));
  EXPECT_FALSE(valid(json::parse(R"({"a":[1,"x",1]})"), schema, schema));
  EXPECT_FALSE(valid(json::parse(R"({"a":[2]})"), schema, schema));
  EXPECT_FALSE(valid(json::parse(R"({"a":[],"s":"\u00e9"})"), schema, schema));
  EXPECT_FALSE(valid(json::parse(R"({"a":[],"t":1})"), schema, schema));
  EXPECT_FALSE(valid(json::parse(R"({"s":"ab"})"), schema, schema));
}

// ---- the schema generator ----

class SchemaGenerator {
 public:
  explicit SchemaGenerator(uint32_t seed) : rng_(seed) {}

  json schema() {
    defs_ = json::object();
    json s = value(0);
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  json value(int depth) {
    const int kinds = depth < 3 ? 13 : 9;
    switch (pick(kinds)) {
      case 0: return {{"type", "string"}};
      case 1: {
        json s = {{"type", "string"}, {"minLength", pick(3)}};
        if (pick(2)) s["maxLength"] = s["minLength"].get<int>() + pick(8);
        return s;
      }
      case 2: return {{"type", pick(2) ? "integer" : "number"}};
      case 3: return {{"type", pick(2) ? "boolean" : "null"}};
      case 4: {
        static const json pool = json::parse(R"(["red", "green", "gr\u00fcn", 3, 30, -1.5, true, null, "a \"q\""])");
        json values = json::array();
        for (int i = 0, n = 1 + pick(4); i < n; ++i) values.push_back(pool[pick(static_cast<int>(pool.size()))]);
        return {{"enum", values}};
      }
      case 5: return {{"const", pick(2) ? json("fixed") : json(42)}};
      case 6: return {{"type", json::array({"string", "null"})}};
      case 7: {
        static const std::vector<json> options = {
            {{"type", "string"}, {"maxLength", 5}}, {{"type", "integer"}}, {{"type", "null"}}, {{"type", "boolean"}},
            {{"type", "array"}, {"items", {{"type", "integer"}}}, {"maxItems", 2}}};
        std::vector<int> order = {0, 1, 2, 3, 4};
        std::shuffle(order.begin(), order.end(), rng_);
        json list = json::array();
        for (int i = 0, n = 2 + pick(2); i < n; ++i) list.push_back(options[order[i]]);
        return {{"anyOf", list}};
      }
      case 8: return json::object();  // any value
      case 9:
      case 10: return object(depth);
      case 11: {
        json s = {{"type", "array"}, {"items", value(depth + 1)}, {"minItems", pick(2)}};
        if (pick(2)) s["maxItems"] = s["minItems"].get<int>() + 1 + pick(2);
        return s;
      }
      default: {
        const std::string name = "d" + std::to_string(defs_.size());
        defs_[name] = nullptr;  // the name is taken before the definition's own refs are drawn
        defs_[name] = object(depth + 1);
        return {{"$ref", "#/$defs/" + name}};
      }
    }
  }

  json object(int depth) {
    if (pick(8) == 0) return {{"type", "object"}};  // any keys
    static const std::vector<std::string> names = {"id", "name", "tags", "x", "y_z", "caf\u00e9", "n"};
    json properties = json::object();
    json required = json::array();
    for (int i = 0, n = 1 + pick(3); i < n; ++i) {
      const std::string& key = names[pick(static_cast<int>(names.size()))];
      properties[key] = value(depth + 1);
      if (pick(2) && std::find(required.begin(), required.end(), key) == required.end()) required.push_back(key);
    }
    json s = {{"type", "object"}, {"properties", properties}, {"required", required}};
    if (pick(2)) s["additionalProperties"] = false;
    return s;
  }

  std::mt19937 rng_;
  json defs_;
};

// ---- decoding ----

std::shared_ptr<const constrain::TokenTable> qwen_table(const Tokenizer& tok) {
  std::vector<std::string> bytes;
  std::vector<bool> text;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    bytes.emplace_back(tok.token_bytes(id));
    text.push_back(!tok.is_special(id));
  }
  return std::make_shared<const constrain::TokenTable>(std::move(bytes), std::move(text));
}

struct Answer {
  std::string text;
  std::string finish_reason;
};

// Runs every grammar as one request through one scheduler (16 at a time), sampled with
// temperature 1 (every fifth greedy), or all greedy; logprobs >= 0 asks for log-probabilities.
std::vector<Answer> decode_all(const Tokenizer& tok, const std::vector<std::shared_ptr<const constrain::Grammar>>& grammars,
                               int max_tokens, bool all_greedy = false, int logprobs = -1) {
  auto t = testing::tiny_model(3, false, 256);
  SchedulerOptions options;
  options.max_batch = 16;
  options.max_queue = static_cast<int>(grammars.size());
  Scheduler scheduler(*t.model, options);
  scheduler.set_token_table(qwen_table(tok));
  std::atomic<bool> stop{false};
  std::thread loop([&] { EXPECT_TRUE(scheduler.run(stop).ok()); });
  const std::vector<int32_t> stops = {tok.endoftext(), tok.im_end()};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < grammars.size(); ++i) {
    GenerationRequest r;
    r.prompt = testing::prompt_of(6, static_cast<int>(i));
    r.sampling.temperature = 1.0f;
    r.sampling.greedy = all_greedy || i % 5 == 0;  // some greedy, the rest sampled
    r.sampling.logprobs = logprobs;
    r.sampling.seed = 100 + i;
    r.max_tokens = max_tokens;
    r.stop_ids = stops;
    auto constraint = std::make_shared<constrain::Constraint>();
    constraint->grammar = grammars[i];
    constraint->stop_ids = stops;
    constraint->max_tokens = max_tokens;
    r.constraint = constraint;
    auto s = scheduler.submit(r);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (s.ok()) streams.push_back(*s);
  }
  std::vector<Answer> answers;
  for (auto& stream : streams) {
    std::vector<int32_t> ids;
    while (stream->next(ids, std::chrono::milliseconds(100))) {
    }
    answers.push_back({tok.decode(ids), stream->finish_reason()});
  }
  stop = true;
  loop.join();
  return answers;
}

constexpr int kMaxTokens = 40;

TEST(ConstrainDecoding, TwoHundredGeneratedSchemasAllGetValidAnswers) {
  const Tokenizer* tok = engine::testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  SchemaGenerator generator(2026);
  std::vector<json> schemas;
  std::vector<std::shared_ptr<const constrain::Grammar>> grammars;
  while (schemas.size() < 200) {
    json schema = generator.schema();
    auto grammar = constrain::compile_json_schema(schema);
    ASSERT_TRUE(grammar.ok()) << schema.dump() << ": " << grammar.error().message;
    if (grammar->nodes[grammar->root].min_bytes > kMaxTokens / 2) continue;  // room to say something
    schemas.push_back(schema);
    grammars.push_back(std::make_shared<const constrain::Grammar>(std::move(*grammar)));
  }
  const std::vector<Answer> answers = decode_all(*tok, grammars, kMaxTokens);
  ASSERT_EQ(answers.size(), schemas.size());
  int nontrivial = 0;
  for (size_t i = 0; i < schemas.size(); ++i) {
    const json answer = json::parse(answers[i].text, nullptr, false);
    ASSERT_FALSE(answer.is_discarded()) << "schema " << schemas[i].dump() << "\nanswer " << answers[i].text;
    EXPECT_TRUE(valid(answer, schemas[i], schemas[i])) << "schema " << schemas[i].dump() << "\nanswer " << answers[i].text;
    EXPECT_TRUE(answers[i].finish_reason == "stop" || answers[i].finish_reason == "length") << answers[i].finish_reason;
    nontrivial += answers[i].text.size() > 12;
  }
  EXPECT_GT(nontrivial, 50);  // the noise fills strings and arrays, not only the shortest answers
}

// A greedy draw without log-probabilities tries the best tokens by logit before a
// whole mask; with log-probabilities it always builds the mask. Both take the same tokens.
TEST(ConstrainDecoding, GreedyShortcutTakesTheTokensOfTheWholeMask) {
  const Tokenizer* tok = engine::testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  SchemaGenerator generator(77);
  std::vector<std::shared_ptr<const constrain::Grammar>> grammars;
  while (grammars.size() < 24) {
    auto grammar = constrain::compile_json_schema(generator.schema());
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    if (grammar->nodes[grammar->root].min_bytes > kMaxTokens / 2) continue;
    grammars.push_back(std::make_shared<const constrain::Grammar>(std::move(*grammar)));
  }
  const std::vector<Answer> shortcut = decode_all(*tok, grammars, kMaxTokens, true);
  const std::vector<Answer> masked = decode_all(*tok, grammars, kMaxTokens, true, 0);
  ASSERT_EQ(shortcut.size(), masked.size());
  for (size_t i = 0; i < shortcut.size(); ++i) {
    EXPECT_EQ(shortcut[i].text, masked[i].text) << i;
    EXPECT_EQ(shortcut[i].finish_reason, masked[i].finish_reason) << i;
  }
}

TEST(ConstrainDecoding, ForcedToolCallsNameAGivenToolWithValidArguments) {
  const Tokenizer* tok = engine::testing::json_tokenizer();
  ASSERT_NE(tok, nullptr);
  const json weather = json::parse(R"({"type":"object","properties":{"city":{"type":"string","maxLength":10},
                                       "unit":{"enum":["C","F"]}},"required":["city"],"additionalProperties":false})");
  const json add = json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
                                   "required":["a","b"]})");
  auto grammar = constrain::compile_tool_call({{"get_weather", weather}, {"add", add}, {"now", nullptr}});
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  std::vector<std::shared_ptr<const constrain::Grammar>> grammars(
      16, std::make_shared<const constrain::Grammar>(std::move(*grammar)));
  const std::vector<Answer> answers = decode_all(*tok, grammars, 56);
  std::set<std::string> names;
  for (const Answer& a : answers) {
    ASSERT_EQ(a.text.rfind("<tool_call>\n", 0), 0u) << a.text;
    ASSERT_GE(a.text.size(), 24u);
    ASSERT_EQ(a.text.substr(a.text.size() - 13), "\n</tool_call>") << a.text;
    std::string name, arguments;
    ASSERT_TRUE(parse_tool_call_body(a.text.substr(12, a.text.size() - 25), name, arguments)) << a.text;
    const json args = json::parse(arguments);
    if (name == "get_weather") {
      EXPECT_TRUE(valid(args, weather, weather)) << a.text;
    } else if (name == "add") {
      EXPECT_TRUE(valid(args, add, add)) << a.text;
    } else {
      EXPECT_EQ(name, "now");
      EXPECT_TRUE(args.is_object());
    }
    EXPECT_EQ(a.finish_reason, "stop");
    names.insert(name);
  }
  EXPECT_GT(names.size(), 1u);  // the choice is the model's, not always the first tool
}

}  // namespace
}  // namespace xft::engine::serve
