#include "playbooks/render.h"

#include <kainjow/mustache.hpp>

#include <cstdio>
#include <optional>
#include <set>

#include "launcher/mpirun.h"

namespace xft::playbooks {
namespace {

using Json = nlohmann::json;
using kainjow::mustache::data;

data to_data(const Json& value) {
  if (value.is_object()) {
    data object{data::type::object};
    for (const auto& [key, item] : value.items()) object.set(key, to_data(item));
    return object;
  }
  if (value.is_array()) {
    data list{data::type::list};
    for (const auto& item : value) list.push_back(to_data(item));
    return list;
  }
  if (value.is_boolean()) return data{value.get<bool>() ? data::type::bool_true : data::type::bool_false};
  if (value.is_string()) return data{value.get<std::string>()};
  if (value.is_null()) return data{data::type::bool_false};
  return data{value.dump()};
}

// kainjow's escape callback sees only the value; the variable it belongs to
// is the name looked up just before, which this context remembers.
class NamingContext : public kainjow::mustache::context<std::string> {
 public:
  explicit NamingContext(const data* root) : kainjow::mustache::context<std::string>(root) {}
  const data* get(const std::string& name) const override {
    last_ = name;
    return kainjow::mustache::context<std::string>::get(name);
  }
  const std::string& last() const { return last_; }

 private:
  mutable std::string last_;
};

// --- where tags stand in the template text -----------------------------------

struct Tag {
  size_t begin = 0, end = 0;  // the whole tag, delimiters included
  char sigil = 0;             // 0: an escaped variable; '{' '&' '#' '^' '/' '>' '!' '='
  std::string name;
};

std::string trim(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// The tag starting at `at` (text there is "{{"), read the way kainjow reads
// it; nullopt for an unclosed tag, which kainjow reports itself.
std::optional<Tag> tag_at(const std::string& text, size_t at) {
  bool triple = at + 2 < text.size() && text[at + 2] == '{';
  size_t contents = at + (triple ? 3 : 2);
  size_t close = text.find(triple ? "}}}" : "}}", contents);
  if (close == std::string::npos) return std::nullopt;
  Tag tag{at, close + (triple ? 3 : 2), triple ? '{' : '\0', trim(text.substr(contents, close - contents))};
  if (!triple && !tag.name.empty() && std::string("#^/>&!=").find(tag.name[0]) != std::string::npos) {
    tag.sigil = tag.name[0];
    tag.name = trim(tag.name.substr(1));
  }
  return tag;
}

bool starts_shell_word(char previous) { return std::string(" \t\n;&|()<>").find(previous) != std::string::npos; }

// The shell's reading state at a point of the template's literal text.
struct ShellState {
  enum class Quote { none, single, ansi, twin, comment } quote = Quote::none;  // ansi: bash's $'...'
  bool heredoc = false;
  // Inside `...` the shell looks only for the closing backquote (quotes do not
  // hide it), then goes on in the quoting it had at the opening one.
  bool backquote = false;
  Quote outside_backquote = Quote::none;
  char previous = '\n';

  // Why a quoted word cannot stand here; "" when it can.
  std::string trap() const {
    if (backquote) return "is inside `...`, which a quoted backquote would end (use $(...))";
    switch (quote) {
      case Quote::single: return "is inside '...' quotes";
      case Quote::ansi: return "is inside $'...' quotes";
      case Quote::twin: return "is inside \"...\" quotes";
      case Quote::comment: return "is inside a # comment";
      case Quote::none: break;
    }
    if (heredoc) return "comes after a here-document (<<), where the shell does not read quotes";
    if (previous == '\\') return "follows a backslash, which would undo its quoting";
    if (previous == '$') return "follows a $";
    return "";
  }

  // Advances over text[i]; returns how many characters were read.
  size_t step(const std::string& text, size_t i) {
    char c = text[i];
    bool escapes = c == '\\' && (backquote || quote == Quote::none || quote == Quote::twin || quote == Quote::ansi);
    if (escapes && text.compare(i + 1, 2, "{{") != 0 && i + 1 < text.size()) {
      previous = 'x';
      return 2;
    }
    if (backquote) {
      if (c == '`') backquote = false, quote = outside_backquote;
    } else if (c == '`' && (quote == Quote::none || quote == Quote::twin)) {
      backquote = true;
      outside_backquote = quote;
    } else if ((quote == Quote::single || quote == Quote::ansi) && c == '\'') quote = Quote::none;
    else if (quote == Quote::twin && c == '"') quote = Quote::none;
    else if (quote == Quote::comment && c == '\n') quote = Quote::none;
    else if (quote == Quote::none) {
      if (c == '\'') quote = previous == '$' ? Quote::ansi : Quote::single;
      else if (c == '"') quote = Quote::twin;
      else if (c == '#' && starts_shell_word(previous)) quote = Quote::comment;
      else if (c == '<' && i + 1 < text.size() && text[i + 1] == '<') heredoc = true;
    }
    previous = c;
    return 1;
  }
};

// Shell mode: every escaped variable and every section tag must stand where a
// quoted word means itself. Section tags count too, so that a section's body
// (repeated per item) leaves the quoting as it found it.
Expected<void> check_shell_positions(const std::string& text) {
  ShellState state;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "{{") != 0) {
      i += state.step(text, i);
      continue;
    }
    auto tag = tag_at(text, i);
    if (!tag) return {};
    if (tag->sigil == '=')
      return make_error("{{=...=}} (new delimiters) is not allowed in shell commands");
    bool checked = tag->sigil == '\0' || tag->sigil == '#' || tag->sigil == '^' || tag->sigil == '/';
    if (auto trap = state.trap(); checked && !trap.empty()) {
      std::string shown = text.substr(tag->begin, tag->end - tag->begin);
      return make_error(shown + " " + trap + "; write " + shown +
                        " as a bare word: its value is quoted for the shell");
    }
    state.previous = 'x';
    i = tag->end;
  }
  return {};
}

