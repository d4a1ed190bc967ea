// The assistant-output parser on scripted model outputs: reasoning split off,
// tool calls in both Qwen forms, calls and markers split across stream pieces
// at every byte, several calls, malformed calls kept as content, thinking
// never closed. Streamed events always add up to the whole message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/serve/assistant_output.h"

namespace xft::engine::serve {
namespace {

struct Collected {
  std::string content, reasoning;
  std::vector<ToolCall> calls;  // assembled from the events as an OpenAI SDK does
  AssistantMessage message;
};

Collected run(const AssistantOutputOptions& options, const std::vector<std::string>& pieces) {
  AssistantOutputParser parser(options);
  Collected c;
  auto take = [&](const std::vector<OutputEvent>& events) {
    for (const OutputEvent& e : events) {
      switch (e.kind) {
        case OutputEvent::Kind::Content: c.content += e.text; break;
        case OutputEvent::Kind::Reasoning: c.reasoning += e.text; break;
        case OutputEvent::Kind::ToolCallStart:
          ASSERT_EQ(e.index, static_cast<int>(c.calls.size()));
          c.calls.push_back({e.id, e.name, ""});
          break;
        case OutputEvent::Kind::ToolCallArguments:
          ASSERT_LT(e.index, static_cast<int>(c.calls.size()));
          c.calls[e.index].arguments += e.text;
          break;
      }
    }
  };
  for (const std::string& p : pieces) take(parser.push(p));
  take(parser.finish());
  c.message = parser.message();
  return c;
}

// The same text cut into pieces at every possible byte pair: the result may not depend on the cut.
void expect_same_for_every_split(const AssistantOutputOptions& options, const std::string& text) {
  const Collected whole = run(options, {text});
  EXPECT_EQ(whole.content, whole.message.content);
  EXPECT_EQ(whole.reasoning, whole.message.reasoning);
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); b += 7) {
      const Collected split = run(options, {text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      ASSERT_EQ(split.content, whole.content) << "cut at " << a << ", " << b;
      ASSERT_EQ(split.reasoning, whole.reasoning) << "cut at " << a << ", " << b;
      ASSERT_EQ(split.calls.size(), whole.calls.size()) << "cut at " << a << ", " << b;
      for (size_t i = 0; i < split.calls.size(); ++i) {
        EXPECT_EQ(split.calls[i].name, whole.calls[i].name);
        EXPECT_EQ(split.calls[i].arguments, whole.calls[i].arguments);
        // The streamed fragments add up to exactly the message's arguments.
        EXPECT_EQ(split.calls[i].arguments, split.message.tool_calls[i].arguments);
      }
    }
  }
}

AssistantOutputOptions thinking_with_tools() {
  AssistantOutputOptions o;
  o.split_reasoning = true;
  o.parse_tool_calls = true;
  return o;
}

TEST(ServeAssistantOutput, ReasoningIsSplitFromTheAnswer) {
  const Collected c = run(thinking_with_tools(), {"<think>\nLet me see.\n</think>\n\nParis."});
  EXPECT_EQ(c.message.reasoning, "Let me see.");
  EXPECT_EQ(c.message.content, "Paris.");
  EXPECT_TRUE(c.message.tool_calls.empty());
  expect_same_for_every_split(thinking_with_tools(), "<think>\nLet me see.\n</think>\n\nParis.");
}

TEST(ServeAssistantOutput, APromptThatOpenedThinkingStartsInReasoning) {
  AssistantOutputOptions o = thinking_with_tools();
  o.starts_in_reasoning = true;
  const Collected c = run(o, {"hmm, 2+2", "\n</think>\n\n4"});
  EXPECT_EQ(c.message.reasoning, "hmm, 2+2");
  EXPECT_EQ(c.message.content, "4");
}

TEST(ServeAssistantOutput, ThinkingNeverClosedStaysReasoning) {
  AssistantOutputOptions o = thinking_with_tools();
  const Collected c = run(o, {"<think>\nstill thinking when max_tokens", " ran out\n"});
  EXPECT_EQ(c.message.reasoning, "still thinking when max_tokens ran out");
  EXPECT_EQ(c.message.content, "");
}

TEST(ServeAssistantOutput, WithoutReasoningSplitThinkStaysInContent) {
  AssistantOutputOptions o;
  o.parse_tool_calls = true;
  const Collected c = run(o, {"<think>\nx\n</think>\n\ny"});
  EXPECT_EQ(c.message.content, "<think>\nx\n</think>\n\ny");
  EXPECT_EQ(c.message.reasoning, "");
}

TEST(ServeAssistantOutput, AnAnswerWithoutThinkingKeepsItsWhitespace) {
  const Collected c = run(thinking_with_tools(), {"\n\n  Hi", " there \n"});
  EXPECT_EQ(c.message.content, "\n\n  Hi there \n");
  expect_same_for_every_split(thinking_with_tools(), "\n <thin Hi\n");
}

TEST(ServeAssistantOutput, PassthroughChangesNothing) {
  AssistantOutputOptions o;
  const Collected c = run(o, {"  <tool_call>{\"name\": \"f\"}</tool_call>\n", "<think>\n"});
  EXPECT_EQ(c.message.content, "  <tool_call>{\"name\": \"f\"}</tool_call>\n<think>\n");
}

TEST(ServeAssistantOutput, SeveralHermesCallsBecomeToolCalls) {
  const std::string text =
      "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"München\", \"days\": 3}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  const Collected c = run(thinking_with_tools(), {text});
  ASSERT_EQ(c.message.tool_calls.size(), 2u);
  EXPECT_EQ(c.message.tool_calls[0].name, "get_weather");
  // The model's own text: what the streamed fragments added up to.
  EXPECT_EQ(c.message.tool_calls[0].arguments, R"({"city": "München", "days": 3})");
  EXPECT_EQ(c.message.tool_calls[0].id, "call_0");
  EXPECT_EQ(c.message.tool_calls[1].name, "get_time");
  EXPECT_EQ(c.message.tool_calls[1].arguments, "{}");
  EXPECT_EQ(c.message.tool_calls[1].id, "call_1");
  EXPECT_EQ(c.message.content, "");
  EXPECT_EQ(c.message.reasoning, "Need weather.");
  EXPECT_EQ(c.calls.size(), 2u);
  EXPECT_EQ(c.calls[0].arguments, c.message.tool_calls[0].arguments);
  expect_same_for_every_split(thinking_with_tools(), text);
}

TEST(ServeAssistantOutput, QwenXmlCallsBecomeToolCalls) {
  const std::string text =
      "Let me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nMünchen\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"metric\": true}\n</parameter>\n</function>\n</tool_call>";
  const Collected c = run(thinking_with_tools(), {text});
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].name, "get_weather");
  EXPECT_EQ(c.message.tool_calls[0].arguments, R"({"city":"München","days":3,"opts":{"metric":true}})");
  EXPECT_EQ(c.message.content, "Let me check.");
  expect_same_for_every_split(thinking_with_tools(), text);
}

