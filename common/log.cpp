#include "common/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace xft::log {
namespace {

using Json = nlohmann::ordered_json;

// What write()/relay() hand the formatter beside spdlog's message. The logger
// is synchronous, so the formatter runs on the calling thread while these are set.
struct Extra {
  const Fields* fields = nullptr;
  std::optional<std::string_view> relay_tag;  // set: a relayed line, no "xftctl:" prefix
  bool located = false;                       // text without the "xftctl:" prefix
};
thread_local Extra t_extra;

Format g_format = Format::text;
bool g_timestamps = false;

std::string iso8601(std::chrono::system_clock::time_point ts) {
  auto since = ts.time_since_epoch();
  std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since).count();
  long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(since).count() % 1000);
  if (ms < 0) ms += 1000;  // before 1970: still a valid clock reading
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[80];  // room for any int fields, so the compiler can prove no truncation
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  return text;
}

// Errors and notices read as "xftctl: ..."; the rest say their level.
std::string_view text_label(Level level) {
  switch (level) {
    case Level::warn: return "warning: ";
    case Level::debug: return "debug: ";
    case Level::trace: return "trace: ";
    case Level::critical: return "fatal: ";
    default: return "";
  }
}

void add_fields(Json& record, const Fields& fields) {
  for (const auto& f : fields)
    std::visit([&](const auto& v) { record[f.name] = v; }, f.value);
}

std::string dump(const Json& record) {
  // Invalid UTF-8 (a host's raw output) becomes U+FFFD instead of an exception.
  return record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string text_record(std::string_view prefix, std::string_view msg, std::optional<std::string> ts) {
  if (!msg.empty() && msg.back() == '\n') msg.remove_suffix(1);
  std::string out;
  for (size_t start = 0;;) {
    size_t nl = msg.find('\n', start);
    if (ts) out += *ts + " ";
    out += prefix;
    out += msg.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += '\n';
    if (nl == std::string_view::npos) return out;
    start = nl + 1;
  }
}

std::string relay_record(std::string_view tag, std::string_view line, Format format,
                         std::optional<std::chrono::system_clock::time_point> ts, const Fields& fields) {
  if (format == Format::text) return text_record(tag, line, ts ? std::optional(iso8601(*ts)) : std::nullopt);
  // A rank that logs JSON already wrote a whole record: keep it, say whose it is.
  if (!line.empty() && line.front() == '{') {
    Json parsed = Json::parse(line, nullptr, false);
    if (parsed.is_object() && parsed.contains("msg")) {
      add_fields(parsed, fields);
      return dump(parsed);
    }
  }
  return format_record(Level::info, line, format, ts, fields);
}

class Formatter final : public spdlog::formatter {
 public:
  Formatter(Format format, bool timestamps) : format_(format), timestamps_(timestamps) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string_view payload(msg.payload.data(), msg.payload.size());
    // JSON always carries its time; text only when asked.
    std::optional<std::chrono::system_clock::time_point> ts;
    if (timestamps_ || format_ == Format::json) ts = msg.time;
    static const Fields none;
    const Fields& fields = t_extra.fields ? *t_extra.fields : none;
    std::string line;
    if (t_extra.relay_tag)
      line = relay_record(*t_extra.relay_tag, payload, format_, ts, fields);
    else if (t_extra.located && format_ == Format::text)
      line = text_record("", payload, ts ? std::optional(iso8601(*ts)) : std::nullopt);
    else
      line = format_record(msg.level, payload, format_, ts, fields);
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<Formatter>(format_, timestamps_); }

 private:
  Format format_;
  bool timestamps_;
};

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  struct stat st{};
  if (!stream || fstat(STDERR_FILENO, &st) != 0) return false;
  return std::string(stream) == std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

}  // namespace

std::string format_record(Level level, std::string_view msg, Format format,
                          std::optional<std::chrono::system_clock::time_point> ts, const Fields& fields) {
  if (format == Format::text) {
    std::string prefix = "xftctl: ";
    prefix += text_label(level);
    return text_record(prefix, msg, ts ? std::optional(iso8601(*ts)) : std::nullopt);
  }
  Json record;
  if (ts) record["ts"] = iso8601(*ts);
  record["level"] = level_name(level);
  record["msg"] = msg;
  add_fields(record, fields);
  return dump(record);
}

void setup(Level level, Format format, bool timestamps) {
  g_format = format;
  g_timestamps = timestamps;
  auto logger = spdlog::default_logger();
  if (!logger || logger->name() != "xftctl") {
    logger = std::make_shared<spdlog::logger>("xftctl", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    spdlog::set_default_logger(logger);
  }
  logger->set_formatter(std::make_unique<Formatter>(format, timestamps));
  logger->set_level(level);
  // stderr is unbuffered: a record is out before the next printf to stdout.
  logger->flush_on(Level::trace);
}

Level level_for(int verbosity, bool quiet) {
  if (quiet) return Level::err;
  if (verbosity >= 2) return Level::trace;
  if (verbosity == 1) return Level::debug;
  return Level::info;
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::trace: return "trace";
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warning";
    case Level::err: return "error";
    case Level::critical: return "critical";
    default: return "off";
  }
}

Expected<Level> parse_level(std::string_view name) {
  for (Level l : {Level::trace, Level::debug, Level::info, Level::warn, Level::err, Level::critical})
    if (name == level_name(l)) return l;
  if (name == "warn") return Level::warn;
  if (name == "err") return Level::err;
  return make_error("log level '" + std::string(name) +
                    "': expected error, warning, info, debug or trace (XFTCTL_LOG_LEVEL, --log-level)");
}

Expected<Format> parse_format(std::string_view name) {
  if (name == "text") return Format::text;
  if (name == "json") return Format::json;
  return make_error("log format '" + std::string(name) + "': expected text or json (--log-format, XFTCTL_LOG_FORMAT)");
}

Expected<bool> resolve_timestamps(std::string_view setting) {
  if (setting == "on") return true;
  if (setting == "off") return false;
  if (setting != "auto")
    return make_error("log timestamps '" + std::string(setting) +
                      "': expected auto, on or off (--log-timestamps, XFTCTL_LOG_TIMESTAMPS)");
  if (std::getenv("OMPI_COMM_WORLD_RANK")) return false;
  return !isatty(STDERR_FILENO) && !stderr_is_journal();
}

void write(Level level, std::string_view msg, const Fields& fields) {
  t_extra.fields = &fields;
  spdlog::default_logger_raw()->log(level, "{}", msg);
  t_extra.fields = nullptr;
}

void write_located(Level level, std::string_view msg, const Fields& fields) {
  t_extra.located = true;
  write(level, msg, fields);
  t_extra.located = false;
}

void relay(std::string_view tag, std::string_view line, const Fields& fields) {
  t_extra.fields = &fields;
  t_extra.relay_tag = tag;
  // Past every level filter: the rank filtered by the level it was given, and a
  // rank's words are the command's output as much as a log.
  spdlog::default_logger_raw()->log(Level::critical, "{}", line);
  t_extra = {};
}

Format current_format() { return g_format; }
bool current_timestamps() { return g_timestamps; }

}  // namespace xft::log
