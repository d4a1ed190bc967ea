// `xftctl completion bash|zsh` and the man page, both written from the command
// tree CLI11 holds, so they list exactly the commands and options that parse.
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/command_tree.h"
#include "common/atomic_file.h"
#include "common/log.h"

namespace xft::cli {
namespace {

// A visible command: its words after "xftctl" ("run qwen") and its app.
struct CommandNode {
  std::string path;
  const CLI::App* app;
};

void collect(const CLI::App* app, const std::string& path, std::vector<CommandNode>& out) {
  out.push_back({path, app});
  for (const CLI::App* sub : visible_subcommands(app))
    collect(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

std::vector<CommandNode> command_tree(const CLI::App* root) {
  std::vector<CommandNode> nodes;
  collect(root, "", nodes);
  return nodes;
}

const CLI::App* root_of(const CLI::App* app) {
  while (app->get_parent()) app = app->get_parent();
  return app;
}

// Words offered after PATH: its subcommands and its long and short options.
std::string completion_words(const CLI::App* app) {
  std::string words;
  auto add = [&](const std::string& word) { words += (words.empty() ? "" : " ") + word; };
  for (const CLI::App* sub : visible_subcommands(app)) add(sub->get_name());
  for (const CLI::Option* option : visible_options(app)) {
    for (const auto& name : option->get_lnames()) add("--" + name);
    for (const auto& name : option->get_snames()) add("-" + name);
  }
  return words;
}

std::string bash_script(const CLI::App* root) {
  std::string out =
      "# bash completion for xftctl: source it, or install it as\n"
      "#   xftctl completion bash > /etc/bash_completion.d/xftctl\n"
      "_xftctl() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} path='' word i words=''\n"
      "  local -A commands=(";
  for (const auto& node : command_tree(root))
    if (!node.path.empty()) out += " ['" + node.path + "']=1";
  out +=
      " )\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    word=${COMP_WORDS[i]}\n"
      "    [[ $word == -- ]] && return 0  # the rest is a command for the hosts\n"
      "    if [[ -n ${commands[${path:+$path }$word]:-} ]]; then path=${path:+$path }$word; fi\n"
      "  done\n"
      "  case $path in\n";
  for (const auto& node : command_tree(root))
    out += "    '" + node.path + "') words='" + completion_words(node.app) + "' ;;\n";
  out +=
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -o default -F _xftctl xftctl\n";
  return out;
}

std::string zsh_script(const CLI::App* root) {
  return "#compdef xftctl\n"
         "# zsh completion for xftctl (through zsh's bash completion layer): put it in a\n"
         "# directory of $fpath as _xftctl, or source it from ~/.zshrc.\n"
         "autoload -U +X bashcompinit && bashcompinit\n" +
         bash_script(root);
}

// roff text: backslashes doubled, a leading dot or quote made literal.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

std::string option_synopsis(const CLI::Option* option) {
  std::string names;
  for (const auto& name : option->get_snames()) names += (names.empty() ? "" : ", ") + ("-" + name);
  for (const auto& name : option->get_lnames()) names += (names.empty() ? "" : ", ") + ("--" + name);
  if (option->get_type_size() != 0 && !option->get_option_text().empty()) names += " " + option->get_option_text();
  return names;
}

std::string man_page(const CLI::App* root) {
  std::string out =
      ".TH XFTCTL 1 \"\" \"xftctl 0.1.0\" \"User Commands\"\n"
      ".SH NAME\nxftctl \\- " + roff(root->get_description().substr(root->get_description().find(": ") + 2)) + "\n"
      ".SH SYNOPSIS\n.B xftctl\n[\\fB\\-i\\fR \\fIINVENTORY\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
      ".SH DESCRIPTION\nOne command from a list of IP addresses to a tensor\\-parallel Qwen model answering on every\n"
      "core: SSH provisioning, fabric checks, rank planning and launch with Open MPI, an inference engine,\n"
      "an OpenAI\\-compatible server and allreduce benchmarks.\n";
  for (const auto& node : command_tree(root)) {
    out += node.path.empty() ? ".SH GLOBAL OPTIONS\n" : ".SH " + roff("xftctl " + node.path) + "\n" + roff(node.app->get_description()) + "\n";
    for (const CLI::Option* option : visible_options(node.app))
      out += ".TP\n.B " + roff(option_synopsis(option)) + "\n" + roff(option->get_description()) + "\n";
  }
  out +=
      ".SH EXIT STATUS\n"
      ".TP\n.B 0\nsuccess\n"
      ".TP\n.B 1\nbad input or a failed local step\n"
      ".TP\n.B 2\na host failed a command or task\n"
      ".TP\n.B 4\na host could not be reached\n"
      ".TP\n.B 5\nthe command line is wrong\n"
      ".SH FILES\n"
      ".TP\n.I ~/.config/xftctl/\nknown_hosts, the control node's key pair, the facts cache\n"
      ".SH SEE ALSO\nmpirun(1), fi_info(1), ssh(1)\n";
  return out;
}

}  // namespace

void add_completion_commands(CLI::App& app, Context& ctx) {
  auto* completion = app.add_subcommand("completion", "print a shell completion script (bash or zsh)");
  static std::string shell;
  completion->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([completion] {
    const CLI::App* root = root_of(completion);
    std::fputs((shell == "zsh" ? zsh_script(root) : bash_script(root)).c_str(), stdout);
  });
  auto* manpage = app.add_subcommand("manpage", "print the man page (roff); the build writes it to build/xftctl.1");
  manpage->group("");
  static std::string output;
  manpage->add_option("-o,--output", output, "write it to this file instead of stdout");
  manpage->callback([manpage, &ctx] {
    std::string page = man_page(root_of(manpage));
    if (output.empty()) {
      std::fputs(page.c_str(), stdout);
    } else if (auto written = write_file_atomic(output, page); !written) {
      spdlog::error("manpage: {}", written.error().message);
      ctx.exit_code = exit_error;
    }
  });
}

}  // namespace xft::cli
