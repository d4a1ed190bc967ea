// Mustache rendering of task arguments and template files against a host's
// variables (JSON). Nothing is HTML-escaped: the output is config files and
// shell commands, not web pages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/expected.h"

namespace xft::playbooks {

Expected<std::string> render_text(const std::string& text, const nlohmann::json& vars);
// Every string inside `args` rendered (lists and maps walked).
Expected<nlohmann::json> render_args(const nlohmann::json& args, const nlohmann::json& vars);

}  // namespace xft::playbooks
