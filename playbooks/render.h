// Mustache rendering of task arguments and template files against a host's
// variables (JSON). Every `{{name}}` is escaped for where the text goes (a
// shell command, a config file line, a path); `{{{name}}}` / `{{& name}}` is
// mustache's unescaped form, for the rare trusted value only. Which escape a
// task field gets is declared beside the field (playbook.cpp), so a task kind
// cannot leave one out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/expected.h"

namespace xft::playbooks {

enum class Escape {
  // A POSIX shell word: left bare when it matches [A-Za-z0-9_@%+=:,./-]+,
  // else single-quoted ('\'' for a quote; '' when empty). A `{{name}}` inside
  // quotes, backquotes, a comment or a here-document, or right after `\` or
  // `$`, is refused: the quoting would not hold there.
  shell,
  // A plain config file line (/etc/hosts block, MPI hostfile, exports):
  // control characters refused, space as \040 and backslash as \134 (the
  // octal escapes exports(5) and fstab(5) read). A value the template puts
  // inside parentheses (an exports option list) may hold no whitespace or
  // parentheses.
  config,
  // As given, but control characters refused: paths and single lines.
  line,
  // As given: messages and whole file contents.
  raw,
};

// `what` names the text in errors ("template hosts_block.mustache", "command.cmd").
Expected<std::string> render_text(const std::string& text, const nlohmann::json& vars, Escape escape,
                                  const std::string& what = "template");

// Whether the text's tags stand where `escape` can hold (shell: not inside
// quotes and the like); the message names the first misplaced tag.
Expected<void> check_placement(const std::string& text, Escape escape);

// A template file's escape by its name: *.sh and *.sh.mustache render for the
// shell, every other file as a config file.
Escape template_escape(const std::string& file_name);

// Every string inside `args` (lists and maps walked) rendered with `escape`,
// except that a list under a `shell` field is an argv: each item rendered as a
// `line`, left a list, and quoted word by word when the command is built.
Expected<nlohmann::json> render_field(const nlohmann::json& value, const nlohmann::json& vars, Escape escape,
                                      const std::string& what);

// The value in C escapes (\n, \t, \x1b) and cut to a readable length, for messages.
std::string printable(const std::string& value);
// The name of the first control character in `value` ("a newline", "a tab", ...), "" when none.
std::string control_character_in(const std::string& value);

}  // namespace xft::playbooks
