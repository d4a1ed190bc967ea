// A jinja2 chat template, parsed once and rendered per request in a sandbox:
// templates reach only the data they are given (no attributes of Python
// objects, no mutation of inputs, no str.format), and loops, calls, recursion
// and the size of every string are bounded; each overrun is a one-line error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/expected.h"
#include "engine/chat_template/parser.h"
#include "engine/chat_template/value.h"

namespace xft::engine::chat_template {

struct RenderLimits {
  size_t max_string_bytes = 16u << 20;  // the output and every string computed on the way
  int64_t max_loop_iterations = 1'000'000;
  int64_t max_steps = 4'000'000;  // statements and expressions evaluated, and copying: bounds any fan-out
  int max_call_depth = 64;         // macro calls
  int64_t max_range = 100'000;     // range() items, as jinja2's sandbox
  size_t max_list_items = 1'000'000;
};

class Template {
 public:
  // Hugging Face's settings: trim_blocks, lstrip_blocks, final newline dropped.
  static Expected<Template> parse(std::string_view source);
  // `context` holds the top-level variables (messages, tools, add_generation_prompt, ...).
  Expected<Text> render(const Dict& context, const RenderLimits& limits = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace xft::engine::chat_template
