#include "cli/usage_errors.h"

#include <set>
#include <vector>

#include "cli/command_tree.h"
#include "inventory/yaml_errors.h"

namespace xft::cli {
namespace {

// The innermost subcommand the arguments reached ("run qwen" -> the qwen app).
const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) return deepest_parsed(*sub);
  return &app;
}

// "run qwen" for the qwen app; empty for xftctl itself.
std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command && command->get_parent(); command = command->get_parent())
    path = path.empty() ? command->get_name() : command->get_name() + " " + path;
  return path;
}

// "run qwen: " before a message; nothing at the top level.
std::string prefix(const CLI::App* command) {
  auto path = command_path(command);
  return path.empty() ? "" : path + ": ";
}

std::string help_of(const CLI::App* command) {
  auto path = command_path(command);
  return "`xftctl " + (path.empty() ? "" : path + " ") + "--help`";
}

std::vector<std::string> subcommand_names(const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : visible_subcommands(command)) names.push_back(sub->get_name());
  return names;
}

// The long options valid at `command`: its own and those its parents pass down.
std::vector<std::string> long_option_names(const CLI::App* command) {
  std::vector<std::string> names;
  for (; command; command = command->get_parent())
    for (const CLI::Option* option : visible_options(command))
      for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  return names;
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

std::string ticked(const std::string& text) { return "`" + text + "`"; }

// The first argument CLI11 could not place, with its fix.
std::string unexpected_argument(const CLI::App* command, const std::string& word) {
  static const std::set<std::string> takes_a_command = {"exec", "launch"};
  if (takes_a_command.count(command->get_name()))
    return prefix(command) + ticked(word) + " is not an option of " + command->get_name() +
           " (put the command to run after `--`, e.g. `xftctl " + command_path(command) + " -- uname -r`)";
  if (word.rfind("--", 0) == 0 || (word.size() == 2 && word[0] == '-')) {
    std::string name = word.substr(0, word.find('='));
    // A one-letter option is too short to guess from.
    std::string guess = name.size() > 2 ? inventory::closest_match(name, long_option_names(command)) : "";
    return prefix(command) + "unknown option " + ticked(name) +
           (guess.empty() ? " (see " + help_of(command) + ")" : " (did you mean " + ticked(guess) + "?)");
  }
  auto subcommands = subcommand_names(command);
  if (!subcommands.empty()) {
    std::string guess = inventory::closest_match(word, subcommands);
    return prefix(command) + "unknown command " + ticked(word) +
           (guess.empty() ? " (commands: " + join(subcommands, ", ") + ")"
                          : " (did you mean " + ticked(guess) + "?)");
  }
  return prefix(command) + "unexpected argument " + ticked(word) + " (see " + help_of(command) + ")";
}

std::string missing_subcommand(const CLI::App* command) {
  return prefix(command) + "give a command (" + join(subcommand_names(command), ", ") + ")";
}

}  // namespace

std::string usage_error_line(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App* command = deepest_parsed(app);
  std::string message = error.what();
  bool required = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  bool no_subcommand = required && message.find("subcommand") != std::string::npos;
  if (dynamic_cast<const CLI::ExtrasError*>(&error) || required) {
    // Arguments no command took: the first of them is the mistake.
    auto left = app.remaining(true);
    if (!left.empty()) return unexpected_argument(command, left.front());
  }
  if (no_subcommand) return missing_subcommand(command);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  for (auto& c : message)
    if (c == '\n') c = ' ';
  return prefix(command) + message + " (see " + help_of(command) + ")";
}

}  // namespace xft::cli
