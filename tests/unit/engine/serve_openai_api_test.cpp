#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "engine/serve/openai_api.h"
#include "engine/serve/server.h"
#include "engine/serve/stop_text.h"

namespace xft::engine::serve {
namespace {

using json = nlohmann::json;

ApiError rejected(const std::string& body, bool chat = true) {
  auto parsed = parse_completion_request(body, chat);
  EXPECT_FALSE(parsed.ok()) << body;
  return parsed.ok() ? ApiError{} : parsed.error();
}

TEST(ServeOpenAiApi, ParsesAChatRequestWithEveryField) {
  auto r = parse_completion_request(R"({"model":"m","messages":[{"role":"system","content":"s"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "stream":true,"stream_options":{"include_usage":true},"max_tokens":7,"temperature":0,
      "top_p":0.5,"top_k":3,"stop":["x","y"],"seed":9,"n":1,"user":"u","ignore_eos":true})",
                                    true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages, (std::vector<std::pair<std::string, std::string>>{{"system", "s"}, {"user", "ab"}}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_EQ(r->temperature, 0.0f);
  EXPECT_EQ(r->top_p, 0.5f);
  EXPECT_EQ(r->top_k, 3);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(r->seed, 9u);
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_TRUE(r->skip_special_tokens);  // vLLM's default
  auto raw = parse_completion_request(R"({"prompt":"a","skip_special_tokens":false})", false);
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(raw->skip_special_tokens);
}

TEST(ServeOpenAiApi, CompletionsTakeAPromptAndDefaultToOpenAisSampling) {
  auto r = parse_completion_request(R"({"prompt":"hi","stop":"\n"})", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompt, "hi");
  EXPECT_EQ(r->temperature, 1.0f);
  EXPECT_FALSE(r->max_tokens.has_value());
  EXPECT_EQ(r->stop, std::vector<std::string>{"\n"});
}

TEST(ServeOpenAiApi, BadRequestsNameTheFieldInOpenAisErrorShape) {
  EXPECT_EQ(rejected("{not json").code, "invalid_json");
  EXPECT_EQ(rejected("[1]").message, "the request body must be a JSON object");
  ApiError unknown = rejected(R"({"messages":[{"role":"user","content":"a"}],"temprature":1})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.param, "temprature");
  EXPECT_EQ(unknown.message, "unknown field 'temprature'");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":-1})").message,
            "'max_tokens' must be a positive integer, got -1");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"max_tokens":1.5})").param, "max_tokens");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"temperature":3})").param, "temperature");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"top_p":0})").param, "top_p");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"n":9})").param, "n");
  EXPECT_EQ(rejected(R"({"messages":[]})").param, "messages");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"robot","content":"a"}]})").param, "messages[0].role");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a","x":1}]})").param, "messages[0].x");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}})").param,
            "stream_options");
  EXPECT_EQ(rejected(R"({"prompt":"a","messages":[]})", false).param, "messages");
  EXPECT_EQ(rejected(R"({"max_tokens":3})", false).param, "prompt");
  EXPECT_EQ(rejected(R"({"prompt":"a","stop":["1","2","3","4","5"]})", false).param, "stop");

  json body = json::parse(error_body(ApiError{400, "m", "invalid_request_error", "p", ""}));
  EXPECT_EQ(body, json::parse(R"({"error":{"message":"m","type":"invalid_request_error","param":"p","code":null}})"));
}

TEST(ServeOpenAiApi, AnImagePartIsA400SayingImagesAreNotSupported) {
  const std::string message =
      "'messages[1].content[1]': images are not supported: only the text model is loaded (a vision tower, if the "
      "checkpoint has one, is skipped); send text parts only";
  for (const std::string part : {R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})",
                                 R"({"type":"input_image","image_url":"https://example.com/cat.png"})",
                                 R"({"type":"image","image":"https://example.com/cat.png"})"}) {
    ApiError error = rejected(R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[)"
                              R"({"type":"text","text":"what is this?"},)" +
                              part + "]}]}");
    EXPECT_EQ(error.status, 400) << part;
    EXPECT_EQ(error.message, message) << part;
    EXPECT_EQ(error.param, "messages[1].content[1]") << part;
    EXPECT_EQ(error.code, "images_not_supported") << part;
  }
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":[{"type":"audio","data":"x"}]}]})").message,
            "'messages[0].content': only parts of type 'text' are supported");
}

