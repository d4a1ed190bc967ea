// JSON (nlohmann's ordered_json: key order and the integer/float distinction
// kept, as Python's json.loads keeps them) to template values.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/chat_template/value.h"

namespace xft::engine::chat_template {

// untrusted: every string and key becomes caller data (request content).
Value value_from_json(const nlohmann::ordered_json& j, bool untrusted);

}  // namespace xft::engine::chat_template
