#include "server/cache_metrics.h"

#include <vector>

#include "server/metrics.h"

namespace hearth::server {
namespace {

struct Entry {
  const char* raw;
  const char* family;
  const char* labels;
  double scale;
};

// Raw name -> family. Families are emitted in the order they first appear here.
constexpr Entry kEntries[] = {
    {"hits_exact", "hearth_cache_hits_total", "kind=\"exact\"", 1},
    {"hits_resume", "hearth_cache_hits_total", "kind=\"resume\"", 1},
    {"hits_longest_prefix", "hearth_cache_hits_total", "kind=\"longest_prefix\"", 1},
    {"hits_radix", "hearth_cache_hits_total", "kind=\"radix\"", 1},
    {"misses", "hearth_cache_misses_total", "", 1},
    {"saves_cold", "hearth_cache_saves_total", "reason=\"cold\"", 1},
    {"saves_continued", "hearth_cache_saves_total", "reason=\"continued\"", 1},
    {"saves_finish", "hearth_cache_saves_total", "reason=\"finish\"", 1},
    {"saves_evict", "hearth_cache_saves_total", "reason=\"evict\"", 1},
    {"saves_shutdown", "hearth_cache_saves_total", "reason=\"shutdown\"", 1},
    {"duplicate_dropped", "hearth_cache_saves_skipped_total", "reason=\"duplicate\"", 1},
    {"saves_dropped", "hearth_cache_saves_skipped_total", "reason=\"writer_busy\"", 1},
    {"runtime_saves_skipped_cost", "hearth_cache_saves_skipped_total", "reason=\"cost\"", 1},
    {"save_errors", "hearth_cache_save_errors_total", "", 1},
    {"load_errors", "hearth_cache_load_errors_total", "", 1},
    {"pack_total_ns", "hearth_cache_save_seconds_total", "", 1e-9},
    {"load_total_ns", "hearth_cache_load_seconds_total", "", 1e-9},
    {"evictions", "hearth_cache_evictions_total", "", 1},
    {"corrupt_files", "hearth_cache_corrupt_rows_total", "", 1},
    {"longest_prefix_probes", "hearth_cache_longest_prefix_probes_total", "", 1},
    {"longest_prefix_ns", "hearth_cache_longest_prefix_seconds_total", "", 1e-9},
    {"tier_degraded", "hearth_cache_tier_degraded_total", "", 1},
    {"orphans_adopted", "hearth_cache_orphans_total", "action=\"adopted\"", 1},
    {"orphans_dropped", "hearth_cache_orphans_total", "action=\"dropped\"", 1},
    {"delta_saves", "hearth_cache_delta_saves_total", "", 1},
    {"delta_bytes_saved", "hearth_cache_delta_bytes_saved_total", "", 1},
    {"delta_broken_chains", "hearth_cache_delta_broken_chains_total", "", 1},
    {"delta_orphans_dropped", "hearth_cache_delta_orphans_dropped_total", "", 1},
    {"runtime_misses", "hearth_request_prompt_starts_total", "kind=\"cold\"", 1},
    {"runtime_hits_exact", "hearth_request_prompt_starts_total", "kind=\"exact\"", 1},
    {"runtime_hits_resume", "hearth_request_prompt_starts_total", "kind=\"resume\"", 1},
    {"runtime_hits_longest_prefix", "hearth_request_prompt_starts_total", "kind=\"partial\"", 1},
    {"runtime_hits_sticky", "hearth_request_prompt_starts_total", "kind=\"sticky\"", 1},
    {"runtime_hits_continuation", "hearth_request_prompt_starts_total", "kind=\"continuation\"", 1},
    {"runtime_session_fallbacks", "hearth_session_fallbacks_total", "", 1},
    {"runtime_sessions_released_idle", "hearth_sessions_released_total", "reason=\"idle\"", 1},
    {"runtime_sessions_released_lru", "hearth_sessions_released_total", "reason=\"lru\"", 1},
    {"runtime_sessions_released_explicit", "hearth_sessions_released_total", "reason=\"explicit\"",
     1},
    {"runtime_restore_failures", "hearth_request_restore_failures_total", "", 1},
    {"runtime_save_failures", "hearth_request_save_failures_total", "", 1},
    {"runtime_save_packs", "hearth_request_save_packs_total", "", 1},
    {"runtime_save_pack_ns", "hearth_request_save_pack_seconds_total", "", 1e-9},
    {"runtime_truncate_fallbacks", "hearth_request_truncate_fallbacks_total", "", 1},
    {"remote_publishes", "hearth_cache_remote_publishes_total", "outcome=\"won\"", 1},
    {"remote_publish_lost", "hearth_cache_remote_publishes_total", "outcome=\"adopted\"", 1},
    {"remote_bytes_stored", "hearth_cache_remote_stored_bytes_total", "", 1},
    {"remote_delta_publishes", "hearth_cache_remote_delta_publishes_total", "", 1},
    {"remote_chain_broken", "hearth_cache_remote_broken_chains_total", "", 1},
    {"remote_hits", "hearth_cache_remote_fetches_total", "outcome=\"hit\"", 1},
    {"remote_misses", "hearth_cache_remote_fetches_total", "outcome=\"miss\"", 1},
    {"remote_corrupt", "hearth_cache_remote_fetches_total", "outcome=\"corrupt\"", 1},
    {"remote_corrupt_deleted", "hearth_cache_remote_corrupt_deleted_total", "", 1},
    {"remote_errors", "hearth_cache_remote_failures_total", "kind=\"error\"", 1},
    {"remote_skipped", "hearth_cache_remote_failures_total", "kind=\"skipped_degraded\"", 1},
    {"remote_recoveries", "hearth_cache_remote_recoveries_total", "", 1},
    {"remote_index_learned", "hearth_cache_remote_index_entries_total", "", 1},
};

const char* family_help(const std::string& family) {
  static const std::map<std::string, const char*> help = {
      {"hearth_cache_hits_total", "Cache lookups that found a row, by lookup kind."},
      {"hearth_cache_misses_total", "Cache lookups that found no row."},
      {"hearth_cache_saves_total", "Rows published to the cache, by save reason."},
      {"hearth_cache_saves_skipped_total",
       "Saves not made: the key was already published or reserved (duplicate), the "
       "tier's writer pool was full (writer_busy), or the cost rule declined it (cost)."},
      {"hearth_cache_save_errors_total", "Saves that failed (I/O error, bad input)."},
      {"hearth_cache_load_errors_total", "Row loads that failed and were served as misses."},
      {"hearth_cache_save_seconds_total", "Time spent saving rows (build, write, publish)."},
      {"hearth_cache_load_seconds_total", "Time spent loading rows (read, verify)."},
      {"hearth_cache_evictions_total", "Rows evicted (quota, pressure or admin request)."},
      {"hearth_cache_corrupt_rows_total",
       "Rows dropped because a load failed its CRC, key replay or parse."},
      {"hearth_cache_longest_prefix_probes_total", "Keys probed by longest-prefix lookups."},
      {"hearth_cache_longest_prefix_seconds_total", "Time spent in longest-prefix lookups."},
      {"hearth_cache_tier_degraded_total", "Times a tier was marked degraded after an I/O error."},
      {"hearth_cache_remote_publishes_total",
       "Rows published to the remote (Redis) tier: won, or adopted another node's row."},
      {"hearth_cache_remote_stored_bytes_total", "Bytes of the rows this node published to Redis."},
      {"hearth_cache_remote_delta_publishes_total",
       "Rows this node published to Redis as deltas of a parent row already there."},
      {"hearth_cache_remote_broken_chains_total",
       "Delta rows fetched from Redis whose chain could not be walked (a link missing or "
       "bad): misses, deleted from Redis."},
      {"hearth_cache_remote_fetches_total",
       "Remote-tier fetches: hit (verified row), miss, or corrupt (failed verification or a "
       "lost chunk: served as a miss)."},
      {"hearth_cache_remote_corrupt_deleted_total",
       "Corrupt remote rows this node deleted from Redis (manifest, chunks, index entry), so "
       "no node fetches them again."},
      {"hearth_cache_remote_failures_total",
       "Remote-tier operations that failed (error: the tier is marked degraded) or were "
       "skipped at once while it was degraded."},
      {"hearth_cache_remote_recoveries_total", "Times the remote tier left the degraded state."},
      {"hearth_cache_remote_index_entries_total",
       "Row entries this node read from the shared Redis row index (full resyncs and the "
       "stream): how it learns of other nodes' rows."},
      {"hearth_cache_orphans_total",
       "Files found by the TTL sweep: valid ones adopted, stale reservations dropped."},
      {"hearth_cache_delta_saves_total",
       "Rows published as delta rows (only the positions after a parent row)."},
      {"hearth_cache_delta_bytes_saved_total",
       "Payload bytes delta rows did not write because their parents hold them."},
      {"hearth_cache_delta_broken_chains_total",
       "Restores of delta rows refused (a miss) because a link of the chain failed."},
      {"hearth_cache_delta_orphans_dropped_total",
       "Delta rows dropped because their parent row left the index."},
      {"hearth_request_prompt_starts_total",
       "Admitted generations by how their prompt started: cold, restored from a row (exact, "
       "resume, partial), reusing a sequence's resident cells (sticky) or extending a sticky "
       "session's pinned sequence with no lookup (continuation)."},
      {"hearth_session_fallbacks_total",
       "Requests of an open session whose prompt did not start with the session's tokens "
       "(edited history), admitted with a normal cache lookup instead."},
      {"hearth_sessions_released_total",
       "Sticky sessions released, their cells saved (evict) and freed: idle past "
       "session_idle_ms, least recently used when a request needed their sequence, or "
       "DELETE /hearth/sessions."},
      {"hearth_request_restore_failures_total",
       "Row restores that failed at admission (the prompt was computed instead)."},
      {"hearth_request_save_failures_total", "Saves the scheduler could not start."},
      {"hearth_request_save_packs_total", "Sequences' cells copied out for a save (kv_pack)."},
      {"hearth_request_save_pack_seconds_total",
       "Time the model worker spent copying cells out for saves; no stream of the model "
       "advances meanwhile."},
      {"hearth_request_truncate_fallbacks_total",
       "Prompts computed cold because a sliding-window ring no longer held the prefix a "
       "sticky or restored start would keep."},
  };
  auto it = help.find(family);
  return it == help.end() ? nullptr : it->second;
}

bool is_tier_level(const std::string& raw) {
  return raw.rfind("bytes_", 0) == 0 || raw.rfind("rows_", 0) == 0;
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

}  // namespace

std::optional<CacheCounterMetric> cache_counter_metric(const std::string& raw) {
  if (is_tier_level(raw)) return std::nullopt;
  for (const Entry& e : kEntries)
    if (raw == e.raw) return CacheCounterMetric{e.family, e.labels, e.scale};
  return CacheCounterMetric{"hearth_cache_" + sanitize(raw) + "_total", "", 1};
}

void render_cache_counters(const std::map<std::string, int64_t>& counters, std::string& out) {
  // Families in table order (unknown names after them), samples in table order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<std::string, double>>> samples;
  auto add = [&](const CacheCounterMetric& m, int64_t value) {
    if (!samples.count(m.family)) order.push_back(m.family);
    samples[m.family].emplace_back(m.labels, static_cast<double>(value) * m.scale);
  };
  for (const Entry& e : kEntries) {
    auto it = counters.find(e.raw);
    if (it != counters.end()) add(*cache_counter_metric(e.raw), it->second);
  }
  for (const auto& [raw, value] : counters) {
    bool known = false;
    for (const Entry& e : kEntries) known = known || raw == e.raw;
    if (known) continue;
    if (auto m = cache_counter_metric(raw)) add(*m, value);
  }
  for (const std::string& family : order) {
    const char* help = family_help(family);
    metric_family(out, family, "counter",
                  help ? help : "Cache counter " + family + " (see docs/metrics.md).");
    for (const auto& [labels, value] : samples[family]) {
      out += family + (labels.empty() ? "" : "{" + labels + "}") + " " +
             format_metric_value(value) + "\n";
    }
  }
}

}  // namespace hearth::server
