// The small condition language of `when`, `until`, `changed_when` and
// `failed_when`: comparisons (== != < > <= >=), `in` / `contains` (substring
// or list member), `and`, `or`, `not`, parentheses, literals ('text', 12,
// true, false) and dotted variable names (`keypair.rc`, `stdout`). A name that
// is not defined is an error naming it, so a typo never reads as false.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/expected.h"

namespace xft::playbooks {

Expected<bool> evaluate_condition(const std::string& expression, const nlohmann::json& vars);

// Truthiness of a value: false, 0, "", [], {} and null are false.
bool truthy(const nlohmann::json& value);

}  // namespace xft::playbooks
