// Reading the inventory: locating the file, parsing and validating its YAML,
// and the ClusterShell host ranges used both in the file and in output folding.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::inventory {

// Parses YAML text; `path` appears in errors "path:line:col: field: what is wrong (fix)".
// All errors of the file are collected; Error.message holds them one per line.
Expected<Inventory> parse_inventory(const std::string& yaml_text, const std::string& path);
Expected<Inventory> load_inventory(const std::string& path);

// -i FILE (flag), then $XFTCTL_INVENTORY, then ./inventory.yaml; error says which were tried.
Expected<std::string> locate_inventory(const std::string& flag);

// ClusterShell ranges: "node[01-04,07]" -> node01..node04,node07 (zero padding kept); several bracket
// groups allowed (cartesian, like nodeset); "192.168.0.[1-4]".
Expected<std::vector<std::string>> expand_range(const std::string& pattern);

// The inverse, as ClusterShell folds: {node01,node02,node03,node07} -> "node[01-03,07]"; names with
// different prefixes/suffixes are joined with ",". Used by `xftctl exec` output folding.
std::string fold_names(const std::vector<std::string>& names);

// Hosts named by a target list (`--hosts`, a playbook's `hosts:`): "all", group names, host names,
// addresses, ClusterShell ranges and globs ("h0*"), joined with commas outside brackets
// ("head,node[01-02],compute"). Inventory order, each host once; empty selects every host. A word
// that matches nothing is an error naming it, so a typo cannot silently shrink a run.
Expected<std::vector<Host>> select_hosts(const Inventory& inventory, const std::string& targets);

}  // namespace xft::inventory