TEST(ServeAssistantOutput, MalformedCallsStayContent) {
  const std::string text = "<tool_call>\n[\"f\"]\n</tool_call> and <tool_call>{\"arguments\": {}}</tool_call> <tool_call>{\"name\": \"f\"";
  const Collected c = run(thinking_with_tools(), {text});
  EXPECT_TRUE(c.message.tool_calls.empty());
  EXPECT_EQ(c.message.content, text);
  expect_same_for_every_split(thinking_with_tools(), text);
}

// Streamed arguments cannot be taken back: a call that broke off keeps the
// valid JSON its arguments began (closed), and its whole text is content too.
TEST(ServeAssistantOutput, ACallThatBreaksOffIsClosedAndAlsoGivenAsContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, \"x\\\"y\"], \"b\": }\n</tool_call> ok";
  const Collected c = run(thinking_with_tools(), {text});
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].name, "f");
  EXPECT_EQ(c.message.tool_calls[0].arguments, R"({"a": [1, "x\"y"]})");
  EXPECT_EQ(c.message.content, text);
  expect_same_for_every_split(thinking_with_tools(), text);
  // Generation ended inside a string value.
  const Collected cut = run(thinking_with_tools(), {"Sure: <tool_call>\n{\"name\": \"rm\", \"arguments\": {\"path\": \"/tmp/x"});
  ASSERT_EQ(cut.message.tool_calls.size(), 1u);
  EXPECT_EQ(cut.message.tool_calls[0].arguments, R"({"path": "/tmp/x"})");
  EXPECT_EQ(cut.calls[0].arguments, cut.message.tool_calls[0].arguments);
  EXPECT_EQ(cut.message.content, "Sure: <tool_call>\n{\"name\": \"rm\", \"arguments\": {\"path\": \"/tmp/x");
  // Generation ended right after the JSON, before </tool_call>: the call is whole.
  const Collected unclosed = run(thinking_with_tools(), {"Sure: <tool_call>\n{\"name\": \"f\"", ", \"arguments\": {}}"});
  ASSERT_EQ(unclosed.message.tool_calls.size(), 1u);
  EXPECT_EQ(unclosed.message.tool_calls[0].arguments, "{}");
  EXPECT_EQ(unclosed.message.content, "Sure:");
}

