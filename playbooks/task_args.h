// Reading a task kind's arguments (JSON from the playbook, already rendered)
// and shaping results; shared by the tasks_*.cpp files only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "playbooks/remote_file.h"
#include "playbooks/tasks.h"

namespace xft::playbooks::detail {

inline std::string arg(const nlohmann::json& args, const char* name, const std::string& fallback = "") {
  if (!args.contains(name)) return fallback;
  const auto& value = args[name];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

inline bool arg_bool(const nlohmann::json& args, const char* name, bool fallback = false) {
  auto text = arg(args, name);
  if (text.empty()) return fallback;
  return text == "true" || text == "yes" || text == "True" || text == "1";
}

inline std::vector<std::string> arg_list(const nlohmann::json& value) {
  std::vector<std::string> items;
  if (value.is_array()) {
    for (const auto& item : value) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  } else if (value.is_string()) {
    // "a b, c" and a one-item list mean the same
    std::string word;
    for (char c : value.get<std::string>() + " ") {
      if (c == ' ' || c == ',' || c == '\n') {
        if (!word.empty()) items.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
  }
  return items;
}

inline TaskResult failed(std::string msg) {
  TaskResult result;
  result.status = TaskStatus::failed;
  result.msg = std::move(msg);
  result.data["failed"] = true;
  return result;
}

inline TaskResult from_error(const remote::RemoteError& error) {
  TaskResult result = failed(error.message);
  if (error.kind == remote::Failure::unreachable || error.kind == remote::Failure::timeout)
    result.status = TaskStatus::unreachable;
  return result;
}

inline TaskResult outcome(bool changed, std::string msg, std::string diff = "") {
  TaskResult result;
  result.status = changed ? TaskStatus::changed : TaskStatus::ok;
  result.msg = std::move(msg);
  result.diff = std::move(diff);
  result.data["changed"] = changed;
  return result;
}

// The mode argument: absent → nullopt; malformed → `bad` set.
inline std::optional<mode_t> mode_arg(const nlohmann::json& args, bool& bad) {
  auto text = arg(args, "mode");
  bad = false;
  if (text.empty()) return std::nullopt;
  auto mode = parse_mode(text);
  bad = !mode;
  return mode;
}

// A file-shaped task's result from ensure_remote_file.
inline TaskResult file_outcome(const remote::Remote<FileChange>& change, const std::string& path, bool check) {
  if (!change) return from_error(change.error());
  if (!change->changed) return outcome(false, path);
  return outcome(true, path + ": " + (check ? "would change " : "") + change->what, change->diff);
}

}  // namespace xft::playbooks::detail
