// Minimal leveled logging to stderr, thread-safe, one line per call.
// Level from HEARTH_LOG (error|warn|info|debug), default info. Format text (default:
// "TIME LEVEL message k=v ...") or JSON (one object per line: ts, level, msg, fields).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace hearth::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

enum class Format { kText, kJson };

void set_level(Level level);
Level level();
void set_format(Format format);
Format format();
void write(Level level, std::string_view message);

// A record with named fields (a request's id, model, tokens, ...): text appends
// "key=value" pairs (values with spaces or quotes are quoted), JSON adds them as members
// with their types. Keys are plain identifiers chosen by the caller.
using FieldValue = std::variant<int64_t, double, std::string>;
using Fields = std::vector<std::pair<std::string, FieldValue>>;
void write_fields(Level level, std::string_view message, const Fields& fields);

inline void error(std::string_view m) {
  write(Level::kError, m);
}
inline void warn(std::string_view m) {
  write(Level::kWarn, m);
}
inline void info(std::string_view m) {
  write(Level::kInfo, m);
}
inline void debug(std::string_view m) {
  write(Level::kDebug, m);
}

}  // namespace hearth::log
