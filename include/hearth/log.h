// Minimal leveled logging to stderr, thread-safe, one line per call.
// Level from HEARTH_LOG (error|warn|info|debug), default info.
#pragma once

#include <string_view>

namespace hearth::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

inline void error(std::string_view m) { write(Level::kError, m); }
inline void warn(std::string_view m) { write(Level::kWarn, m); }
inline void info(std::string_view m) { write(Level::kInfo, m); }
inline void debug(std::string_view m) { write(Level::kDebug, m); }

}  // namespace hearth::log
