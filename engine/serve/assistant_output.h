// Turns the model's generated text into OpenAI's assistant message as it
// streams: `<think>…</think>` into reasoning_content, `<tool_call>…</tool_call>`
// (Hermes JSON {"name", "arguments"}, or Qwen3.5's <function=…><parameter=…>
// form) into tool_calls, the rest into content. Text that may be the start of
// a marker is held until the next piece decides it. Pure: fed scripted text
// in tests, the server's decoded tokens in service.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xft::engine::serve {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct AssistantMessage {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
};

// One streamed delta, in the order the text produced them.
struct OutputEvent {
  enum class Kind { Reasoning, Content, ToolCallStart, ToolCallArguments };
  Kind kind;
  std::string text;  // Reasoning/Content text; ToolCallArguments: the arguments
  int index = 0;     // tool calls: position in message.tool_calls
  std::string id;    // ToolCallStart
  std::string name;  // ToolCallStart
};

struct AssistantOutputOptions {
  bool split_reasoning = false;      // the template thinks and --reasoning-format is not none
  bool starts_in_reasoning = false;  // the prompt ended inside <think> (Qwen3.5, QwQ)
  bool parse_tool_calls = false;     // the request offered tools
  std::string call_id_prefix = "call_";
};

class AssistantOutputParser {
 public:
  explicit AssistantOutputParser(AssistantOutputOptions options);
  std::vector<OutputEvent> push(std::string_view text);
  // End of generation: held text is decided (an unclosed <tool_call> becomes
  // content; unclosed thinking stays reasoning).
  std::vector<OutputEvent> finish();
  const AssistantMessage& message() const { return message_; }
  bool passthrough() const { return !options_.split_reasoning && !options_.parse_tool_calls; }

 private:
  enum class State { Start, Reasoning, Content, ToolCall };
  void process(std::vector<OutputEvent>& out, bool at_end);
  void emit_reasoning(std::vector<OutputEvent>& out, std::string_view text);
  void emit_content(std::vector<OutputEvent>& out, std::string_view text);
  void close_tool_call(std::vector<OutputEvent>& out);

  AssistantOutputOptions options_;
  State state_;
  std::string buffer_;      // undecided text
  std::string tool_body_;   // inside <tool_call>
  std::string pending_ws_;  // trailing whitespace held back: dropped before </think> and after a tool call
  bool section_started_ = true;  // false: leading whitespace of reasoning, or of the answer after </think>, is dropped
  AssistantMessage message_;
};

// The arguments of a tool call body, or false when it is not a well-formed call.
bool parse_tool_call_body(std::string_view body, std::string& name, std::string& arguments);

}  // namespace xft::engine::serve