TEST(ServeOpenAiApi, TheDeveloperRoleIsTheSystemMessage) {
  auto r = parse_completion_request(
      R"({"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}]})", true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages, (std::vector<std::pair<std::string, std::string>>{{"system", "be brief"}, {"user", "hi"}}));
  EXPECT_EQ(rejected(R"({"messages":[{"role":"robot","content":"a"}]})").message,
            "'messages[0].role' must be system, developer, user, assistant or tool, got 'robot'");
}

// What the openai SDKs, LangChain and LiteLLM send by default changes nothing here.
TEST(ServeOpenAiApi, FieldsClientsSendAtTheirDefaultsAreAccepted) {
  auto r = parse_completion_request(R"({"model":"m","messages":[{"role":"user","content":"a"}],
      "response_format":{"type":"text"},"tools":[],"tool_choice":"auto","parallel_tool_calls":true,
      "logit_bias":{},"logprobs":false,"top_logprobs":0,"user":"u","n":1,"frequency_penalty":0,
      "presence_penalty":0,"functions":[],"stream":true,"stream_options":{"include_usage":false}})",
                                    true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->include_usage);
  auto nulls = parse_completion_request(R"({"messages":[{"role":"user","content":"a"}],"response_format":null,
      "tools":null,"logit_bias":null,"top_logprobs":null,"tool_choice":null,"n":null})",
                                        true);
  ASSERT_TRUE(nulls.ok()) << nulls.error().message;
  EXPECT_TRUE(nulls->model.empty());  // no model: the one served
  auto text = parse_completion_request(R"({"prompt":"a","logit_bias":{},"echo":false,"best_of":1,"suffix":""})", false);
  ASSERT_TRUE(text.ok()) << text.error().message;
}

TEST(ServeOpenAiApi, OtherValuesOfThoseFieldsAre400sNamingTheField) {
  const std::string user = R"({"messages":[{"role":"user","content":"a"}],)";
  ApiError schema = rejected(user + R"("response_format":{"type":"json_schema","json_schema":{"name":"answer","schemas":{}}}})");
  EXPECT_EQ(schema.status, 400);
  EXPECT_EQ(schema.type, "invalid_request_error");
  EXPECT_EQ(schema.param, "response_format");
  EXPECT_EQ(schema.message, "unknown field 'response_format.json_schema.schemas'");
  ApiError tools = rejected(user + R"("tools":[{"type":"function","function":{"name":""}}]})");
  EXPECT_EQ(tools.param, "tools[0].function.name");
  EXPECT_EQ(tools.message, "'tools[0].function.name' must be a non-empty string");
  EXPECT_EQ(rejected(user + R"("tools":[{"type":"retrieval"}]})").param, "tools[0]");
  EXPECT_EQ(rejected(user + R"("tool_choice":"sometimes"})").message,
            R"('tool_choice' must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}})");
  EXPECT_EQ(rejected(user + R"("response_format":{"type":"yaml"}})").message,
            R"('response_format.type' must be "text", "json_object" or "json_schema", got "yaml")");
  EXPECT_EQ(rejected(user + R"("logit_bias":{"15":-100}})").param, "logit_bias");
  EXPECT_EQ(rejected(user + R"("top_logprobs":2})").param, "top_logprobs");  // without logprobs: true
  EXPECT_EQ(rejected(user + R"("tool_choice":{"type":"function"}})").param, "tool_choice");
  EXPECT_EQ(rejected(user + R"("parallel_tool_calls":"yes"})").param, "parallel_tool_calls");
  EXPECT_EQ(rejected(user + R"("n":9})").message, "'n' must be an integer from 1 to 8, got 9");
  EXPECT_EQ(rejected(user + R"("n":0})").param, "n");
  EXPECT_EQ(rejected(R"({"prompt":"a","n":1.5})", false).message, "'n' must be an integer from 1 to 8, got 1.5");
  // Chat-only fields are unknown to /v1/completions.
  EXPECT_EQ(rejected(R"({"prompt":"a","tools":[]})", false).message, "unknown field 'tools'");
  EXPECT_EQ(error_body(schema), R"({"error":{"code":null,"message":"unknown field 'response_format.json_schema.schemas'","param":"response_format","type":"invalid_request_error"}})");
}

