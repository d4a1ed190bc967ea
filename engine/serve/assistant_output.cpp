#include "engine/serve/assistant_output.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace xft::engine::serve {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";
// A call's head is matched again as each piece arrives: past this many bytes
// without its arguments opening, it is read whole when it closes.
constexpr size_t kMaxCallHeadBytes = 1024;

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

OutputEvent text_event(OutputEvent::Kind kind, std::string text) {
  OutputEvent e{kind, std::move(text), 0, {}, {}};
  return e;
}

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// Reads a JSON string literal at `at`; NeedMore when it has not ended yet.
CallHead read_string(std::string_view body, size_t& at, std::string& value) {
  if (at >= body.size()) return CallHead::NeedMore;
  if (body[at] != '"') return CallHead::NoMatch;
  for (size_t i = at + 1; i < body.size(); ++i) {
    if (body[i] == '\\') {
      ++i;
      continue;
    }
    if (body[i] != '"') continue;
    ojson parsed = ojson::parse(body.substr(at, i + 1 - at), nullptr, false);
    if (parsed.is_discarded()) return CallHead::NoMatch;
    value = parsed.get<std::string>();
    at = i + 1;
    return CallHead::Ok;
  }
  return CallHead::NeedMore;
}

CallHead expect_char(std::string_view body, size_t& at, char c) {
  while (at < body.size() && is_ws(body[at])) ++at;
  if (at >= body.size()) return CallHead::NeedMore;
  if (body[at] != c) return CallHead::NoMatch;
  ++at;
  return CallHead::Ok;
}

// Qwen3.5's `<function=NAME>`: the name, and where the text after '>' starts.
CallHead match_xml_head(std::string_view body, std::string& name, size_t& after) {
  size_t at = 0;
  while (at < body.size() && is_ws(body[at])) ++at;
  const std::string_view rest = body.substr(at);
  if (rest.size() < kFunctionOpen.size())
    return kFunctionOpen.substr(0, rest.size()) == rest ? CallHead::NeedMore : CallHead::NoMatch;
  if (rest.substr(0, kFunctionOpen.size()) != kFunctionOpen) return CallHead::NoMatch;
  const size_t end = rest.find('>');
  if (end == std::string_view::npos) return CallHead::NeedMore;
  name = std::string(trim(rest.substr(kFunctionOpen.size(), end - kFunctionOpen.size())));
  if (name.empty()) return CallHead::NoMatch;
  after = at + end + 1;
  return CallHead::Ok;
}

// One `<parameter=KEY>\nVALUE\n</parameter>` at the start of `rest`: its key
// and value (a value that is valid JSON is read as JSON, else as text); the
// bytes it took, 0 while it has not closed, npos when it is no parameter.
size_t split_xml_parameter(std::string_view rest, std::string& key, ojson& value) {
  const size_t value_end = rest.find(kParameterClose);
  if (value_end == std::string_view::npos) return 0;
  const size_t key_end = rest.find('>');
  if (key_end == std::string_view::npos || value_end < key_end) return std::string_view::npos;
  key = std::string(trim(rest.substr(kParameterOpen.size(), key_end - kParameterOpen.size())));
  std::string_view text = rest.substr(key_end + 1, value_end - key_end - 1);
  if (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  ojson parsed = ojson::parse(text, nullptr, false);
  value = parsed.is_discarded() || parsed.is_string() ? ojson(std::string(text)) : std::move(parsed);
  return value_end + kParameterClose.size();
}

// One parameter at the start of `rest` as JSON `"KEY":VALUE`; the bytes it
// took, as split_xml_parameter says.
size_t read_xml_parameter(std::string_view rest, std::string& member) {
  std::string key;
  ojson value;
  const size_t taken = split_xml_parameter(rest, key, value);
  if (taken != 0 && taken != std::string_view::npos) member = dump(ojson(key)) + ":" + dump(value);
  return taken;
}

// Qwen3.5's form: <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>.
bool parse_xml_call(std::string_view body, std::string& name, std::string& arguments) {
  size_t after = 0;
  if (match_xml_head(body, name, after) != CallHead::Ok) return false;
  std::string_view rest = trim(body.substr(after));
  if (rest.size() < kFunctionClose.size() || rest.substr(rest.size() - kFunctionClose.size()) != kFunctionClose)
    return false;
  rest = trim(rest.substr(0, rest.size() - kFunctionClose.size()));
  ojson args = ojson::object();
  while (!rest.empty()) {
    if (rest.substr(0, kParameterOpen.size()) != kParameterOpen) return false;
    std::string key;
    ojson value;
    const size_t taken = split_xml_parameter(rest, key, value);
    if (taken == 0 || taken == std::string_view::npos) return false;
    args[key] = std::move(value);
    rest = trim(rest.substr(taken));
  }
  arguments = dump(args);
  return true;
}

}  // namespace