// OpenAI's stream: the call's id and name as soon as the name is read, then
// the arguments in fragments as the text arrives, never past what is valid.
TEST(ServeAssistantOutput, ArgumentsStreamAsTheyArrive) {
  AssistantOutputParser parser(thinking_with_tools());
  auto texts = [](const std::vector<OutputEvent>& events) {
    std::vector<std::string> out;
    for (const OutputEvent& e : events) {
      if (e.kind == OutputEvent::Kind::ToolCallStart) out.push_back("start " + e.id + " " + e.name);
      if (e.kind == OutputEvent::Kind::ToolCallArguments) out.push_back("args " + e.text);
      if (e.kind == OutputEvent::Kind::Content) out.push_back("content " + e.text);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(texts(parser.push("Hi <tool_call>\n{\"name\": \"get_")), V{"content Hi"});
  EXPECT_EQ(texts(parser.push("weather\", \"arguments\"")), V{});
  EXPECT_EQ(texts(parser.push(": {\"city\"")), (V{"start call_0 get_weather", "args {"}));
  EXPECT_EQ(texts(parser.push(": \"Par")), V{"args \"city\": \"Par"});
  EXPECT_EQ(texts(parser.push("is\", \"days\": 1")), V{"args is\", \"days\": 1"});
  EXPECT_EQ(texts(parser.push(".")), V{});  // "1." is no number yet
  EXPECT_EQ(texts(parser.push("5, \"u\": tr")), V{"args .5"});
  EXPECT_EQ(texts(parser.push("ue}}\n</tool")), V{"args , \"u\": true}"});
  EXPECT_EQ(texts(parser.push("_call>")), V{});
  EXPECT_EQ(texts(parser.finish()), V{});
  ASSERT_EQ(parser.message().tool_calls.size(), 1u);
  EXPECT_EQ(parser.message().tool_calls[0].arguments, R"({"city": "Paris", "days": 1.5, "u": true})");
}

TEST(ServeAssistantOutput, QwenXmlCallsStreamAParameterAtATime) {
  AssistantOutputParser parser(thinking_with_tools());
  auto args = [](const std::vector<OutputEvent>& events) {
    std::vector<std::string> out;
    for (const OutputEvent& e : events) {
      if (e.kind == OutputEvent::Kind::ToolCallStart) out.push_back("start " + e.name);
      if (e.kind == OutputEvent::Kind::ToolCallArguments) out.push_back(e.text);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(args(parser.push("<tool_call>\n<function=get_wea")), V{});
  EXPECT_EQ(args(parser.push("ther>\n<parameter=city>\nPa")), V{"start get_weather"});
  EXPECT_EQ(args(parser.push("ris\n</parameter>\n<param")), V{R"({"city":"Paris")"});
  EXPECT_EQ(args(parser.push("eter=days>\n2\n</parameter>\n</function>")), (V{R"(,"days":2)", "}"}));
  EXPECT_EQ(args(parser.push("\n</tool_call>")), V{});
  parser.finish();
  ASSERT_EQ(parser.message().tool_calls.size(), 1u);
  EXPECT_EQ(parser.message().tool_calls[0].arguments, R"({"city":"Paris","days":2})");
  EXPECT_EQ(parser.message().content, "");
  // Broken off after a parameter: closed, and the text is content too.
  const std::string broken = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\noops</tool_call>";
  const Collected c = run(thinking_with_tools(), {broken});
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(c.message.content, broken);
  expect_same_for_every_split(thinking_with_tools(), broken);
  const Collected empty = run(thinking_with_tools(), {"<tool_call><function=g></function></tool_call>"});
  ASSERT_EQ(empty.message.tool_calls.size(), 1u);
  EXPECT_EQ(empty.calls[0].arguments, "{}");
}

TEST(ServeAssistantOutput, SingleToolCallEndsTheAnswerAtTheFirstCall) {
  AssistantOutputOptions o = thinking_with_tools();
  o.single_tool_call = true;
  const std::string text = "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
  AssistantOutputParser parser(o);
  parser.push(text.substr(0, 40));
  EXPECT_FALSE(parser.ended());
  parser.push(text.substr(40));
  EXPECT_TRUE(parser.ended());
  parser.finish();
  ASSERT_EQ(parser.message().tool_calls.size(), 1u);
  EXPECT_EQ(parser.message().tool_calls[0].name, "a");
  EXPECT_EQ(parser.message().content, "");
  expect_same_for_every_split(o, text);
  // A malformed call is no call: the next one still counts.
  const Collected c = run(o, {"<tool_call>[]</tool_call><tool_call>{\"name\": \"b\"}</tool_call> tail"});
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].name, "b");
  EXPECT_EQ(c.message.content, "<tool_call>[]</tool_call>");
}

// A head that never opens its arguments is not matched again forever: past
// 1 KiB the call is read whole when it closes.
TEST(ServeAssistantOutput, ALongHeadIsReadWhole) {
  const std::string name(3000, 'f');
  const Collected c = run(thinking_with_tools(), {"<tool_call>{\"name\": \"", name, "\"}</tool_call>"});
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].name, name);
  EXPECT_EQ(c.calls[0].arguments, "{}");
}

