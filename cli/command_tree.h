// What a user can type at a command, read from CLI11's tree: shared by the
// usage-error suggestions and the completion/man page writers.
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

namespace xft::cli {

// A named subcommand outside the hidden ("") group.
inline bool is_visible_command(const CLI::App* app) {
  return !app->get_name().empty() && !app->get_group().empty();
}

inline std::vector<const CLI::App*> visible_subcommands(const CLI::App* app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : app->get_subcommands({}))
    if (is_visible_command(sub)) out.push_back(sub);
  return out;
}

// The named, not hidden options of APP, also those in its option groups
// (nameless child apps that hold options of the same command).
inline void add_visible_options(const CLI::App* app, std::vector<const CLI::Option*>& out) {
  for (const CLI::Option* option : app->get_options()) {
    bool named = !option->get_lnames().empty() || !option->get_snames().empty();  // not a positional
    if (named && !option->get_group().empty()) out.push_back(option);
  }
  for (const CLI::App* group : app->get_subcommands({}))
    if (group->get_name().empty()) add_visible_options(group, out);
}

inline std::vector<const CLI::Option*> visible_options(const CLI::App* app) {
  std::vector<const CLI::Option*> out;
  add_visible_options(app, out);
  return out;
}

}  // namespace xft::cli
