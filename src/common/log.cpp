#include "hearth/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace hearth::log {
namespace {

Level initial_level() {
  const char* env = std::getenv("HEARTH_LOG");
  if (env == nullptr) return Level::kInfo;
  if (std::strcmp(env, "error") == 0) return Level::kError;
  if (std::strcmp(env, "warn") == 0) return Level::kWarn;
  if (std::strcmp(env, "debug") == 0) return Level::kDebug;
  return Level::kInfo;
}

std::atomic<int>& level_ref() {
  static std::atomic<int> lvl{static_cast<int>(initial_level())};
  return lvl;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kError: return "ERROR";
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kDebug: return "DEBUG";
  }
  return "?";
}

}  // namespace

void set_level(Level level) { level_ref().store(static_cast<int>(level)); }
Level level() { return static_cast<Level>(level_ref().load()); }

void write(Level lvl, std::string_view message) {
  if (static_cast<int>(lvl) > level_ref().load(std::memory_order_relaxed)) return;
  static std::mutex mu;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s %-5s %.*s\n", ts, level_name(lvl), static_cast<int>(message.size()),
               message.data());
}

}  // namespace hearth::log