CallHead match_call_head(std::string_view body, std::string& name, size_t& arguments_begin) {
  size_t at = 0;
  std::string key;
  auto string_at = [&](std::string& value) {
    while (at < body.size() && is_ws(body[at])) ++at;
    return read_string(body, at, value);
  };
  if (CallHead step = expect_char(body, at, '{'); step != CallHead::Ok) return step;
  if (CallHead step = string_at(key); step != CallHead::Ok) return step;
  if (key != "name") return CallHead::NoMatch;
  if (CallHead step = expect_char(body, at, ':'); step != CallHead::Ok) return step;
  if (CallHead step = string_at(name); step != CallHead::Ok) return step;
  if (name.empty()) return CallHead::NoMatch;
  if (CallHead step = expect_char(body, at, ','); step != CallHead::Ok) return step;
  if (CallHead step = string_at(key); step != CallHead::Ok) return step;
  if (key != "arguments" && key != "parameters") return CallHead::NoMatch;
  if (CallHead step = expect_char(body, at, ':'); step != CallHead::Ok) return step;
  if (CallHead step = expect_char(body, at, '{'); step != CallHead::Ok) return step;
  arguments_begin = at - 1;
  return CallHead::Ok;
}

bool parse_tool_call_body(std::string_view body, std::string& name, std::string& arguments) {
  body = trim(body);
  if (parse_xml_call(body, name, arguments)) return true;
  ojson call = ojson::parse(body, nullptr, false);
  if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call["name"].is_string()) return false;
  name = call["name"].get<std::string>();
  if (name.empty()) return false;
  const char* key = call.contains("arguments") ? "arguments" : "parameters";
  if (!call.contains(key)) {
    arguments = "{}";
    return true;
  }
  const ojson& args = call[key];
  if (args.is_object()) {
    arguments = dump(args);
    return true;
  }
  if (args.is_string()) {  // some models double-encode: accept a string that holds an object
    ojson inner = ojson::parse(args.get<std::string>(), nullptr, false);
    if (inner.is_discarded() || !inner.is_object()) return false;
    arguments = dump(inner);
    return true;
  }
  return false;
}

AssistantOutputParser::AssistantOutputParser(AssistantOutputOptions options) : options_(std::move(options)) {
  state_ = options_.split_reasoning ? (options_.starts_in_reasoning ? State::Reasoning : State::Start) : State::Content;
  // Whitespace that opens reasoning, or an answer after </think>, is layout; an answer's own is kept.
  section_started_ = state_ != State::Reasoning;
}

std::vector<OutputEvent> AssistantOutputParser::push(std::string_view text) {
  std::vector<OutputEvent> out;
  if (text.empty()) return out;
  if (passthrough()) {
    message_.content += text;
    out.push_back(text_event(OutputEvent::Kind::Content, std::string(text)));
    return out;
  }
  buffer_ += text;
  process(out, false);
  return out;
}

std::vector<OutputEvent> AssistantOutputParser::finish() {
  std::vector<OutputEvent> out;
  if (passthrough()) return out;
  process(out, true);
  // Trailing whitespace of an answer stays, unless it only separated tool calls.
  if (state_ == State::Content && message_.tool_calls.empty() && !pending_ws_.empty()) {
    message_.content += pending_ws_;
    out.push_back(text_event(OutputEvent::Kind::Content, pending_ws_));
  }
  pending_ws_.clear();
  return out;
}

