#include "hearth/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>

#include "common/json_text.h"

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
    case Level::kError:
      return "ERROR";
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kDebug:
      return "DEBUG";
  }
  return "?";
}

}  // namespace

void set_level(Level level) {
  level_ref().store(static_cast<int>(level));
}
Level level() {
  return static_cast<Level>(level_ref().load());
}

namespace {
std::atomic<int> g_format{static_cast<int>(Format::kText)};

std::string timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return ts;
}

void emit(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::string text_value(const FieldValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", *d);
    return buf;
  }
  const std::string& s = std::get<std::string>(v);
  if (!s.empty() && s.find_first_of(" \"=\n\t") == std::string::npos) return s;
  return json_text(nlohmann::json(s));  // quoted, escaped
}
}  // namespace

void set_format(Format format) {
  g_format.store(static_cast<int>(format));
}
Format format() {
  return static_cast<Format>(g_format.load());
}

void write(Level lvl, std::string_view message) {
  write_fields(lvl, message, {});
}

void write_fields(Level lvl, std::string_view message, const Fields& fields) {
  if (static_cast<int>(lvl) > level_ref().load(std::memory_order_relaxed)) return;
  if (format() == Format::kJson) {
    nlohmann::json j = {{"ts", timestamp()},
                        {"level", std::string(level_name(lvl))},
                        {"msg", std::string(message)}};
    for (const auto& [key, value] : fields) {
      std::visit([&j, &key = key](const auto& x) { j[key] = x; }, value);
    }
    emit(json_text(j));
    return;
  }
  char head[48];
  std::snprintf(head, sizeof head, "%s %-5s ", timestamp().c_str(), level_name(lvl));
  std::string line = head;
  line.append(message);
  for (const auto& [key, value] : fields) line += " " + key + "=" + text_value(value);
  emit(line);
}

}  // namespace hearth::log
