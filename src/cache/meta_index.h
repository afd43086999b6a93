// The meta index: the only writer of rows, reservations and per-tier byte
// accounting. Readers call snapshot(), an atomic load of an immutable
// Snapshot; writers hold mu_, build a new Snapshot from the current one and
// publish it with an atomic store (RCU-style: old snapshots die with their last
// reader). Reservation state and waiters live under mu_ only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/radix_tree.h"
#include "cache/row.h"
#include "hearth/cache/types.h"

namespace hearth::cache {

struct DigestHash {
  size_t operator()(const Digest256& d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof(h));  // already uniformly distributed
    return h;
  }
};

struct Snapshot {
  std::unordered_map<CacheKey, RowPtr, DigestHash> rows;
  std::unordered_map<Digest256, RadixRoot, DigestHash> radix;  // by namespace id
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

enum class ReserveStage { kPreLink, kPostLink };

struct Reservation {
  uint64_t token = 0;
  Tier tier = Tier::kRam;
  uint64_t bytes = 0;
  ReserveStage stage = ReserveStage::kPreLink;
  std::string path;  // final path once post-link
  std::chrono::steady_clock::time_point expires;
};

// An async save from Cache::save_async until its job ends (published, failed, or
// dropped unrun): lookups see the key in flight from the moment it is queued, before a
// writer picks it up and reserves it.
struct QueuedSave {
  Tier tier = Tier::kRam;
  uint64_t bytes = 0;  // payload bytes
  uint32_t n_tokens = 0;
  Digest256 ns_id{};
  Digest256 fingerprint{};
  uint32_t count = 1;  // the same key queued again before the first job ended
};

// A save not yet published, as dump() lists it: reserved by a writer, queued, or both.
struct InFlightSave {
  CacheKey key{};
  Tier tier = Tier::kRam;
  uint64_t bytes = 0;       // the reservation's, else the queued payload's
  std::string path;         // final path once post-link
  uint32_t n_tokens = 0;    // 0 when unknown (a sync save's reservation)
  Digest256 fingerprint{};  // zero when unknown
};

uint64_t now_ns();

class MetaIndex {
 public:
  MetaIndex();

  SnapshotPtr snapshot() const { return snap_.load(std::memory_order_acquire); }
  RowPtr find(const CacheKey& key) const;

  // ---- writer side (all take mu_) ----
  // kAlreadyExists when published or reserved. Callers make room first.
  Result<uint64_t> reserve(const CacheKey& key, Tier tier, uint64_t bytes, uint64_t ttl_ms);
  // false when the token is no longer live (expired / superseded).
  bool check(const CacheKey& key, uint64_t token);
  bool mark_post_link(const CacheKey& key, uint64_t token, const std::string& path);
  // Reservation -> published row. false when the token is no longer live.
  bool publish(const CacheKey& key, uint64_t token, RowPtr row);
  void cancel(const CacheKey& key, uint64_t token);
  // Inserts a row found by a scan or adopted as an orphan. false if the key is
  // already published or reserved: a key is absent, reserved or published,
  // never two of these, so a live writer always publishes onto an empty slot.
  bool insert_available(RowPtr row);
  // Removes rows for which try_kill succeeded; returns removed rows.
  std::vector<RowPtr> remove_rows(const std::vector<RowPtr>& rows);
  // Drops a row regardless of pins (corrupt file); readers holding it keep
  // their copy alive but can no longer find it. With `expected`, only when that
  // very row is still the key's row (not a newer one published since).
  RowPtr drop(const CacheKey& key, const RowPtr& expected = nullptr);
  // Whether a published row of `tier`, or a post-link reservation in `tier`,
  // owns the key's final path there: such a file must not be unlinked.
  bool claims_path(const CacheKey& key, Tier tier) const;

  // Reservations whose TTL elapsed, removed from the table.
  std::vector<std::pair<CacheKey, Reservation>> take_expired();
  // Blocks until key is published, neither reserved nor queued, or the deadline.
  RowPtr wait_published(const CacheKey& key, std::chrono::steady_clock::time_point deadline);
  bool reserved(const CacheKey& key) const;
  std::vector<std::pair<CacheKey, Reservation>> reservations() const;

  // ---- queued async saves (independent of reservations: a queued key may be
  // absent, reserved or published; the job's own reserve() decides) ----
  void enqueue(const CacheKey& key, const QueuedSave& q);
  // Ends one queued save of key; wakes waiters.
  void dequeue(const CacheKey& key);
  // Not published, and queued or reserved: what a resume lookup waits for.
  bool pending(const CacheKey& key) const;
  // Blocks until no async save (of namespace ns_id, when given) is queued; false
  // when the deadline passed first.
  bool wait_unqueued(const Digest256* ns_id, std::chrono::steady_clock::time_point deadline);
  // Reserved and queued saves, merged by key, read under one lock.
  std::vector<InFlightSave> in_flight() const;

  // Bytes held (published + reserved) per tier.
  uint64_t tier_bytes(Tier t) const { return bytes_[static_cast<int>(t)].load(); }
  uint64_t tier_rows(Tier t) const { return rows_[static_cast<int>(t)].load(); }
  // Evictable rows (pin == 0), oldest first, restricted to tiers in mask.
  std::vector<RowPtr> lru_candidates(uint32_t tier_mask) const;

  // Called with each row entering/leaving the index (counters).
  std::function<void(const Row&, bool added)> on_change;

 private:
  void publish_snapshot(std::shared_ptr<Snapshot> s);
  std::shared_ptr<Snapshot> copy_snapshot() const;
  static void add_row(Snapshot& s, const RowPtr& row);
  static void remove_row(Snapshot& s, const RowPtr& row);
  void account(const Row& row, bool added);

  std::atomic<SnapshotPtr> snap_;
  mutable std::mutex mu_;
  std::condition_variable published_cv_;
  std::unordered_map<CacheKey, Reservation, DigestHash> reservations_;
  std::unordered_map<CacheKey, QueuedSave, DigestHash> queued_;
  uint64_t next_token_ = 1;
  std::atomic<uint64_t> bytes_[kNumTiers] = {};
  std::atomic<uint64_t> rows_[kNumTiers] = {};
};

}  // namespace hearth::cache
