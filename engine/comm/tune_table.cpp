#include "engine/comm/tune_table.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "engine/comm/selection.h"

namespace xft::engine::comm {

namespace {

using json = nlohmann::json;

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// nullopt: no file.
Expected<std::optional<json>> read_table(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<json>();
  auto text = read_file(path);
  if (!text) return text.error();
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("layouts") || !doc["layouts"].is_object())
    return make_error(path + ": not an allreduce tune table (expected {\"version\": 1, \"layouts\": {...}}); "
                      "delete it and run `xftctl bench allreduce --tune` again");
  return std::optional<json>(std::move(doc));
}

}  // namespace

std::string default_tune_path() {
  if (const char* explicit_path = std::getenv("XFTCTL_ALLREDUCE_TUNE"); explicit_path && *explicit_path)
    return explicit_path;
  std::string base;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) base = cache;
  else if (const char* home = std::getenv("HOME"); home && *home) base = std::string(home) + "/.cache";
  else base = "/tmp";
  return base + "/xftctl/allreduce-tune.json";
}

Expected<std::optional<std::string>> load_tuned_selection(const std::string& path,
                                                          const std::string& layout_key, DType dtype) {
  auto table = read_table(path);
  if (!table) return table.error();
  if (!*table) return std::optional<std::string>();
  const json& layouts = (**table)["layouts"];
  auto layout = layouts.find(layout_key);
  if (layout == layouts.end() || !layout->is_object()) return std::optional<std::string>();
  auto entry = layout->find(dtype_name(dtype));
  if (entry == layout->end()) return std::optional<std::string>();
  if (!entry->is_object() || !entry->contains("selection") || !(*entry)["selection"].is_string())
    return make_error(path + ": layouts[\"" + layout_key + "\"]." + dtype_name(dtype) +
                      ".selection is missing or not a string; rerun `xftctl bench allreduce --tune`");
  std::string text = (*entry)["selection"].get<std::string>();
  if (auto parsed = Selection::parse(text); !parsed)
    return make_error(path + ": layouts[\"" + layout_key + "\"]." + dtype_name(dtype) +
                      ".selection: " + parsed.error().message);
  return std::optional<std::string>(text);
}

Expected<void> save_tuned_selection(const std::string& path, const std::string& layout_key,
                                    const std::string& hosts, DType dtype,
                                    const std::string& selection) {
  auto table = read_table(path);
  if (!table) return table.error();
  json doc = *table ? **table : json{{"version", 1}, {"layouts", json::object()}};
  json& layout = doc["layouts"][layout_key];
  if (!layout.is_object()) layout = json::object();
  layout["hosts"] = hosts;
  layout[dtype_name(dtype)] = {{"selection", selection}, {"measured_at", utc_now()}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return make_error("cannot create the directory of " + path + ": " + ec.message());
  return write_file_atomic(path, doc.dump(2) + "\n", 0644);
}

}  // namespace xft::engine::comm
