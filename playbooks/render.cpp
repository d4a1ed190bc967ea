#include "playbooks/render.h"

#include <kainjow/mustache.hpp>

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;
using kainjow::mustache::data;

data to_data(const Json& value) {
  if (value.is_object()) {
    data object{data::type::object};
    for (const auto& [key, item] : value.items()) object.set(key, to_data(item));
    return object;
  }
  if (value.is_array()) {
    data list{data::type::list};
    for (const auto& item : value) list.push_back(to_data(item));
    return list;
  }
  if (value.is_boolean()) return data{value.get<bool>() ? data::type::bool_true : data::type::bool_false};
  if (value.is_string()) return data{value.get<std::string>()};
  if (value.is_null()) return data{data::type::bool_false};
  return data{value.dump()};
}

}  // namespace

Expected<std::string> render_text(const std::string& text, const Json& vars) {
  if (text.find("{{") == std::string::npos) return text;
  kainjow::mustache::mustache tmpl{text};
  if (!tmpl.is_valid()) return make_error("template: " + tmpl.error_message());
  tmpl.set_custom_escape([](const std::string& raw) { return raw; });
  return tmpl.render(to_data(vars));
}

Expected<Json> render_args(const Json& args, const Json& vars) {
  if (args.is_string()) {
    auto text = render_text(args.get<std::string>(), vars);
    if (!text) return text.error();
    return Json(*text);
  }
  if (args.is_array() || args.is_object()) {
    Json out = args;
    for (auto& [key, item] : out.items()) {
      auto rendered = render_args(item, vars);
      if (!rendered) return rendered.error();
      item = std::move(*rendered);
    }
    return out;
  }
  return args;
}

}  // namespace xft::playbooks
