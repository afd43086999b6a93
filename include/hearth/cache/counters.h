// Always-on operational counters: one relaxed atomic per slot, bumped on hot
// paths (~1 ns), read as a consistent-enough snapshot for metrics exporters.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hearth::cache {

// Names (counter_name) are those of the reference design, plus hearth extras.
enum class Counter : int {
  kHitsExact = 0,
  kHitsResume,
  kMisses,
  kSavesCold,
  kSavesContinued,
  kSavesFinish,
  kSavesEvict,
  kSavesShutdown,
  kEvictions,
  kCorruptFiles,       // rows dropped because a load failed CRC / key replay / parse
  kPackTotalNs,        // time spent in save (build + write + publish)
  kLoadTotalNs,        // time spent in load (read + verify)
  kBytesRam,           // gauges: bytes currently held per tier
  kBytesRamFile,
  kBytesDisk,
  kDuplicateDropped,   // save skipped: the key is already published or reserved
  kHitsLongestPrefix,
  kLongestPrefixProbes,
  kLongestPrefixNs,
  kSavesDropped,       // async save refused under writer-pool back-pressure
  kRowsRam,            // gauges: rows currently held per tier
  kRowsRamFile,
  kRowsDisk,
  kHitsRadix,          // hits from the token-granular radix lookup
  kSaveErrors,         // a save failed (I/O error, bad input); nothing published
  kLoadErrors,         // a load failed and was reported as a miss
  kTierDegraded,       // times a tier was marked degraded
  kOrphansAdopted,     // TTL sweep / EEXIST found a valid published file and kept it
  kOrphansDropped,     // TTL sweep removed a stale reservation (and its bad file)
  kDeltaSaves,         // rows published as deltas of a parent row (KVC version 2)
  kDeltaBytesSaved,    // payload bytes those deltas did not write (the parents hold them)
  kDeltaBrokenChains,  // restores refused: a link of a delta chain failed (a miss)
  kDeltaOrphansDropped,  // delta rows dropped because their parent left the index
  kCount
};
inline constexpr int kNumCounters = static_cast<int>(Counter::kCount);
const char* counter_name(Counter c);  // "hits_exact", "bytes_ram_file", ...

class Counters {
 public:
  void add(Counter c, uint64_t n = 1) {
    slots_[static_cast<int>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  void sub(Counter c, uint64_t n = 1) {
    slots_[static_cast<int>(c)].fetch_sub(n, std::memory_order_relaxed);
  }
  uint64_t get(Counter c) const {
    return slots_[static_cast<int>(c)].load(std::memory_order_relaxed);
  }
  // (name, value) for every counter, in enum order.
  std::vector<std::pair<std::string, uint64_t>> snapshot() const;
  // Zeroes the event counters; the gauges (bytes_*, rows_*) keep their values
  // because they describe current state, not history.
  void reset();

 private:
  std::array<std::atomic<uint64_t>, kNumCounters> slots_{};
};

}  // namespace hearth::cache
