#include "playbooks/playbook.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "inventory/yaml_errors.h"
#include "playbooks/render.h"

namespace xft::playbooks {
namespace {

using inventory::ErrorList;
using Json = nlohmann::json;

// A field of a task kind and how mustache values are escaped in it (render.h).
// The escape has no default: every field says where its text goes.
struct Field {
  Field(const char* name, Escape escape) : name(name), escape(escape) {}
  std::string name;
  Escape escape;
};

struct KindSpec {
  TaskKind kind;
  const char* name;
  std::vector<Field> required;
  std::vector<Field> optional;
  const char* shorthand;  // the field a plain string (or list, when it takes one) fills ("" = none)
};

constexpr auto shell = Escape::shell, config = Escape::config, line = Escape::line, raw = Escape::raw;

// cmd is a shell command string (shell) or, for command, an argv list whose
// words are quoted one by one; stdin and copy content are data, passed as
// given; everything else ends up in a path or a file line.
const std::vector<KindSpec>& kind_specs() {
  static const std::vector<KindSpec> specs = {
      {TaskKind::command, "command", {{"cmd", shell}},
       {{"creates", line}, {"removes", line}, {"chdir", line}, {"stdin", raw}, {"timeout", line}}, "cmd"},
      {TaskKind::shell, "shell", {{"cmd", shell}},
       {{"creates", line}, {"removes", line}, {"chdir", line}, {"stdin", raw}, {"timeout", line}}, "cmd"},
      {TaskKind::package, "package", {{"name", line}}, {{"state", line}}, "name"},
      {TaskKind::file, "file", {{"path", line}}, {{"state", line}, {"mode", line}}, "path"},
      {TaskKind::copy, "copy", {{"dest", line}}, {{"content", raw}, {"src", line}, {"mode", line}}, ""},
      {TaskKind::template_file, "template", {{"src", line}, {"dest", line}}, {{"mode", line}}, ""},
      {TaskKind::block, "block", {{"path", line}, {"marker", line}},
       {{"block", config}, {"template", line}, {"mode", line}, {"create", line}}, ""},
      {TaskKind::authorized_key, "authorized_key", {{"key", line}}, {{"user", line}, {"path", line}, {"exclusive", line}},
       "key"},
      {TaskKind::known_hosts, "known_hosts", {{"lines", line}}, {{"user", line}, {"path", line}}, "lines"},
      {TaskKind::mount, "mount", {{"path", line}, {"src", line}, {"fstype", line}},
       {{"opts", line}, {"state", line}, {"fstab", line}}, ""},
      {TaskKind::sync, "sync", {{"src", line}}, {{"dest", line}, {"delete", line}}, "src"},
  };
  return specs;
}

const std::vector<std::string> kTaskKeys = {"name",        "when",     "changed_when", "failed_when", "fail_msg",
                                            "until",       "retries",  "delay",        "register",    "run_once",
                                            "ignore_errors", "check_mode", "no_log",    "tags",        "become"};
const std::vector<std::string> kPlayKeys = {"name", "hosts", "vars", "any_errors_fatal", "max_fail_percentage",
                                            "tasks"};

std::vector<std::string> all_task_words() {
  std::vector<std::string> words = kTaskKeys;
  for (const auto& spec : kind_specs()) words.push_back(spec.name);
  return words;
}

const KindSpec* find_kind(const std::string& name) {
  for (const auto& spec : kind_specs())
    if (name == spec.name) return &spec;
  return nullptr;
}

// A scalar, list or map as JSON; scalars stay strings (each kind parses its own).
Json to_json(const YAML::Node& node) {
  if (node.IsScalar()) return node.as<std::string>();
  if (node.IsSequence()) {
    Json list = Json::array();
    for (const auto& item : node) list.push_back(to_json(item));
    return list;
  }
  if (node.IsMap()) {
    Json map = Json::object();
    for (const auto& item : node) map[item.first.as<std::string>()] = to_json(item.second);
    return map;
  }
  return nullptr;
}

class Loader {
 public:
  explicit Loader(std::string path) : path_(std::move(path)), errors_(path_) {}

  Expected<Playbook> load(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      errors_.add(e.mark.line, e.mark.column, "yaml", e.msg + " (fix the YAML syntax)");
      return errors_.to_error();
    }
    if (!root.IsMap()) {
      errors_.add(0, 0, "playbook", "expected a mapping with name, hosts and tasks (see playbooks/setup_hosts.yaml)");
      return errors_.to_error();
    }
    Playbook book;
    book.path = path_;
    read_play(root, book);
    if (!errors_.empty()) return errors_.to_error();
    return book;
  }

