// hearth's persistent, multi-tier, token-exact KV cache. Standalone: it stores
// opaque payloads keyed on exact token prefixes and knows nothing about models.
//
//   auto cache = Cache::open(cfg);                 // scans file tiers, starts workers
//   KvcBuildMeta meta{...tokens, ns...};
//   cache->save(Tier::kDisk, meta, payload);       // sync: published when it returns
//   cache->save_async(Tier::kRam, meta, bytes);    // async: may be dropped (counted)
//   if (auto hit = cache->lookup_radix(ns, prompt)) {        // or lookup_longest_prefix
//     auto lease = cache->checkout(hit->row.key);  // pinned: never evicted under us
//     lease->read_payload(dst);                    // verified copy (CRC32C + key replay)
//   }
//
// Reads (lookup_*, checkout) never wait on writers: they load an immutable
// snapshot of the index (see docs/cache-design.md). Writes go through one
// meta-index writer lock. No exception crosses this API.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/kvc.h"
#include "hearth/cache/config.h"
#include "hearth/cache/counters.h"
#include "hearth/cache/key.h"
#include "hearth/cache/scheduler.h"
#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

// One row of the meta index (dump() and lookups return copies).
struct RowInfo {
  CacheKey key{};
  Tier tier = Tier::kRam;
  uint64_t size = 0;  // whole file / slab bytes (what the quota counts)
  uint64_t payload_bytes = 0;
  uint64_t last_used_ns = 0;  // steady clock
  uint32_t refcount = 0;      // active checkouts, plus one per delta child row
  RowStatus status = RowStatus::kAvailable;
  std::array<uint8_t, 48> header{};  // the KVC header bytes as published
  std::string location;              // file path, or "ram"
  uint32_t n_tokens = 0;
  uint32_t hits = 0;  // persisted in the header's hit_count on file tiers
  // The namespace's model fingerprint, from the row's KVC fingerprint TLV (for an
  // in-flight save: from its metadata; zero for a sync save not yet published).
  Digest256 fingerprint{};
  // 0: a full row; else a delta row, this many links above its full row (its size
  // counts only its own positions; a restore reads the whole chain).
  uint32_t delta_depth = 0;
};

struct PrefixHit {
  RowInfo row;
  // How many leading tokens of the prompt the row covers. The row holds
  // row.n_tokens >= n_tokens tokens; when n_tokens < row.n_tokens only the
  // first n_tokens positions of its state may be restored (partial restore).
  size_t n_tokens = 0;
};

struct EvictResult {
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

class Cache;

// A checked-out row: while it lives, the row's refcount is held and eviction
// skips it, and its bytes stay readable (RAM slab pinned, file descriptor open).
// Movable; checkin happens in the destructor. A lease must not outlive the
// Cache that issued it.
class Lease {
 public:
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  const RowInfo& row() const;
  // Parsed header/TLVs (tokens, namespace, extra TLVs such as kTagLogits).
  const KvcInfo& info() const;
  uint64_t payload_size() const;
  // Copies the whole payload into dst (dst.size() must equal payload_size()),
  // verifying CRC32C as it goes. A corrupt row is dropped from the index,
  // counted, and reported as kDataLoss; dst content is then unspecified.
  Status read_payload(std::span<uint8_t> dst);
  // The same into several buffers, filled in order (their sizes must add up to
  // payload_size()): a file row is read straight into its destination, e.g. a
  // sequence's KV runs, with each chunk CRC-checked while still in cache.
  Status read_payload(std::span<const std::span<uint8_t>> dst);
  // Zero-copy read-only view of the payload, verified on first call. RAM: the
  // slab itself. File tiers: the row's kept mapping (resident()), else a read-only
  // mapping made for the lease. A delta row's: assembled once into the lease.
  Result<std::span<const uint8_t>> view();
  // Whether view() costs no copy and no mapping: a full row held in this process's
  // memory, a RAM slab or a ram_file row's kept mapping (its CRC is still checked).
  bool resident() const;

