// Which chat template a server renders prompts with, and the rendering of a
// chat request through it: the checkpoint's own template (chat_template.jinja,
// or chat_template in tokenizer_config.json), a --chat-template file, or the
// built-in ChatML one (Qwen2.5's layout with "You are a helpful assistant." as
// the default system message) for checkpoints that ship none (Qwen1).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "engine/chat_template/template.h"

namespace xft::engine::chat_template {

class ChatFormat {
 public:
  // override_file: --chat-template (empty: the checkpoint's). default_kwargs_json:
  // --chat-template-kwargs, a JSON object every request's chat_template_kwargs extend.
  static Expected<ChatFormat> load(const std::string& model_dir, const std::string& override_file,
                                   const std::string& default_kwargs_json);
  static ChatFormat chatml();
  static Expected<ChatFormat> from_source(const std::string& source, std::string origin);

  // Where the template came from, for the start-up log ("tokenizer_config.json", a path, "built-in ChatML").
  const std::string& origin() const { return origin_; }
  const nlohmann::ordered_json& default_kwargs() const { return default_kwargs_; }
  // The template writes <think> (Qwen3, QwQ, Qwen3.5): answers may carry reasoning to split off.
  bool thinks() const { return thinks_; }

  // messages and tools as OpenAI's request gives them (key order kept);
  // tools null: none. kwargs extend the defaults and may not replace
  // messages, tools or add_generation_prompt.
  Expected<Text> render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        const nlohmann::ordered_json& kwargs, bool add_generation_prompt) const;

 private:
  ChatFormat(Template tmpl, std::string origin, bool thinks)
      : template_(std::move(tmpl)), origin_(std::move(origin)), thinks_(thinks) {}
  Template template_;
  std::string origin_;
  bool thinks_ = false;
  nlohmann::ordered_json default_kwargs_ = nlohmann::ordered_json::object();
};

// The built-in template's text.
const std::string& chatml_template_source();

}  // namespace xft::engine::chat_template