 private:
  void error(const YAML::Node& node, const std::string& field, const std::string& what) {
    auto mark = node.Mark();
    errors_.add(mark.line, mark.column, field, what);
  }

  void unknown_key(const YAML::Node& key, const std::string& where, const std::vector<std::string>& known) {
    auto word = key.as<std::string>();
    auto near = inventory::closest_match(word, known);
    error(key, where + word, "unknown field" + (near.empty() ? " (remove it)" : " (did you mean " + near + "?)"));
  }

  std::string scalar(const YAML::Node& node, const std::string& field) {
    if (!node.IsScalar()) {
      error(node, field, "expected a string");
      return {};
    }
    return node.as<std::string>();
  }

  bool boolean(const YAML::Node& node, const std::string& field) {
    auto text = scalar(node, field);
    if (text == "true" || text == "yes" || text == "True") return true;
    if (text == "false" || text == "no" || text == "False") return false;
    error(node, field, "expected true or false, got '" + text + "'");
    return false;
  }

  double number(const YAML::Node& node, const std::string& field, double low, double high) {
    auto text = scalar(node, field);
    try {
      size_t used = 0;
      double value = std::stod(text, &used);
      if (used == text.size() && value >= low && value <= high) return value;
    } catch (const std::exception&) {
    }
    std::ostringstream range;
    range << low << ".." << high;
    error(node, field, "expected a number in " + range.str() + ", got '" + text + "'");
    return low;
  }

  void read_play(const YAML::Node& root, Playbook& book) {
    for (const auto& item : root) {
      auto key = item.first.as<std::string>();
      const auto& value = item.second;
      if (key == "name") book.name = scalar(value, "name");
      else if (key == "hosts") book.hosts = scalar(value, "hosts");
      else if (key == "vars") {
        if (!value.IsMap()) error(value, "vars", "expected a mapping of names to values");
        else book.vars = to_json(value);
      } else if (key == "any_errors_fatal") book.any_errors_fatal = boolean(value, key);
      else if (key == "max_fail_percentage") book.max_fail_percentage = static_cast<int>(number(value, key, 0, 100));
      else if (key == "tasks") read_tasks(value, book);
      else unknown_key(item.first, "", kPlayKeys);
    }
    if (!root["tasks"]) error(root, "tasks", "missing (add a list of tasks)");
  }

  void read_tasks(const YAML::Node& list, Playbook& book) {
    if (!list.IsSequence()) return error(list, "tasks", "expected a list of tasks");
    for (size_t i = 0; i < list.size(); ++i) {
      const auto& node = list[i];
      std::string where = "tasks[" + std::to_string(i) + "]";
      if (!node.IsMap()) {
        error(node, where, "expected a mapping (name: ..., command: ...)");
        continue;
      }
      book.tasks.push_back(read_task(node, where));
    }
  }

  Task read_task(const YAML::Node& node, const std::string& where) {
    Task task;
    task.line = node.Mark().line + 1;
    const KindSpec* kind = nullptr;
    bool had_unknown = false;  // "comand:" already says what is wrong; no second error
    YAML::Node kind_value;
    for (const auto& item : node) {
      auto key = item.first.as<std::string>();
      const auto& value = item.second;
      std::string field = where + "." + key;
      if (const auto* spec = find_kind(key)) {
        if (kind) error(item.first, field, std::string("a task has one kind; this one already is ") + kind->name +
                                               " (split it into two tasks)");
        kind = spec;
        kind_value = value;
      } else if (key == "name") task.name = scalar(value, field);
      else if (key == "when") task.when = scalar(value, field);
      else if (key == "changed_when") task.changed_when = scalar(value, field);
      else if (key == "failed_when") task.failed_when = scalar(value, field);
      else if (key == "fail_msg") task.fail_msg = scalar(value, field);
      else if (key == "until") task.until = scalar(value, field);
      else if (key == "retries") task.retries = static_cast<int>(number(value, field, 0, 1000));
      else if (key == "delay") task.delay_s = number(value, field, 0, 3600);
      else if (key == "register") task.register_as = scalar(value, field);
      else if (key == "run_once") task.run_once = boolean(value, field);
      else if (key == "ignore_errors") task.ignore_errors = boolean(value, field);
      else if (key == "check_mode") task.check_mode = boolean(value, field);
      else if (key == "no_log") task.no_log = boolean(value, field);
      else if (key == "become") task.become = boolean(value, field);
      else if (key == "tags") {
        if (value.IsScalar()) task.tags.push_back(value.as<std::string>());
        else if (value.IsSequence())
          for (const auto& tag : value) task.tags.push_back(scalar(tag, field));
        else error(value, field, "expected a tag or a list of tags");
      } else {
        unknown_key(item.first, where + ".", all_task_words());
        had_unknown = true;
      }
    }
    if (!kind && had_unknown) return task;
    if (!kind) {
      std::string kinds;
      for (const auto& spec : kind_specs()) kinds += std::string(kinds.empty() ? "" : ", ") + spec.name;
      error(node, where, "no task kind (add one of: " + kinds + ")");
      return task;
    }
    task.kind = kind->kind;
    if (task.name.empty()) task.name = kind->name;
    task.args = read_args(*kind, kind_value, where + "." + kind->name);
    return task;
  }

