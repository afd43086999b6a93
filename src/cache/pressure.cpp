// Pressure sources for the memory-pressure scheduler.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "hearth/cache/scheduler.h"

namespace hearth::cache {
namespace {

PressureReading sample_system() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  uint64_t total_kb = 0, avail_kb = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string name;
    uint64_t v = 0;
    ls >> name >> v;
    if (name == "MemTotal:") total_kb = v;
    if (name == "MemAvailable:") avail_kb = v;
  }
  if (total_kb == 0) return {0, 1};
  if (avail_kb > total_kb) avail_kb = total_kb;
  return {(total_kb - avail_kb) * 1024, total_kb * 1024};
}

// Sums memory.used / memory.total (MiB) over every GPU nvidia-smi reports. A
// host without nvidia-smi (or where it fails) reads as zero pressure.
PressureReading sample_nvidia_smi() {
  FILE* p = ::popen(
      "nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits "
      "2>/dev/null",
      "r");
  if (p == nullptr) return {0, 1};
  uint64_t used = 0, total = 0;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) {
    unsigned long long u = 0, t = 0;
    if (std::sscanf(buf, "%llu, %llu", &u, &t) == 2) {
      used += u << 20;
      total += t << 20;
    }
  }
  int rc = ::pclose(p);
  if (rc != 0 || total == 0) return {0, 1};
  return {used, total};
}

}  // namespace

const char* pressure_source_name(PressureSource s) {
  switch (s) {
    case PressureSource::kNoop: return "noop";
    case PressureSource::kSystem: return "system";
    case PressureSource::kNvidiaSmi: return "nvidia_smi";
    case PressureSource::kCallback: return "callback";
  }
  return "?";
}

std::optional<PressureSource> pressure_source_from_name(const std::string& name) {
  if (name == "noop") return PressureSource::kNoop;
  if (name == "system") return PressureSource::kSystem;
  if (name == "nvidia_smi") return PressureSource::kNvidiaSmi;
  if (name == "callback") return PressureSource::kCallback;
  return std::nullopt;
}

PressureReading sample_pressure(PressureSource source,
                                const std::function<PressureReading()>& callback) {
  switch (source) {
    case PressureSource::kNoop: return {0, 1};
    case PressureSource::kSystem: return sample_system();
    case PressureSource::kNvidiaSmi: return sample_nvidia_smi();
    case PressureSource::kCallback: return callback ? callback() : PressureReading{0, 1};
  }
  return {0, 1};
}

Status validate_scheduler_config(const SchedulerConfig& c) {
  if (!(c.low_watermark > 0.0 && c.low_watermark < c.high_watermark && c.high_watermark <= 1.0)) {
    return InvalidArgument("scheduler: need 0 < low_watermark < high_watermark <= 1 (got " +
                           std::to_string(c.low_watermark) + ", " +
                           std::to_string(c.high_watermark) + ")");
  }
  if (c.interval_ms == 0) return InvalidArgument("scheduler: interval_ms must be > 0");
  if (c.source == PressureSource::kCallback && !c.callback) {
    return InvalidArgument("scheduler: pressure_source callback without a callback");
  }
  if (c.evict_tiers.empty()) return InvalidArgument("scheduler: evict_tiers is empty");
  return OkStatus();
}

const char* outcome_name(ForceCheckResult::Outcome o) {
  switch (o) {
    case ForceCheckResult::Outcome::kEvicted: return "evicted";
    case ForceCheckResult::Outcome::kSkippedBelowWatermark: return "below_watermark";
    case ForceCheckResult::Outcome::kSkippedDisabled: return "disabled";
    case ForceCheckResult::Outcome::kSkippedNothingToEvict: return "nothing_to_evict";
  }
  return "?";
}

}  // namespace hearth::cache
