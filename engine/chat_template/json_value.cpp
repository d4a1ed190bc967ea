#include "engine/chat_template/json_value.h"

namespace xft::engine::chat_template {

Value value_from_json(const nlohmann::ordered_json& j, bool untrusted) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::from_bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::from_int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::from_float(static_cast<double>(u));
      return Value::from_int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::from_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::from_text(Text::derived(j.get<std::string>(), untrusted));
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(value_from_json(item, untrusted));
      return Value::from_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.untrusted_keys = untrusted;
      for (const auto& [k, v] : j.items()) d.entries.emplace_back(k, value_from_json(v, untrusted));  // JSON keys are unique
      return Value::from_dict(std::move(d));
    }
    default: return Value::none();
  }
}

}  // namespace xft::engine::chat_template
