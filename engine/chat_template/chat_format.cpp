#include "engine/chat_template/chat_format.h"

#include <filesystem>
#include <set>

#include "common/atomic_file.h"
#include "engine/chat_template/json_value.h"

namespace xft::engine::chat_template {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const std::string& chatml_template_source() {
  static const std::string source = R"TEMPLATE({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)TEMPLATE";
  return source;
}

namespace {

// tokenizer_config.json's chat_template: a string, or a list of {name, template} (the "default" one).
Expected<std::string> template_from_tokenizer_config(const std::string& path, const std::string& text) {
  ojson config = ojson::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return make_error(path + ": not a JSON object");
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::string();
  const ojson& field = config["chat_template"];
  if (field.is_string()) return field.get<std::string>();
  if (field.is_array()) {
    for (const ojson& entry : field) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return entry["template"].get<std::string>();
    }
  }
  return make_error(path + ": 'chat_template' must be a string or a list with a {\"name\": \"default\"} entry");
}

}  // namespace

ChatFormat ChatFormat::chatml() {
  auto parsed = Template::parse(chatml_template_source());
  return ChatFormat(std::move(*parsed), "built-in ChatML", false);
}

Expected<ChatFormat> ChatFormat::from_source(const std::string& source, std::string origin) {
  auto parsed = Template::parse(source);
  if (!parsed) return make_error(origin + ": " + parsed.error().message);
  return ChatFormat(std::move(*parsed), std::move(origin), source.find("<think>") != std::string::npos);
}

Expected<ChatFormat> ChatFormat::load(const std::string& model_dir, const std::string& override_file,
                                      const std::string& default_kwargs_json) {
  ojson kwargs = ojson::object();
  if (!default_kwargs_json.empty()) {
    kwargs = ojson::parse(default_kwargs_json, nullptr, false);
    if (kwargs.is_discarded() || !kwargs.is_object())
      return make_error("--chat-template-kwargs: must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  }
  Expected<ChatFormat> format = chatml();
  if (!override_file.empty()) {
    auto text = read_file(override_file);
    if (!text) return make_error("--chat-template: " + text.error().message);
    format = from_source(*text, override_file);
  } else if (!model_dir.empty()) {
    const fs::path dir = fs::is_directory(model_dir) ? fs::path(model_dir) : fs::path(model_dir).parent_path();
    const fs::path jinja = dir / "chat_template.jinja";
    const fs::path config = dir / "tokenizer_config.json";
    std::error_code ec;
    if (fs::exists(jinja, ec)) {
      auto text = read_file(jinja.string());
      if (!text) return text.error();
      format = from_source(*text, jinja.string());
    } else if (fs::exists(config, ec)) {
      auto text = read_file(config.string());
      if (!text) return text.error();
      auto source = template_from_tokenizer_config(config.string(), *text);
      if (!source) return source.error();
      if (!source->empty()) format = from_source(*source, config.string());
    }
  }
  if (!format) return format.error();
  format->default_kwargs_ = std::move(kwargs);
  return format;
}

Expected<Text> ChatFormat::render(const ojson& messages, const ojson& tools, const ojson& kwargs,
                                  bool add_generation_prompt) const {
  static const std::set<std::string> reserved = {"messages", "tools", "add_generation_prompt"};
  Dict context;
  context.set("messages", value_from_json(messages, true));
  context.set("tools", tools.is_array() && !tools.empty() ? value_from_json(tools, true) : Value::none());
  context.set("documents", Value::none());
  context.set("add_generation_prompt", Value::from_bool(add_generation_prompt));
  for (const ojson* source : {&default_kwargs_, &kwargs}) {
    if (!source->is_object()) continue;
    for (const auto& [k, v] : source->items()) {
      if (reserved.count(k)) return make_error("chat_template_kwargs may not set '" + k + "'");
      context.set(k, value_from_json(v, true));
    }
  }
  auto out = template_.render(context);
  if (!out) return make_error("chat template: " + out.error().message);
  return out;
}

}  // namespace xft::engine::chat_template
