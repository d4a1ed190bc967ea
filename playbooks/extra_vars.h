// Playbook variables given on the command line (-e NAME=VALUE).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::playbooks {

// Each item is NAME=VALUE: NAME is [A-Za-z_][A-Za-z0-9_]*, VALUE any text
// without control characters (one line; quotes and $() are fine, the renderer
// quotes them). A later NAME replaces an earlier one. The first bad item is
// the error, on one line: "-e NAME: what (fix)".
Expected<nlohmann::json> parse_extra_vars(const std::vector<std::string>& items);

}  // namespace xft::playbooks
