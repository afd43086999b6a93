// The KV cache's operational counters (hearth::cache::Counter, plus the runtime's
// "runtime_*" admission counters) as Prometheus families: each raw name maps to a
// `_total` counter in base units (the cache's *_ns sums become seconds), several raw
// names sharing one family through a label (hits by kind, saves by reason). The tier
// levels (bytes_*, rows_*) are not counters: /metrics exports them as the gauges
// hearth_cache_tier_bytes / hearth_cache_tier_rows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace hearth::server {

struct CacheCounterMetric {
  std::string family;  // e.g. "hearth_cache_hits_total"
  std::string labels;  // e.g. "kind=\"exact\"" (may be empty)
  double scale = 1;    // multiplies the raw value (1e-9 for nanoseconds)
};

// The family a raw counter name is exported as; nullopt for the tier levels, which are
// exported as gauges instead. A name the table does not know gets a family of its own.
std::optional<CacheCounterMetric> cache_counter_metric(const std::string& raw_name);

// Appends every family (HELP, TYPE, samples) for the service's raw counters.
void render_cache_counters(const std::map<std::string, int64_t>& counters, std::string& out);

}  // namespace hearth::server
