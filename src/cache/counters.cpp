#include "hearth/cache/counters.h"

namespace hearth::cache {

const char* counter_name(Counter c) {
  switch (c) {
    case Counter::kHitsExact: return "hits_exact";
    case Counter::kHitsResume: return "hits_resume";
    case Counter::kMisses: return "misses";
    case Counter::kSavesCold: return "saves_cold";
    case Counter::kSavesContinued: return "saves_continued";
    case Counter::kSavesFinish: return "saves_finish";
    case Counter::kSavesEvict: return "saves_evict";
    case Counter::kSavesShutdown: return "saves_shutdown";
    case Counter::kEvictions: return "evictions";
    case Counter::kCorruptFiles: return "corrupt_files";
    case Counter::kPackTotalNs: return "pack_total_ns";
    case Counter::kLoadTotalNs: return "load_total_ns";
    case Counter::kBytesRam: return "bytes_ram";
    case Counter::kBytesRamFile: return "bytes_ram_file";
    case Counter::kBytesDisk: return "bytes_disk";
    case Counter::kDuplicateDropped: return "duplicate_dropped";
    case Counter::kHitsLongestPrefix: return "hits_longest_prefix";
    case Counter::kLongestPrefixProbes: return "longest_prefix_probes";
    case Counter::kLongestPrefixNs: return "longest_prefix_ns";
    case Counter::kSavesDropped: return "saves_dropped";
    case Counter::kRowsRam: return "rows_ram";
    case Counter::kRowsRamFile: return "rows_ram_file";
    case Counter::kRowsDisk: return "rows_disk";
    case Counter::kHitsRadix: return "hits_radix";
    case Counter::kSaveErrors: return "save_errors";
    case Counter::kLoadErrors: return "load_errors";
    case Counter::kTierDegraded: return "tier_degraded";
    case Counter::kOrphansAdopted: return "orphans_adopted";
    case Counter::kOrphansDropped: return "orphans_dropped";
    case Counter::kDeltaSaves: return "delta_saves";
    case Counter::kDeltaBytesSaved: return "delta_bytes_saved";
    case Counter::kDeltaBrokenChains: return "delta_broken_chains";
    case Counter::kDeltaOrphansDropped: return "delta_orphans_dropped";
    case Counter::kCount: break;
  }
  return "?";
}

namespace {
bool is_gauge(Counter c) {
  switch (c) {
    case Counter::kBytesRam:
    case Counter::kBytesRamFile:
    case Counter::kBytesDisk:
    case Counter::kRowsRam:
    case Counter::kRowsRamFile:
    case Counter::kRowsDisk:
      return true;
    default:
      return false;
  }
}
}  // namespace

std::vector<std::pair<std::string, uint64_t>> Counters::snapshot() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  out.reserve(kNumCounters);
  for (int i = 0; i < kNumCounters; ++i) {
    out.emplace_back(counter_name(static_cast<Counter>(i)),
                     slots_[i].load(std::memory_order_relaxed));
  }
  return out;
}

void Counters::reset() {
  for (int i = 0; i < kNumCounters; ++i) {
    if (!is_gauge(static_cast<Counter>(i))) slots_[i].store(0, std::memory_order_relaxed);
  }
}

}  // namespace hearth::cache