TEST(ServeAssistantOutput, CallHeadIsMatchedAsItArrives) {
  std::string name;
  size_t at = 0;
  EXPECT_EQ(match_call_head(" {\"name\": \"f\\u00e9\" ,\n \"parameters\" : {\"a\"", name, at), CallHead::Ok);
  EXPECT_EQ(name, "f\u00e9");
  EXPECT_EQ(at, 38u);
  EXPECT_EQ(match_call_head(" {\"name\": \"f\\\"", name, at), CallHead::NeedMore);
  EXPECT_EQ(match_call_head("{\"name\": \"f\", \"arguments\": \"{", name, at), CallHead::NoMatch);
  EXPECT_EQ(match_call_head("{\"arguments\": {", name, at), CallHead::NoMatch);
  EXPECT_EQ(match_call_head("{\"name\": \"\", ", name, at), CallHead::NoMatch);
  EXPECT_EQ(match_call_head("<function=f>", name, at), CallHead::NoMatch);
}

TEST(ServeAssistantOutput, TextAroundCallsAndMarkerLookalikes) {
  const std::string text = "a <tool b <think> c </think> d <tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>";
  const Collected c = run(thinking_with_tools(), {text});
  EXPECT_EQ(c.message.content, "a <tool b <think> c </think> d");
  ASSERT_EQ(c.message.tool_calls.size(), 1u);
  EXPECT_EQ(c.message.tool_calls[0].arguments, R"({"x":1})");  // double-encoded arguments read as the object
  expect_same_for_every_split(thinking_with_tools(), text);
}

TEST(ServeAssistantOutput, ParseToolCallBodyRefusesWhatIsNoCall) {
  std::string name, args;
  EXPECT_FALSE(parse_tool_call_body("[1]", name, args));
  EXPECT_FALSE(parse_tool_call_body(R"({"name": 3})", name, args));
  EXPECT_FALSE(parse_tool_call_body(R"({"name": "f", "arguments": [1]})", name, args));
  EXPECT_FALSE(parse_tool_call_body("<function=f>\n<parameter=a>\n1\n</function>", name, args));
  EXPECT_TRUE(parse_tool_call_body(R"({"name": "f", "parameters": {"a": 1}})", name, args));
  EXPECT_EQ(args, R"({"a":1})");
}

}  // namespace
}  // namespace xft::engine::serve
