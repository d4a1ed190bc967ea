// package and mount: the host's package manager and its mount table.
#include <cctype>
#include <set>
#include <sstream>

#include "launcher/mpirun.h"
#include "playbooks/render.h"
#include "playbooks/sync.h"
#include "playbooks/task_args.h"

namespace xft::playbooks {

using namespace detail;

namespace {

// Package names for one manager: a plain list, or {apt: [...], dnf: [...], yum: [...]}.
std::vector<std::string> names_for(const nlohmann::json& names, const std::string& manager) {
  if (!names.is_object()) return arg_list(names);
  if (names.contains(manager)) return arg_list(names[manager]);
  if (manager == "yum" && names.contains("dnf")) return arg_list(names["dnf"]);
  if (manager == "dnf" && names.contains("yum")) return arg_list(names["yum"]);
  return {};
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += " " + shell_quote(name);
  return text;
}

// One round trip: which manager, and which of its packages are installed
// ("manager" on the first line, then one installed name per line). The
// distribution's family (ID and ID_LIKE of /etc/os-release, read as text,
// never sourced) decides first: a RHEL-family host that also carries an
// apt-get (or a Debian host with a dnf) still uses its own manager.
std::string probe_script(const nlohmann::json& names) {
  auto apt = quoted_list(names_for(names, "apt"));
  auto rpm_dnf = quoted_list(names_for(names, "dnf"));
  auto rpm_yum = quoted_list(names_for(names, "yum"));
  const std::string probe_apt = "command -v apt-get >/dev/null 2>&1 && { echo apt;"
                                " dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n' --" + apt +
                                " 2>/dev/null | sed -n 's/^ii  *//p'; exit 0; }";
  const std::string probe_rpm = "command -v dnf >/dev/null 2>&1 && { echo dnf; rpm -q --qf '%{NAME}\\n'" + rpm_dnf +
                                " 2>/dev/null | grep -v ' '; exit 0; };"
                                " command -v yum >/dev/null 2>&1 && { echo yum; rpm -q --qf '%{NAME}\\n'" + rpm_yum +
                                " 2>/dev/null | grep -v ' '; exit 0; }";
  return "family=$(sed -n 's/^ID\\(_LIKE\\)\\{0,1\\}=//p' /etc/os-release 2>/dev/null | tr -d '\"' | tr '\\n' ' ');"
         " case \" $family \" in"
         " *' rhel '*|*' fedora '*|*' centos '*|*' alinux '*|*' anolis '*|*' amzn '*|*' rocky '*|*' almalinux '*|*' ol '*) " +
         probe_rpm + "; " + probe_apt + ";;"
         " *) " + probe_apt + "; " + probe_rpm + ";;"
         " esac; echo none";
}

std::string install_command(const std::string& manager, const std::vector<std::string>& names, bool remove) {
  auto list = quoted_list(names);
  if (manager == "apt") {
    if (remove) return "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q" + list;
    std::string install = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends" + list;
    // A host that never ran apt-get update has no package lists yet.
    return install + " || { apt-get update -q && " + install + "; }";
  }
  return manager + (remove ? " remove -y" : " install -y") + list;
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace

TaskResult run_package(const nlohmann::json& args, TaskEnv& env) {
  auto state = arg(args, "state", "present");
  if (state != "present" && state != "absent") return failed("state '" + state + "' is not present or absent");
  auto probe = env.session.run(probe_script(args["name"]));
  if (!probe) return from_error(probe.error());
  std::istringstream lines(probe->out);
  std::string manager;
  std::getline(lines, manager);
  if (manager == "none" || manager.empty())
    return failed("no apt-get, dnf or yum on the host (install the packages by hand or skip this step)");
  std::set<std::string> installed;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) installed.insert(line);
  auto names = names_for(args["name"], manager);
  std::vector<std::string> todo;
  for (const auto& name : names)
    if ((installed.count(name) > 0) == (state == "absent")) todo.push_back(name);
  TaskResult result;
  result.data["package_manager"] = manager;
  if (todo.empty()) {
    result = outcome(false, manager + ": " + (names.empty() ? "nothing to do" : join(names) + " " +
                                                                                    (state == "absent" ? "absent" : "installed")));
    result.data["package_manager"] = manager;
    return result;
  }
  std::string verb = state == "absent" ? "remove" : "install";
  if (env.check) return outcome(true, manager + ": would " + verb + " " + join(todo));
  auto ran = env.session.run(install_command(manager, todo, state == "absent"));
  if (!ran) return from_error(ran.error());
  if (ran->exit_status != 0) {
    std::string err = ran->err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    auto last = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
    return failed(manager + " " + verb + " " + join(todo) + ": exit " + std::to_string(ran->exit_status) + ": " + last);
  }
  result = outcome(true, manager + ": " + (state == "absent" ? "removed " : "installed ") + join(todo));
  result.data["package_manager"] = manager;
  return result;
}

std::string merge_fstab(const std::string& current, const std::string& mount_point, const std::string& line) {
  std::istringstream in(current);
  std::string out;
  bool placed = false;
  for (std::string have; std::getline(in, have);) {
    std::istringstream words(have);
    std::string source, target;
    words >> source >> target;
    if (!source.empty() && source[0] != '#' && target == mount_point) {
      if (!placed) out += line + "\n";
      placed = true;
      continue;
    }
    out += have + "\n";
  }
  if (!placed) out += line + "\n";
  return out;
}

Expected<std::string> fstab_field(const std::string& value, const std::string& what) {
  if (value.empty()) return make_error(what + " is empty (an fstab field cannot be)");
  std::string out;
  for (char c : value) {
    switch (c) {
      case ' ': out += "\\040"; break;
      case '\t': out += "\\011"; break;
      case '\n': out += "\\012"; break;
      case '\\': out += "\\134"; break;
      default:
        // getmntent decodes only the four escapes above; any other control character would be taken as is.
        if (!control_character_in(std::string(1, c)).empty())
          return make_error(what + " contains " + control_character_in(std::string(1, c)) + " (\"" + printable(value) +
                            "\"), which fstab cannot hold");
        out += c;
    }
  }
  return out;
}

Expected<std::string> fstab_line(const std::string& source, const std::string& path, const std::string& fstype,
                                 const std::string& options) {
  if (path.empty() || path[0] != '/') return make_error("path '" + printable(path) + "' is not an absolute path");
  std::string line;
  for (const auto& [value, what] : {std::pair{&source, "src"}, {&path, "path"}, {&fstype, "fstype"}, {&options, "opts"}}) {
    auto field = fstab_field(*value, what);
    if (!field) return field.error();
    line += *field + " ";
  }
  return line + "0 0";
}

namespace {

// findmnt -r writes unsafe characters as \xHH.
std::string decode_findmnt(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "\\x") == 0 && i + 3 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 2])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 3]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 2, 2), nullptr, 16));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

