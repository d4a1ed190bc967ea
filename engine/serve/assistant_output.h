// Turns the model's generated text into OpenAI's assistant message as it
// streams: `<think>…</think>` into reasoning_content, `<tool_call>…</tool_call>`
// (Hermes JSON {"name", "arguments"}, or Qwen3.5's <function=…><parameter=…>
// form) into tool_calls, the rest into content. Text that may be the start of
// a marker is held until the next piece decides it. Pure: fed scripted text
// in tests, the server's decoded tokens in service.
//
// A Hermes call that opens as `{"name": "...", "arguments": {` streams as
// OpenAI streams one: its start (id, name) as soon as the name is read, then
// its arguments in fragments as far as they are known to be valid JSON (the
// model's own text, so the fragments add up to the final arguments string).
// A Qwen3.5 call streams its start at `<function=NAME>` and its arguments one
// `<parameter=…>` at a time (as compact JSON). Should the arguments break off
// (a syntax error, generation ending inside them), the call's arguments are
// closed as the valid JSON they began, and the whole <tool_call> text is also
// given as content: what was streamed cannot be taken back, and nothing the
// model wrote is lost. Other call forms (arguments as a string or before the
// name) are read when they close and go out whole; one that is no call is content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/serve/json_prefix.h"

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
  bool single_tool_call = false;  // parallel_tool_calls: false: the answer ends with its first call
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
  // single_tool_call and a call was made: whatever the model writes next is dropped.
  bool ended() const { return state_ == State::Ended; }

 private:
  enum class State { Start, Reasoning, Content, ToolCall, Ended };
  // How the current <tool_call> body is read (see the header comment).
  enum class CallMode { Head, Streaming, XmlStreaming, Whole };
  void process(std::vector<OutputEvent>& out, bool at_end);
  // kind: Reasoning or Content.
  void emit(std::vector<OutputEvent>& out, OutputEvent::Kind kind, std::string_view text);
  void advance_tool_call(std::vector<OutputEvent>& out);
  void start_streamed_call(std::vector<OutputEvent>& out, const std::string& name);
  void stream_arguments(std::vector<OutputEvent>& out);
  void stream_xml_parameters(std::vector<OutputEvent>& out);
  void send_arguments(std::vector<OutputEvent>& out, std::string fragment);
  void close_tool_call(std::vector<OutputEvent>& out, bool closed);
  void close_streamed_call(std::vector<OutputEvent>& out, bool closed);
  bool close_whole_call(std::vector<OutputEvent>& out, bool closed);  // false: it was no call
  std::string raw_call(bool closed) const;  // the <tool_call> text as the model wrote it

  AssistantOutputOptions options_;
  State state_;
  std::string buffer_;      // undecided text
  std::string tool_body_;   // inside <tool_call>
  std::string pending_ws_;  // trailing whitespace held back: dropped before </think> and after a tool call
  bool section_started_ = true;  // false: leading whitespace of reasoning, or of the answer after </think>, is dropped
  AssistantMessage message_;
  // The streamed call: where its arguments begin in tool_body_, how many of
  // their bytes were checked and sent, and how to close them at the last safe point.
  CallMode call_mode_ = CallMode::Head;
  JsonPrefixScanner arguments_scanner_;
  size_t arguments_begin_ = 0;
  size_t arguments_checked_ = 0;
  size_t arguments_safe_ = 0;
  size_t arguments_sent_ = 0;
  std::string arguments_closing_;
  // The streamed Qwen3.5 call: where its unread text starts, parameters sent,
  // whether </function> was read, whether its text stopped being a call.
  size_t xml_at_ = 0;
  int xml_parameters_ = 0;
  bool xml_done_ = false;
  bool xml_failed_ = false;
  std::string ws_before_call_;  // restored should the call turn out to be content
};

// Whether a <tool_call> body opens as a streamable Hermes call
// `{"name": "NAME", "arguments": {` (or "parameters"); Ok sets the name and
// where the arguments' '{' is.
enum class CallHead { Ok, NeedMore, NoMatch };
CallHead match_call_head(std::string_view body, std::string& name, size_t& arguments_begin);

// The arguments of a tool call body, or false when it is not a well-formed call.
bool parse_tool_call_body(std::string_view body, std::string& name, std::string& arguments);

}  // namespace xft::engine::serve