TEST(ServeAccessLog, OneLineWithMethodPathStatusTokensAndTime) {
  EXPECT_EQ(access_line(AccessRecord{"POST", "/v1/chat/completions", 200, 17, 8, 412}),
            "POST /v1/chat/completions 200 prompt=17 completion=8 412ms");
  EXPECT_EQ(access_line(AccessRecord{"GET", "/a\x01" "b", 404, 0, 0, 0}), "GET /a?b 404 prompt=0 completion=0 0ms");
  EXPECT_EQ(access_line(AccessRecord{"GET", "/" + std::string(300, 'x'), 404, 0, 0, 1}),
            "GET /" + std::string(199, 'x') + "... 404 prompt=0 completion=0 1ms");
}

TEST(ServeOpenAiApi, ResponseAndChunkBodiesHaveOpenAisShape) {
  ResponseIds ids{"chatcmpl-1", 5, "qwen"};
  json full = json::parse(completion_body(ids, true, "hi", "length", Usage{3, 2}));
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"], json::parse(R"({"role":"assistant","content":"hi"})"));
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(full["usage"], json::parse(R"({"prompt_tokens":3,"completion_tokens":2,"total_tokens":5})"));

  json first = json::parse(chunk_body(ids, true, "", "assistant", ""));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role":"assistant"})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(json::parse(chunk_body(ids, true, "ab", "", ""))["choices"][0]["delta"], json::parse(R"({"content":"ab"})"));
  json last = json::parse(chunk_body(ids, true, "", "", "stop"));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  json usage = json::parse(usage_chunk_body(ids, true, Usage{1, 1}));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 2);

  json text = json::parse(completion_body(ResponseIds{"cmpl-1", 5, "q"}, false, "x", "stop", Usage{}));
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
}

