// Playbook variables given on the command line: -e NAME=VALUE, -e @FILE
// (YAML or JSON) and -e '{"NAME": VALUE}' (inline JSON or YAML), as Ansible
// takes them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::playbooks {

// Each item is one of:
//   NAME=VALUE   NAME is [A-Za-z_][A-Za-z0-9_]*, VALUE any text without
//                control characters (one line; quotes and $() are fine, the
//                renderer quotes them);
//   @FILE        a YAML or JSON mapping of names to values;
//   {...}        the same mapping written inline.
// A mapping's values may nest lists and mappings; every key is a NAME, every
// scalar is kept as text (as a playbook's own vars: are) and obeys VALUE's
// rule; null values are refused. A later NAME replaces an earlier one.
// The first problem is the error, on one line: "-e NAME: what (fix)" for
// NAME=VALUE, "FILE:line:col: NAME: what (fix)" for a mapping (FILE is "-e"
// for an inline one).
Expected<nlohmann::json> parse_extra_vars(const std::vector<std::string>& items);

}  // namespace xft::playbooks