  Json read_args(const KindSpec& spec, const YAML::Node& value, const std::string& field) {
    Json args = Json::object();
    bool takes_list = spec.kind == TaskKind::package || spec.kind == TaskKind::command;
    if (value.IsScalar() || (value.IsSequence() && takes_list)) {
      if (!*spec.shorthand) {
        error(value, field, "expected a mapping with " + join(names(spec.required)));
        return args;
      }
      args[spec.shorthand] = to_json(value);
      check_field(spec, spec.shorthand, value, field);
    } else if (value.IsMap()) {
      std::vector<std::string> known = names(spec.required);
      for (const auto& name : names(spec.optional)) known.push_back(name);
      for (const auto& item : value) {
        auto key = item.first.as<std::string>();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
          unknown_key(item.first, field + ".", known);
          continue;
        }
        args[key] = to_json(item.second);
        check_field(spec, key, item.second, field + "." + key);
      }
    } else {
      std::string hint = spec.kind == TaskKind::shell && value.IsSequence() ? " (for a list of words use command:)" : "";
      error(value, field, std::string("expected a string") + (takes_list ? ", a list" : "") + " or a mapping" + hint);
      return args;
    }
    for (const auto& required : spec.required)
      if (!args.contains(required.name)) error(value, field + "." + required.name, "missing (add it)");
    if (spec.kind == TaskKind::copy && args.contains("content") == args.contains("src"))
      error(value, field, "give exactly one of content and src");
    if (spec.kind == TaskKind::block && args.contains("block") == args.contains("template"))
      error(value, field, "give exactly one of block and template");
    return args;
  }

  // A command is one shell string, or (command only) an argv list of words;
  // a shell string's {{name}} tags must stand where a quoted word means itself.
  void check_field(const KindSpec& spec, const std::string& key, const YAML::Node& value, const std::string& field) {
    if (key != "cmd") return;
    if (value.IsSequence() && spec.kind == TaskKind::command) {
      for (const auto& word : value)
        if (!word.IsScalar()) error(word, field, "expected a list of words (strings)");
      if (value.size() == 0) error(value, field, "expected at least the program to run");
      return;
    }
    if (!value.IsScalar()) {
      error(value, field, spec.kind == TaskKind::shell ? "expected one command string (for a list of words use command:)"
                                                        : "expected a command string or a list of words");
      return;
    }
    auto placed = check_placement(value.as<std::string>(), Escape::shell);
    if (!placed) error(value, field, placed.error().message);
  }

  static std::vector<std::string> names(const std::vector<Field>& fields) {
    std::vector<std::string> list;
    for (const auto& item : fields) list.push_back(item.name);
    return list;
  }

  static std::string join(const std::vector<std::string>& words) {
    std::string text;
    for (const auto& word : words) text += (text.empty() ? "" : ", ") + word;
    return text;
  }

  std::string path_;
  ErrorList errors_;
};

}  // namespace

const char* kind_name(TaskKind kind) {
  for (const auto& spec : kind_specs())
    if (spec.kind == kind) return spec.name;
  return "?";
}

Expected<Json> render_task_args(const Task& task, const Json& vars) {
  const KindSpec* spec = nullptr;
  for (const auto& item : kind_specs())
    if (item.kind == task.kind) spec = &item;
  if (!spec) return make_error("unknown task kind");
  Json out = Json::object();
  for (const auto& [key, value] : task.args.items()) {
    const Field* field = nullptr;
    for (const auto* list : {&spec->required, &spec->optional})
      for (const auto& item : *list)
        if (item.name == key) field = &item;
    if (!field) return make_error(std::string(spec->name) + "." + key + ": not a field of " + spec->name);
    auto rendered = render_field(value, vars, field->escape, std::string(spec->name) + "." + key);
    if (!rendered) return rendered.error();
    out[key] = std::move(*rendered);
  }
  return out;
}

Expected<Playbook> parse_playbook(const std::string& text, const std::string& path) {
  return Loader(path).load(text);
}

Expected<Playbook> load_playbook(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read the playbook (check the path)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_playbook(text.str(), path);
}

}  // namespace xft::playbooks