TEST(ServeOpenAiApi, JsonNestedDeeperThan64IsRefusedBeforeParsing) {
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_EQ(json_nesting_depth(deep, 100), 65);
  EXPECT_EQ(json_nesting_depth(R"({"a":"[[[[\"[[","b":[{}]})", 100), 3);  // brackets in strings do not count
  ApiError too_deep = rejected(R"({"messages":[{"role":"user","content":"a"}],"x":)" + deep + "}");
  EXPECT_EQ(too_deep.status, 400);
  EXPECT_EQ(too_deep.code, "invalid_json");
  EXPECT_EQ(too_deep.message, "the request body nests JSON deeper than 64 levels");
  // 8 MiB of '[': refused by the scan, which stops at level 65, instead of parsed level by level.
  EXPECT_EQ(json_nesting_depth(std::string(8 << 20, '['), kMaxJsonDepth), kMaxJsonDepth + 1);
  EXPECT_EQ(rejected(std::string(8 << 20, '[')).message, "the request body nests JSON deeper than 64 levels");
  // 64 levels are fine as JSON (the field is still unknown).
  const std::string ok_depth = std::string(63, '[') + std::string(63, ']');
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"x":)" + ok_depth + "}").message, "unknown field 'x'");
}

TEST(ServeStopText, HoldsBackWhatMayStartAStopStringAndCutsAtTheFirstMatch) {
  StopText stop({"END", "\n\n"});
  EXPECT_EQ(stop.push("abc E"), "abc ");
  EXPECT_EQ(stop.push("N"), "");
  EXPECT_EQ(stop.push("x"), "ENx");
  EXPECT_EQ(stop.push("yE"), "y");
  EXPECT_EQ(stop.push("ND and more"), "");
  EXPECT_TRUE(stop.stopped());
  EXPECT_EQ(stop.push("later"), "");
  EXPECT_EQ(stop.flush(), "");

  StopText newline({"\n\n"});
  EXPECT_EQ(newline.push("a\n"), "a");
  EXPECT_EQ(newline.flush(), "\n");
  StopText none({});
  EXPECT_EQ(none.push("E"), "E");
}

TEST(ServeOpenAiApi, ChatFieldsReachTheTemplateInTheClientsKeyOrder) {
  auto r = parse_completion_request(
      R"({"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
          {"role":"user","content":"w?"},
          {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"get","arguments":"{\"z\": 1, \"a\": [2]}"}}]},
          {"role":"tool","tool_call_id":"c1","content":"{\"t\": 3}"}],
        "tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object","properties":{"z":{},"a":{}}}}}],
        "tool_choice":"auto","parallel_tool_calls":false,"chat_template_kwargs":{"enable_thinking":false}})",
      true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->template_messages.dump(),
            R"([{"role":"system","content":"ab"},{"role":"user","content":"w?"},)"
            R"({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":{"z":1,"a":[2]}}}]},)"
            R"({"role":"tool","content":"{\"t\": 3}","tool_call_id":"c1"}])");
  EXPECT_EQ(r->tools.dump(), R"([{"type":"function","function":{"name":"get","parameters":{"type":"object","properties":{"z":{},"a":{}}}}}])");
  EXPECT_EQ(r->chat_template_kwargs.dump(), R"({"enable_thinking":false})");
  EXPECT_FALSE(r->tool_choice_none);
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":null}]})").param, "messages[0].content");
  EXPECT_EQ(rejected(R"({"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":[1]})").param,
            "chat_template_kwargs");
}


TEST(ServeOpenAiApi, LogprobsAreParsedWithinTheirLimits) {
  const std::string user = R"({"messages":[{"role":"user","content":"a"}],)";
  auto chat = parse_completion_request(user + R"("logprobs":true,"top_logprobs":20})", true);
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_EQ(chat->logprobs, 20);
  auto plain = parse_completion_request(user + R"("logprobs":true})", true);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->logprobs, 0);
  auto off = parse_completion_request(user + R"("logprobs":false,"top_logprobs":0})", true);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->logprobs, -1);
  const ApiError over = rejected(user + R"("logprobs":true,"top_logprobs":21})");
  EXPECT_EQ(over.param, "top_logprobs");
  EXPECT_EQ(over.message, "'top_logprobs' must be an integer from 0 to 20, got 21");
  EXPECT_EQ(rejected(user + R"("logprobs":3})").param, "logprobs");
  EXPECT_EQ(rejected(user + R"("top_logprobs":2})").message, "'top_logprobs' needs 'logprobs': true");

  auto text = parse_completion_request(R"({"prompt":"a","logprobs":5})", false);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text->logprobs, 5);
  auto text_null = parse_completion_request(R"({"prompt":"a","logprobs":null})", false);
  ASSERT_TRUE(text_null.ok());
  EXPECT_EQ(text_null->logprobs, -1);
  const ApiError text_over = rejected(R"({"prompt":"a","logprobs":6})", false);
  EXPECT_EQ(text_over.param, "logprobs");
  EXPECT_EQ(text_over.message, "'logprobs' must be an integer from 0 to 5, got 6");
  EXPECT_EQ(rejected(R"({"prompt":"a","logprobs":true})", false).param, "logprobs");
  EXPECT_EQ(rejected(R"({"prompt":"a","top_logprobs":1})", false).message, "unknown field 'top_logprobs'");
}