 private:
  friend class Cache;
  struct State;
  explicit Lease(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

class Cache {
 public:
  // Validates cfg, claims tier directories (a missing one is created 0700 and marked; an
  // existing one must be empty or marked; the marker is locked), scans file tiers (removes
  // *.tmp, registers valid rows with their persisted hit counts, deletes
  // invalid files), starts the writer pool, sweeper and pressure scheduler.
  static Result<std::unique_ptr<Cache>> open(CacheConfig cfg);
  // Stops accepting async saves, drains the ones queued (bounded by
  // evict_save_timeout_ms), stops threads.
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // ---- saves ----------------------------------------------------------------
  // Synchronous save through the five-stage publish protocol. Returns the key
  // once published. kAlreadyExists when the key is already published or being
  // saved (counted as duplicate_dropped). Bounded by evict_save_timeout_ms when
  // it must wait for a writer slot.
  Result<CacheKey> save(Tier tier, const KvcBuildMeta& meta, std::span<const uint8_t> payload);
  // Queues a save on the tier's writer and returns at once. false = dropped
  // (queue full, tier disabled, or shutting down): counted as saves_dropped.
  // From the moment it is queued until it publishes or fails the key is in
  // flight: save_pending() says so, lookup_exact_or_wait() waits for it and
  // dump() lists it.
  bool save_async(Tier tier, KvcBuildMeta meta, std::vector<uint8_t> payload);
  // Blocks until every queued async save has finished (tests, shutdown paths).
  void wait_idle();
  // The same, bounded: false when max_ms passed first.
  bool wait_idle_for(uint64_t max_ms);
  // Waits until no async save of namespace `ns` is queued or being written (a
  // model unloading waits for its own rows only); false when max_ms passed first.
  bool wait_namespace_idle(const KeyNamespace& ns, uint64_t max_ms);
  // Whether a save of `key` is queued or being written and not yet published:
  // what lookup_exact_or_wait would wait for. Counts nothing, never blocks.
  bool save_pending(const CacheKey& key) const;
  // Whether a save of `key` now would be dropped as a duplicate (the key is published,
  // or a save of it is in flight); if so it is counted as duplicate_dropped here, so a
  // caller can skip building a payload no tier would keep (an exact hit's finish save
  // repacks the row it restored).
  bool drop_duplicate_save(const CacheKey& key);

  // ---- lookups (lock-free reads of the current index snapshot) ---------------
  enum class HitKind { kExact, kResume };
  // Counts hits_exact / hits_resume or misses.
  std::optional<RowInfo> lookup_exact(const CacheKey& key, HitKind kind = HitKind::kExact);
  // Waits up to max_ms for an in-flight save of `key` (queued or reserved) to
  // publish. Counts hits_resume or misses.
  std::optional<RowInfo> lookup_exact_or_wait(const CacheKey& key, uint64_t max_ms);
  // The reference stride walk: probes the key of tokens[0..n) for n = the
  // largest multiple of stride <= tokens.size(), then n - stride, ... down to
  // min_tokens. 0 = policy's boundary_align_tokens / min_tokens. Also tries the
  // full length first when it is not a multiple of the stride. Counts
  // hits_longest_prefix or misses, longest_prefix_probes, longest_prefix_ns.
  std::optional<PrefixHit> lookup_longest_prefix(const KeyNamespace& ns,
                                                 std::span<const Token> tokens, size_t stride = 0,
                                                 size_t min_tokens = 0);
  // Token-granular longest common prefix over every row of the namespace
  // (radix tree), linear in the prompt. The hit may be a partial row. Only
  // hits of at least min_tokens (0 = 1) count. Counts hits_radix or misses.
  std::optional<PrefixHit> lookup_radix(const KeyNamespace& ns, std::span<const Token> tokens,
                                        size_t min_tokens = 0);
  // Pins a published row for reading. kNotFound when absent (or evicted), and
  // kDataLoss / kUnavailable when its file is unreadable (row dropped).
  Result<Lease> checkout(const CacheKey& key);
  // Convenience: checkout + read_payload into a fresh vector.
  Result<std::vector<uint8_t>> load(const CacheKey& key, KvcInfo* info = nullptr);

  // ---- operator surface -------------------------------------------------------
  // Evicts least-recently-used available rows with refcount 0, from `tiers`
  // (empty = all), until at least target bytes are freed or none remain.
  EvictResult evict_bytes(uint64_t target, std::span<const Tier> tiers = {});
  // Evicts every available, unreferenced row; returns the count.
  uint64_t gc();
  // Published rows, oldest use first, then in-flight saves (status kReserved).
  std::vector<RowInfo> dump() const;
  size_t row_count() const;

  Counters& counters();
  std::vector<std::pair<std::string, uint64_t>> counters_snapshot() const;
  void reset_counters();

  // Tier state. A degraded tier misses and refuses saves until a rescan
  // (triggered by the sweeper, or rescan_tier) succeeds.
  bool tier_enabled(Tier t) const;
  bool tier_degraded(Tier t) const;
  Status rescan_tier(Tier t);
  const CacheConfig& config() const;
  // The tier's measured save bandwidth in bytes per second (payload bytes over the time
  // of build + write + publish, a moving mean over recent saves); 0 before its first save.
  double tier_write_bytes_per_s(Tier t) const;

  // Runs one TTL sweep of stale reservations now (the sweeper thread does this
  // every sweep_interval_ms).
  void sweep_reservations();

  // Memory-pressure scheduler.
  Status scheduler_configure(const SchedulerConfig& cfg);
  void scheduler_enable(bool on);
  ForceCheckResult scheduler_force_check();
  SchedulerStatus scheduler_status() const;

  struct Impl;  // internal; public so src/cache/ helpers can name it

 private:
  // White-box tests reach Impl through this peer, which only test code defines
  // (tests/testing/cache_test_peer.h): the public API carries no test hook.
  friend struct CacheTestPeer;
  explicit Cache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::cache
