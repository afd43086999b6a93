// Memory-pressure eviction: a poller samples a pressure source every
// interval_ms and, when used/total >= high_watermark, asks the cache to evict
// (high - low) * total bytes (at least min_evict_bytes) from evict_tiers, oldest
// first. Off by default; can be enabled and reconfigured at run time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

struct PressureReading {
  uint64_t used = 0;
  uint64_t total = 1;
};

enum class PressureSource {
  kNoop,       // always {0, 1}
  kSystem,     // /proc/meminfo: {MemTotal - MemAvailable, MemTotal}
  kNvidiaSmi,  // VRAM summed over GPUs; {0, 1} when nvidia-smi is absent or fails
  kCallback,   // SchedulerConfig::callback
};
const char* pressure_source_name(PressureSource s);
std::optional<PressureSource> pressure_source_from_name(const std::string& name);

struct SchedulerConfig {
  bool enabled = false;
  PressureSource source = PressureSource::kNoop;
  std::function<PressureReading()> callback;  // for kCallback; must be cheap
  uint64_t interval_ms = 5000;
  double high_watermark = 0.85;
  double low_watermark = 0.75;
  uint64_t min_evict_bytes = 1048576;
  std::vector<Tier> evict_tiers = {Tier::kRam, Tier::kRamFile};
};

// 0 < low < high <= 1, interval_ms > 0, a callback when source is kCallback,
// evict_tiers non-empty.
Status validate_scheduler_config(const SchedulerConfig& cfg);

PressureReading sample_pressure(PressureSource source,
                                const std::function<PressureReading()>& callback = {});

struct ForceCheckResult {
  enum class Outcome { kEvicted, kSkippedBelowWatermark, kSkippedDisabled, kSkippedNothingToEvict };
  Outcome outcome = Outcome::kSkippedDisabled;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};
const char* outcome_name(ForceCheckResult::Outcome o);

struct SchedulerStatus {
  bool enabled = false;
  PressureSource source = PressureSource::kNoop;
  uint64_t interval_ms = 0;
  double high_watermark = 0;
  double low_watermark = 0;
  uint64_t min_evict_bytes = 0;
  std::vector<Tier> evict_tiers;
  uint64_t last_used = 0;
  uint64_t last_total = 0;
  uint64_t last_evicted_bytes = 0;
  int64_t last_evicted_at_ms = -1;  // unix ms, -1 = never
  int64_t sampled_at_ms = -1;
};

}  // namespace hearth::cache