TEST(ServeOpenAiApi, LogprobsHaveOpenAisShapes) {
  const std::vector<LogprobEntry> entries = {{{"Hi", -0.25f}, {{"Hi", -0.25f}, {"Yo", -2.0f}}},
                                             {{"!", -0.5f}, {{"!", -0.5f}, {".", -1.0f}}}};
  EXPECT_EQ(chat_logprobs_json(entries).dump(),
            R"({"content":[{"bytes":[72,105],"logprob":-0.25,"token":"Hi","top_logprobs":[{"bytes":[72,105],"logprob":-0.25,"token":"Hi"},{"bytes":[89,111],"logprob":-2.0,"token":"Yo"}]},)"
            R"({"bytes":[33],"logprob":-0.5,"token":"!","top_logprobs":[{"bytes":[33],"logprob":-0.5,"token":"!"},{"bytes":[46],"logprob":-1.0,"token":"."}]}]})");
  EXPECT_EQ(completion_logprobs_json(entries, 3).dump(),
            R"({"text_offset":[3,5],"token_logprobs":[-0.25,-0.5],"tokens":["Hi","!"],"top_logprobs":[{"Hi":-0.25,"Yo":-2.0},{"!":-0.5,".":-1.0}]})");
  // A probability that underflowed: vLLM's floor, never a non-JSON -Infinity.
  const std::vector<LogprobEntry> zero = {{{"x", -std::numeric_limits<float>::infinity()}, {}}};
  EXPECT_EQ(completion_logprobs_json(zero, 0)["token_logprobs"][0].get<double>(), -9999.0);
  const ResponseIds ids{"cmpl-1", 7, "m"};
  EXPECT_EQ(completion_body(ids, false, "Hi!", "length", Usage{1, 2}, completion_logprobs_json(entries, 0)),
            R"({"choices":[{"finish_reason":"length","index":0,"logprobs":{"text_offset":[0,2],"token_logprobs":[-0.25,-0.5],"tokens":["Hi","!"],"top_logprobs":[{"Hi":-0.25,"Yo":-2.0},{"!":-0.5,".":-1.0}]},"text":"Hi!"}],"created":7,"id":"cmpl-1","model":"m","object":"text_completion","usage":{"completion_tokens":2,"prompt_tokens":1,"total_tokens":3}})");
}

TEST(ServeOpenAiApi, ChoicesAndParallelToolCallsAreParsed) {
  auto chat = parse_completion_request(R"({"messages":[{"role":"user","content":"a"}],"n":8,"parallel_tool_calls":false})", true);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->n, 8);
  EXPECT_FALSE(chat->parallel_tool_calls);
  auto text = parse_completion_request(R"({"prompt":"a","n":null})", false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->n, 1);
  EXPECT_TRUE(text->parallel_tool_calls);
}

TEST(ServeOpenAiApi, SeveralChoicesAreIndexedInOrder) {
  const ResponseIds ids{"cmpl-1", 7, "m"};
  ChoiceResult a{"x", {}, "stop", nullptr};
  ChoiceResult b{"y", {}, "length", nullptr};
  EXPECT_EQ(choices_body(ids, false, {a, b}, Usage{2, 5}),
            R"({"choices":[{"finish_reason":"stop","index":0,"logprobs":null,"text":"x"},)"
            R"({"finish_reason":"length","index":1,"logprobs":null,"text":"y"}],"created":7,"id":"cmpl-1","model":"m",)"
            R"("object":"text_completion","usage":{"completion_tokens":5,"prompt_tokens":2,"total_tokens":7}})");
  EXPECT_EQ(chunk_body(ids, true, "hi", "", "", nullptr, 3),
            R"({"choices":[{"delta":{"content":"hi"},"finish_reason":null,"index":3,"logprobs":null}],"created":7,"id":"cmpl-1","model":"m","object":"chat.completion.chunk"})");
}

}  // namespace
}  // namespace xft::engine::serve