// Config mode: names of variables that stand inside a parenthesized list on
// their line (exports' "host(options)").
std::set<std::string> names_inside_parentheses(const std::string& text) {
  std::set<std::string> names;
  int depth = 0;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "{{") == 0) {
      auto tag = tag_at(text, i);
      if (!tag) break;
      if (tag->sigil == '\0' && depth > 0) names.insert(tag->name);
      i = tag->end;
      continue;
    }
    if (text[i] == '\n') depth = 0;
    else if (text[i] == '(') ++depth;
    else if (text[i] == ')' && depth > 0) --depth;
    ++i;
  }
  return names;
}

// --- escaping one value ------------------------------------------------------

struct EscapeRules {
  Escape escape;
  std::set<std::string> option_names;  // config: inside (...)
};

Expected<std::string> one_line(const std::string& value, const std::string& name) {
  auto control = control_character_in(value);
  if (control.empty()) return value;
  return make_error("{{" + name + "}} contains " + control + " (\"" + printable(value) +
                    "\"); a value here must be one line of printable text");
}

Expected<std::string> config_value(const std::string& value, const std::string& name, const EscapeRules& rules) {
  auto line = one_line(value, name);
  if (!line) return line;
  if (rules.option_names.count(name) && value.find_first_of(" ()") != std::string::npos)
    return make_error("{{" + name + "}} stands in an option list (...) and contains a space or a parenthesis (\"" +
                      printable(value) + "\"); give options as a,b,c");
  std::string out;
  for (char c : value) {
    if (c == ' ') out += "\\040";
    else if (c == '\\') out += "\\134";
    else out += c;
  }
  return out;
}

Expected<std::string> escape_value(const std::string& value, const std::string& name, const EscapeRules& rules) {
  switch (rules.escape) {
    case Escape::shell:
      if (value.find('\0') != std::string::npos)
        return make_error("{{" + name + "}} contains a NUL byte, which no shell word can hold");
      return launcher::shell_join({value});
    case Escape::config: return config_value(value, name, rules);
    case Escape::line: return one_line(value, name);
    case Escape::raw: return value;
  }
  return value;
}

}  // namespace

std::string control_character_in(const std::string& value) {
  for (unsigned char c : value) {
    if (c >= 0x20 && c != 0x7f) continue;
    switch (c) {
      case '\n': return "a newline";
      case '\r': return "a carriage return";
      case '\t': return "a tab";
      case 0x1b: return "an escape character";
      case 0: return "a NUL byte";
      default: {
        char text[32];
        std::snprintf(text, sizeof text, "control character 0x%02x", c);
        return text;
      }
    }
  }
  return "";
}

std::string printable(const std::string& value) {
  constexpr size_t kShown = 60;
  std::string out;
  for (size_t i = 0; i < value.size() && i < kShown; ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return value.size() > kShown ? out + "..." : out;
}

Expected<std::string> render_text(const std::string& text, const Json& vars, Escape escape, const std::string& what) {
  if (text.find("{{") == std::string::npos) return text;
  kainjow::mustache::mustache tmpl{text};
  if (!tmpl.is_valid()) return make_error(what + ": " + tmpl.error_message());
  auto placed = check_placement(text, escape);
  if (!placed) return make_error(what + ": " + placed.error().message);
  EscapeRules rules{escape, {}};
  if (escape == Escape::config) rules.option_names = names_inside_parentheses(text);
  auto root = to_data(vars);
  NamingContext context{&root};
  std::string problem;
  tmpl.set_custom_escape([&](const std::string& value) -> std::string {
    if (!problem.empty()) return "";
    auto escaped = escape_value(value, context.last(), rules);
    if (!escaped) problem = escaped.error().message;
    return escaped ? *escaped : "";
  });
  std::string out = tmpl.render(context);
  if (!tmpl.is_valid()) return make_error(what + ": " + tmpl.error_message());
  if (!problem.empty()) return make_error(what + ": " + problem);
  return out;
}

Expected<void> check_placement(const std::string& text, Escape escape) {
  if (escape == Escape::shell) return check_shell_positions(text);
  return {};
}

Escape template_escape(const std::string& file_name) {
  auto ends_with = [&](const std::string& suffix) {
    return file_name.size() >= suffix.size() && file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".sh") || ends_with(".sh.mustache") ? Escape::shell : Escape::config;
}

Expected<Json> render_field(const Json& value, const Json& vars, Escape escape, const std::string& what) {
  if (value.is_string()) {
    auto text = render_text(value.get<std::string>(), vars, escape, what);
    if (!text) return text.error();
    return Json(*text);
  }
  if (value.is_array() || value.is_object()) {
    // A list where a shell command goes is an argv: its words are quoted when joined.
    Escape inner = value.is_array() && escape == Escape::shell ? Escape::line : escape;
    Json out = value;
    size_t index = 0;
    for (auto& [key, item] : out.items()) {
      auto where = what + (value.is_array() ? "[" + std::to_string(index++) + "]" : "." + key);
      auto rendered = render_field(item, vars, inner, where);
      if (!rendered) return rendered.error();
      item = std::move(*rendered);
    }
    return out;
  }
  return value;
}

}  // namespace xft::playbooks