TaskResult run_mount(const nlohmann::json& args, TaskEnv& env) {
  auto path = arg(args, "path"), source = arg(args, "src"), fstype = arg(args, "fstype");
  auto options = arg(args, "opts", "defaults");
  auto state = arg(args, "state", "mounted");
  auto fstab = arg(args, "fstab", "/etc/fstab");
  if (state != "mounted" && state != "present")
    return failed("state '" + state + "' is not mounted or present");
  auto line = fstab_line(source, path, fstype, options);
  if (!line) return failed("mount: " + line.error().message);
  auto current = read_remote_file(env.session, fstab);
  if (!current) return from_error(current.error());
  auto wanted = merge_fstab(current->content, *fstab_field(path, "path"), *line);
  auto fstab_change = ensure_remote_file(env.session, fstab, wanted, std::nullopt, env.check);
  if (!fstab_change) return from_error(fstab_change.error());
  std::string what = fstab_change->changed ? fstab + " entry" : "";
  std::string diff = fstab_change->diff;
  if (state == "mounted") {
    auto probe = env.session.run(launcher::shell_join({"findmnt", "-rn", "-o", "SOURCE", "--mountpoint", path}) +
                                 " || true");
    if (!probe) return from_error(probe.error());
    std::string mounted = decode_findmnt(probe->out.substr(0, probe->out.find('\n')));
    if (!mounted.empty() && mounted != source)
      return failed(path + " is mounted from " + mounted + ", not " + source + " (unmount it first: umount " + path + ")");
    if (mounted.empty()) {
      what += std::string(what.empty() ? "" : ", ") + "mounted";
      if (!env.check) {
        // mount finds the source and options in fstab by the mount point.
        auto ran = env.session.run(launcher::shell_join({"mkdir", "-p", "--", path}) + " && " +
                                   launcher::shell_join({"mount", "--", path}));
        if (!ran) return from_error(ran.error());
        if (ran->exit_status != 0)
          return failed("mount " + path + ": " + ran->err.substr(0, ran->err.find('\n')));
      }
    }
  }
  if (what.empty()) return outcome(false, path + " from " + source);
  return outcome(true, path + ": " + (env.check ? "would change " : "") + what, diff);
}

TaskResult run_task_kind(TaskKind kind, const nlohmann::json& args, TaskEnv& env) {
  switch (kind) {
    case TaskKind::command: return run_command(args, env, false);
    case TaskKind::shell: return run_command(args, env, true);
    case TaskKind::package: return run_package(args, env);
    case TaskKind::file: return run_file(args, env);
    case TaskKind::copy: return run_copy(args, env);
    case TaskKind::template_file: return run_template(args, env);
    case TaskKind::block: return run_block(args, env);
    case TaskKind::authorized_key: return run_authorized_key(args, env);
    case TaskKind::known_hosts: return run_known_hosts(args, env);
    case TaskKind::mount: return run_mount(args, env);
    case TaskKind::sync: return run_sync(args, env);
  }
  return failed("unknown task kind");
}

const char* status_name(TaskStatus status) {
  switch (status) {
    case TaskStatus::ok: return "ok";
    case TaskStatus::changed: return "changed";
    case TaskStatus::failed: return "failed";
    case TaskStatus::unreachable: return "unreachable";
    case TaskStatus::skipped: return "skipped";
  }
  return "?";
}

}  // namespace xft::playbooks
