// response_format and a forced tool_choice as the request parser reads them,
// and the grammar (or the 400) each request gets.
#include <gtest/gtest.h>

#include "engine/serve/openai_api.h"
#include "engine/serve/structured_output.h"

namespace xft::engine::serve {
namespace {

CompletionRequest parsed(const std::string& fields) {
  auto r = parse_completion_request(R"({"messages":[{"role":"user","content":"a"}],)" + fields + "}", true);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : CompletionRequest{};
}

const char* kTools = R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",
  "properties":{"x":{"type":"integer"}},"required":["x"]}}},{"type":"function","function":{"name":"g"}}])";

TEST(ServeStructuredOutput, ResponseFormatsAndForcedToolChoicesAreRead) {
  CompletionRequest schema = parsed(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,
                                       "schema":{"type":"integer"}}})");
  EXPECT_EQ(schema.response_format, "json_schema");
  EXPECT_EQ(schema.response_schema, nlohmann::json::parse(R"({"type":"integer"})"));
  EXPECT_EQ(parsed(R"("response_format":{"type":"json_object"})").response_format, "json_object");
  EXPECT_EQ(parsed(R"("response_format":{"type":"text"})").response_format, "text");
  CompletionRequest named = parsed(std::string(kTools) + R"(,"tool_choice":{"type":"function","function":{"name":"g"}})");
  EXPECT_TRUE(named.tool_choice_required);
  EXPECT_EQ(named.tool_choice_function, "g");
  EXPECT_TRUE(parsed(std::string(kTools) + R"(,"tool_choice":"required")").tool_choice_required);
}

TEST(ServeStructuredOutput, EachRequestGetsItsGrammarOrA400) {
  auto none = request_grammar(parsed(R"("response_format":{"type":"text"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto object = request_grammar(parsed(R"("response_format":{"type":"json_object"})"));
  ASSERT_TRUE(object.ok() && *object);
  auto named = request_grammar(parsed(std::string(kTools) + R"(,"tool_choice":{"type":"function","function":{"name":"f"}})"));
  ASSERT_TRUE(named.ok() && *named);
  constrain::MatchState state(**named);
  EXPECT_TRUE(state.advance(**named, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\":1}}\n</tool_call>"));
  EXPECT_TRUE(state.closed());
  constrain::MatchState other(**named);
  EXPECT_FALSE(other.advance(**named, "<tool_call>\n{\"name\": \"g\""));  // only the named one

  auto no_tools = request_grammar(parsed(R"("tool_choice":"required")"));
  ASSERT_FALSE(no_tools.ok());
  EXPECT_EQ(no_tools.error().param, "tool_choice");
  EXPECT_EQ(no_tools.error().message, "'tool_choice' asks for a call but the request has no 'tools'");
  auto bad_schema = request_grammar(parsed(R"("response_format":{"type":"json_schema","json_schema":{"name":"n",
                                              "schema":{"type":"string","format":"email"}}})"));
  ASSERT_FALSE(bad_schema.ok());
  EXPECT_EQ(bad_schema.error().status, 400);
  EXPECT_EQ(bad_schema.error().param, "response_format");
  EXPECT_EQ(bad_schema.error().message.substr(0, 83),
            "'response_format.json_schema.schema': keyword 'format' at the schema's root is not ");
}

}  // namespace
}  // namespace xft::engine::serve
