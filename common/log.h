// xftctl's one logging setup: every diagnostic goes through spdlog's default
// logger to stderr (stdout is the command's product and never carries logs).
//
//   text: "xftctl: message", "xftctl: warning: message", "xftctl: debug: message";
//         errors read like coreutils' ("xftctl: h01: unreachable"), the level is
//         in --log-format json and -q keeps only them. With timestamps every line
//         starts with "2026-11-25T00:01:02.345Z " (UTC, milliseconds).
//   json: one object per line: {"ts":...,"level":...,"msg":...} and the record's
//         fields ("host", "rank", ...) for log shippers.
//
// Plain spdlog::info(...) from any library gets the same format once setup()
// ran; xft::log::write adds fields that only the JSON form shows (the text
// message already names its host).
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/expected.h"

namespace xft::log {

enum class Format { text, json };
using Level = spdlog::level::level_enum;

struct Field {
  Field(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  Field(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  Field(std::string n, long long v) : name(std::move(n)), value(v) {}
  Field(std::string n, int v) : name(std::move(n)), value(static_cast<long long>(v)) {}
  std::string name;
  std::variant<std::string, long long> value;
};
using Fields = std::vector<Field>;

// Installs the stderr logger with this format as spdlog's default and sets its level.
void setup(Level level, Format format, bool timestamps);

// The level for -q (errors only), nothing (notices), -v (debug), -vv (trace).
Level level_for(int verbosity, bool quiet);
// "error", "warning", "info", "debug", "trace" (and spdlog's short names) to a level.
Expected<Level> parse_level(std::string_view name);
// The name setup()'s JSON writes and parse_level reads back: "error", "warning", ...
std::string_view level_name(Level level);
Expected<Format> parse_format(std::string_view name);
// --log-timestamps auto|on|off. auto: on when stderr is neither a terminal nor
// the journal (journald stamps its own), and off in a rank under mpirun (the
// control node stamps the lines it relays).
Expected<bool> resolve_timestamps(std::string_view setting);

// One record as setup()'s logger writes it, newline included: text lines get
// the prefix on every line of a multi-line message; JSON escapes it into one line.
std::string format_record(Level level, std::string_view msg, Format format,
                          std::optional<std::chrono::system_clock::time_point> ts, const Fields& fields = {});

// A record with fields (JSON shows them; text shows the message alone).
void write(Level level, std::string_view msg, const Fields& fields = {});
inline void error(std::string_view msg, const Fields& fields = {}) { write(Level::err, msg, fields); }
inline void warn(std::string_view msg, const Fields& fields = {}) { write(Level::warn, msg, fields); }
inline void info(std::string_view msg, const Fields& fields = {}) { write(Level::info, msg, fields); }
inline void debug(std::string_view msg, const Fields& fields = {}) { write(Level::debug, msg, fields); }

// Without the "xftctl: " prefix in text: messages that already start with
// where they are ("inventory.yaml:3:5: ..."), as compilers print them for editors.
void write_located(Level level, std::string_view msg, const Fields& fields = {});

// A line another process wrote (a rank's stderr), relayed at info: in text the
// line as is behind "[rank host] " (and the timestamp when on), in JSON the
// rank's own JSON record with the fields added, or a record around the line.
void relay(std::string_view tag, std::string_view line, const Fields& fields);

// The format and timestamp choice setup() was last given.
Format current_format();
bool current_timestamps();

}  // namespace xft::log
