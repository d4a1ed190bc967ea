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

// Qwen3.5's form: <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>.
// A value that is valid JSON (number, true, an object, ...) is read as JSON, else as text.
bool parse_xml_call(std::string_view body, std::string& name, std::string& arguments) {
  constexpr std::string_view open = "<function=";
  if (body.substr(0, open.size()) != open) return false;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return false;
  name = std::string(trim(body.substr(open.size(), name_end - open.size())));
  std::string_view rest = trim(body.substr(name_end + 1));
  constexpr std::string_view close = "</function>";
  if (rest.size() < close.size() || rest.substr(rest.size() - close.size()) != close) return false;
  rest = trim(rest.substr(0, rest.size() - close.size()));
  ojson args = ojson::object();
  constexpr std::string_view param_open = "<parameter=";
  constexpr std::string_view param_close = "</parameter>";
  while (!rest.empty()) {
    if (rest.substr(0, param_open.size()) != param_open) return false;
    const size_t key_end = rest.find('>');
    const size_t value_end = rest.find(param_close);
    if (key_end == std::string_view::npos || value_end == std::string_view::npos || value_end < key_end) return false;
    const std::string key(trim(rest.substr(param_open.size(), key_end - param_open.size())));
    std::string_view value = rest.substr(key_end + 1, value_end - key_end - 1);
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    ojson parsed = ojson::parse(value, nullptr, false);
    args[key] = parsed.is_discarded() || parsed.is_string() ? ojson(std::string(value)) : parsed;
    rest = trim(rest.substr(value_end + param_close.size()));
  }
  if (name.empty()) return false;
  arguments = dump(args);
  return true;
}

}  // namespace

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
          emit_reasoning(out, std::string_view(buffer_).substr(0, close));
          buffer_.erase(0, close + kThinkClose.size());
          pending_ws_.clear();
          section_started_ = false;
          state_ = State::Content;
          continue;
        }
        const size_t keep = at_end ? 0 : partial_marker(buffer_, kThinkClose);
        emit_reasoning(out, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      case State::Content: {
        if (options_.parse_tool_calls) {
          const size_t open = buffer_.find(kCallOpen);
          if (open != std::string::npos) {
            emit_content(out, std::string_view(buffer_).substr(0, open));
            buffer_.erase(0, open + kCallOpen.size());
            tool_body_.clear();
            state_ = State::ToolCall;
            continue;
          }
        }
        const size_t keep = at_end || !options_.parse_tool_calls ? 0 : partial_marker(buffer_, kCallOpen);
        emit_content(out, std::string_view(buffer_).substr(0, buffer_.size() - keep));
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      case State::ToolCall: {
        const size_t close = buffer_.find(kCallClose);
        if (close != std::string::npos) {
          tool_body_ += buffer_.substr(0, close);
          buffer_.erase(0, close + kCallClose.size());
          state_ = State::Content;
          close_tool_call(out);
          continue;
        }
        if (at_end) {  // never closed: what the model wrote is the answer
          const std::string raw = std::string(kCallOpen) + tool_body_ + buffer_;
          buffer_.clear();
          state_ = State::Content;
          emit_content(out, raw);
          return;
        }
        const size_t keep = partial_marker(buffer_, kCallClose);
        tool_body_ += buffer_.substr(0, buffer_.size() - keep);
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
    }
  }
}

void AssistantOutputParser::emit_reasoning(std::vector<OutputEvent>& out, std::string_view text) {
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
  message_.reasoning += full;
  out.push_back(text_event(OutputEvent::Kind::Reasoning, std::move(full)));
}

void AssistantOutputParser::emit_content(std::vector<OutputEvent>& out, std::string_view text) {
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
  message_.content += full;
  out.push_back(text_event(OutputEvent::Kind::Content, std::move(full)));
}

void AssistantOutputParser::close_tool_call(std::vector<OutputEvent>& out) {
  std::string name;
  std::string arguments;
  if (!parse_tool_call_body(tool_body_, name, arguments)) {
    // Malformed: the text stays the answer, so nothing the model wrote is lost.
    emit_content(out, std::string(kCallOpen) + tool_body_ + std::string(kCallClose));
    tool_body_.clear();
    return;
  }
  tool_body_.clear();
  pending_ws_.clear();  // whitespace between calls is no content
  const int index = static_cast<int>(message_.tool_calls.size());
  ToolCall call{options_.call_id_prefix + std::to_string(index), name, arguments};
  message_.tool_calls.push_back(call);
  OutputEvent start{OutputEvent::Kind::ToolCallStart, "", index, call.id, call.name};
  out.push_back(std::move(start));
  out.push_back({OutputEvent::Kind::ToolCallArguments, call.arguments, index, {}, {}});
}

}  // namespace xft::engine::serve