void AssistantOutputParser::process(std::vector<OutputEvent>& out, bool at_end) {
  while (true) {
    switch (state_) {
      case State::Start: {
        size_t skip = 0;
        while (skip < buffer_.size() && is_ws(buffer_[skip])) ++skip;
        const std::string_view rest = std::string_view(buffer_).substr(skip);
        if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
          buffer_.erase(0, skip + kThinkOpen.size());
          state_ = State::Reasoning;
          section_started_ = false;
          continue;
        }
        if (!at_end && kThinkOpen.substr(0, rest.size()) == rest) return;  // may still become <think>
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        const size_t close = buffer_.find(kThinkClose);
        if (close != std::string::npos) {
          emit(out, OutputEvent::Kind::Reasoning, std::string_view(buffer_).substr(0, close));
          buffer_.erase(0, close + kThinkClose.size());
          pending_ws_.clear();
          section_started_ = false;
          state_ = State::Content;
          continue;
        }
        const size_t keep = at_end ? 0 : partial_marker(buffer_, kThinkClose);
        emit(out, OutputEvent::Kind::Reasoning, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      case State::Content: {
        if (options_.parse_tool_calls) {
          const size_t open = buffer_.find(kCallOpen);
          if (open != std::string::npos) {
            emit(out, OutputEvent::Kind::Content, std::string_view(buffer_).substr(0, open));
            buffer_.erase(0, open + kCallOpen.size());
            tool_body_.clear();
            state_ = State::ToolCall;
            continue;
          }
        }
        const size_t keep = at_end || !options_.parse_tool_calls ? 0 : partial_marker(buffer_, kCallOpen);
        emit(out, OutputEvent::Kind::Content, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      case State::ToolCall: {
        const size_t close = buffer_.find(kCallClose);
        const size_t take = close != std::string::npos ? close
                            : at_end                   ? buffer_.size()
                                                       : buffer_.size() - partial_marker(buffer_, kCallClose);
        tool_body_ += buffer_.substr(0, take);
        buffer_.erase(0, take);
        advance_tool_call(out);
        if (close != std::string::npos) {
          buffer_.erase(0, kCallClose.size());
          state_ = State::Content;
          close_tool_call(out, true);
          continue;
        }
        if (at_end) {
          state_ = State::Content;
          close_tool_call(out, false);
        }
        return;
      }
      case State::Ended:
        buffer_.clear();
        return;
    }
  }
}

// Reasoning and content are sent alike: leading whitespace of a section is
// dropped, trailing whitespace is held back until more text follows it.
void AssistantOutputParser::emit(std::vector<OutputEvent>& out, OutputEvent::Kind kind, std::string_view text) {
  if (!section_started_) {
    while (!text.empty() && is_ws(text.front())) text.remove_prefix(1);
    if (text.empty()) return;
    section_started_ = true;
  }
  std::string full = pending_ws_ + std::string(text);
  size_t end = full.size();
  while (end > 0 && is_ws(full[end - 1])) --end;
  pending_ws_ = full.substr(end);
  full.resize(end);
  if (full.empty()) return;
  (kind == OutputEvent::Kind::Reasoning ? message_.reasoning : message_.content) += full;
  out.push_back(text_event(kind, std::move(full)));
}

void AssistantOutputParser::advance_tool_call(std::vector<OutputEvent>& out) {
  if (call_mode_ == CallMode::Head) {
    std::string name;
    const CallHead xml = match_xml_head(tool_body_, name, xml_at_);
    const CallHead json = xml == CallHead::Ok ? CallHead::NoMatch : match_call_head(tool_body_, name, arguments_begin_);
    const bool undecided = xml == CallHead::NeedMore || json == CallHead::NeedMore;
    if (xml == CallHead::Ok) {
      call_mode_ = CallMode::XmlStreaming;
    } else if (json == CallHead::Ok) {
      call_mode_ = CallMode::Streaming;
    } else if (undecided && tool_body_.size() <= kMaxCallHeadBytes) {
      return;
    } else {
      call_mode_ = CallMode::Whole;
      return;
    }
    start_streamed_call(out, name);
  }
  if (call_mode_ == CallMode::Streaming) stream_arguments(out);
  if (call_mode_ == CallMode::XmlStreaming) stream_xml_parameters(out);
}

void AssistantOutputParser::start_streamed_call(std::vector<OutputEvent>& out, const std::string& name) {
  ws_before_call_ = std::move(pending_ws_);
  pending_ws_.clear();  // whitespace between calls is no content
  const int index = static_cast<int>(message_.tool_calls.size());
  message_.tool_calls.push_back({options_.call_id_prefix + std::to_string(index), name, ""});
  out.push_back({OutputEvent::Kind::ToolCallStart, "", index, message_.tool_calls.back().id, name});
}

void AssistantOutputParser::send_arguments(std::vector<OutputEvent>& out, std::string fragment) {
  if (fragment.empty()) return;
  message_.tool_calls.back().arguments += fragment;
  out.push_back({OutputEvent::Kind::ToolCallArguments, std::move(fragment),
                 static_cast<int>(message_.tool_calls.size()) - 1, {}, {}});
}

// Checks the arguments' new bytes and sends them up to the last safe point.
void AssistantOutputParser::stream_arguments(std::vector<OutputEvent>& out) {
  const std::string_view arguments = std::string_view(tool_body_).substr(arguments_begin_);
  while (arguments_checked_ < arguments.size() && !arguments_scanner_.complete() && !arguments_scanner_.failed()) {
    if (!arguments_scanner_.feed(arguments[arguments_checked_++])) break;
    if (arguments_scanner_.at_safe_point()) {
      arguments_safe_ = arguments_checked_;
      arguments_closing_ = arguments_scanner_.closing_suffix();
    }
  }
  if (arguments_safe_ == arguments_sent_) return;
  std::string fragment(arguments.substr(arguments_sent_, arguments_safe_ - arguments_sent_));
  arguments_sent_ = arguments_safe_;
  send_arguments(out, std::move(fragment));
}

// Sends each parameter that closed, and the object's end at </function>.
void AssistantOutputParser::stream_xml_parameters(std::vector<OutputEvent>& out) {
  const std::string_view body(tool_body_);
  while (!xml_done_ && !xml_failed_) {
    size_t at = xml_at_;
    while (at < body.size() && is_ws(body[at])) ++at;
    const std::string_view rest = body.substr(at);
    if (rest.substr(0, kParameterOpen.size()) == kParameterOpen) {
      std::string member;
      const size_t taken = read_xml_parameter(rest, member);
      if (taken == 0) return;  // still open
      if (taken == std::string_view::npos) {
        xml_failed_ = true;
        return;
      }
      send_arguments(out, (xml_parameters_++ == 0 ? "{" : ",") + member);
      xml_at_ = at + taken;
    } else if (rest.substr(0, kFunctionClose.size()) == kFunctionClose) {
      send_arguments(out, xml_parameters_ == 0 ? "{}" : "}");
      xml_done_ = true;
      xml_at_ = at + kFunctionClose.size();
    } else if (kParameterOpen.substr(0, rest.size()) == rest || kFunctionClose.substr(0, rest.size()) == rest) {
      return;  // may still become one of them
    } else {
      xml_failed_ = true;
    }
  }
}

void AssistantOutputParser::close_tool_call(std::vector<OutputEvent>& out, bool closed) {
  const bool streamed = call_mode_ == CallMode::Streaming || call_mode_ == CallMode::XmlStreaming;
  const bool called = streamed ? (close_streamed_call(out, closed), true) : close_whole_call(out, closed);
  tool_body_.clear();
  call_mode_ = CallMode::Head;
  arguments_scanner_ = JsonPrefixScanner();
  arguments_begin_ = arguments_checked_ = arguments_safe_ = arguments_sent_ = 0;
  arguments_closing_.clear();
  xml_at_ = 0;
  xml_parameters_ = 0;
  xml_done_ = xml_failed_ = false;
  ws_before_call_.clear();
  if (called && options_.single_tool_call) state_ = State::Ended;
}

// A streamed call is whole when its arguments ended and the body around them
// is a JSON object (Qwen3.5's: `</function>` was read and nothing follows);
// `</tool_call>` itself may be missing (generation stopped right after the
// call). Else it broke off: see the header comment.
void AssistantOutputParser::close_streamed_call(std::vector<OutputEvent>& out, bool closed) {
  if (call_mode_ == CallMode::XmlStreaming) {
    if (xml_done_ && trim(std::string_view(tool_body_).substr(xml_at_)).empty()) return;
    if (!xml_done_) send_arguments(out, xml_parameters_ == 0 ? "{}" : "}");
  } else {
    if (arguments_scanner_.complete() && ojson::accept(trim(tool_body_))) return;
    if (!arguments_scanner_.complete()) send_arguments(out, arguments_closing_);
  }
  pending_ws_ = std::move(ws_before_call_);
  emit(out, OutputEvent::Kind::Content, raw_call(closed));
}

bool AssistantOutputParser::close_whole_call(std::vector<OutputEvent>& out, bool closed) {
  std::string name;
  std::string arguments;
  if (!closed || !parse_tool_call_body(tool_body_, name, arguments)) {
    // Malformed or never closed: the text stays the answer, so nothing the model wrote is lost.
    emit(out, OutputEvent::Kind::Content, raw_call(closed));
    return false;
  }
  pending_ws_.clear();  // whitespace between calls is no content
  const int index = static_cast<int>(message_.tool_calls.size());
  ToolCall call{options_.call_id_prefix + std::to_string(index), name, arguments};
  message_.tool_calls.push_back(call);
  out.push_back({OutputEvent::Kind::ToolCallStart, "", index, call.id, call.name});
  out.push_back({OutputEvent::Kind::ToolCallArguments, call.arguments, index, {}, {}});
  return true;
}

std::string AssistantOutputParser::raw_call(bool closed) const {
  return std::string(kCallOpen) + tool_body_ + (closed ? std::string(kCallClose) : std::string());
}

}  // namespace xft::engine::serve
