// The `remote` cache tier: KVC rows in a shared Redis, so several hearth nodes see
// each other's rows. The bytes stored are exactly a file tier's KVC file (same key,
// same CRC32C), verified on fetch like a disk row: a corrupt or incomplete remote
// row is a miss (counted), never wrong output.
//
// Layout under key_prefix P (hex = the row key's 64 hex chars):
//   P chunk:<hex>:<nonce>:<i>   the row's bytes, chunk_bytes per key (one SET each,
//                               so no single command blocks Redis for long)
//   P row:<hex>                 manifest "KVR1 <nonce> <n_chunks> <bytes>", written
//                               last with SET NX: the single-winner publish. Chunks
//                               are named by the writer's nonce, so a loser's chunks
//                               never mix with the winner's; the loser deletes its own
//                               and adopts the winner's row.
//   P meta                      hash <hex> -> u64 LE row size || KVC prefix (header,
//                               trailer, prompt, TLVs: tokens and namespace): the
//                               full-resync source of the cross-node row index
//   P index                     stream of {key, meta} entries, one per publish
// A delta row (KVC v2, TLV 0x0B names its parent) is stored as its own KVC bytes, as
// on disk: only the positions after its parent. The cache publishes one only while
// the parent's row is in Redis (touch_row), and a fetch of one walks its chain
// (Cache::Impl::remote_pull): a link missing or failing verification makes the whole
// row a miss (counted in chain_broken), never a partial restore.
// Every key gets the TTL when ttl_s > 0. Quota and eviction are Redis's own
// (maxmemory + an LRU policy); hearth counts what it stored.
//
// Corruption: a row that fails verification (CRC32C, key replay, size) or lost a
// chunk is a miss (counted), and is deleted from Redis at once (its manifest only if
// it is still the one read, its chunks, its meta entry) so no node fetches it again;
// the next save of the key publishes a good row. A manifest too damaged to name its
// chunks loses the manifest and meta entry; the orphaned chunks go with the TTL or
// Redis's LRU.
//
// Degradation: any failure (connect, timeout, error reply such as OOM) marks the
// tier degraded; while degraded, calls return at once as misses / Unavailable
// until the backoff (doubling from 100 ms to backoff_max_ms) lets one try through;
// the first success clears it. Nothing here throws or blocks beyond timeout_ms
// per command.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/kvc.h"
#include "cache/redis_client.h"
#include "hearth/cache/config.h"
#include "hearth/cache/key.h"
#include "hearth/status.h"

namespace hearth::cache {

struct RemoteCounters {
  uint64_t publishes = 0;        // rows this node published (won)
  uint64_t publish_lost = 0;     // another node won the key: adopted theirs
  uint64_t bytes_stored = 0;     // bytes of the rows this node published
  uint64_t delta_publishes = 0;  // of publishes: rows stored as deltas of a parent in Redis
  uint64_t chain_broken = 0;     // delta rows fetched whose chain could not be walked: misses
  uint64_t hits = 0;             // fetches that returned a verified row
  uint64_t misses = 0;           // no row under the key
  uint64_t corrupt = 0;          // a row failed verification (or lost a chunk): a miss
  uint64_t corrupt_deleted = 0;  // corrupt rows this node deleted from Redis
  uint64_t errors = 0;           // failed Redis operations (each marks the tier degraded)
  uint64_t skipped = 0;          // calls answered at once while degraded
  uint64_t degraded = 0;         // gauge: 1 while degraded
  uint64_t recoveries = 0;       // degraded -> healthy transitions
};

// One row learned from the shared index.
struct RemoteRowMeta {
  CacheKey key{};
  uint64_t size = 0;  // whole KVC bytes
  KvcInfo info;       // tokens, namespace, header fields (payload not fetched)
};

class RemoteTier {
 public:
  // Never fails because Redis is down: the tier then starts degraded. Fails only
  // on an invalid config.
  static Result<std::unique_ptr<RemoteTier>> open(RemoteTierConfig cfg);
  ~RemoteTier();

  enum class Publish { kWon, kAdopted };
  // `row` is a whole KVC file for `key` (verified here first: nothing unverifiable
  // is uploaded). kAdopted: another writer published the key first.
  Result<Publish> publish(const CacheKey& key, std::span<const uint8_t> row);
  // The same row given as its KVC prefix and its payload (no concatenated copy).
  Result<Publish> publish(const CacheKey& key, std::span<const uint8_t> prefix,
                          std::span<const uint8_t> payload);
  // Why fetch returned what it did.
  enum class Fetch { kHit, kMiss, kCorrupt, kUnavailable };
  // The row's verified bytes, or nullopt (miss, corrupt, or degraded: counted; a
  // corrupt row is deleted from Redis). `outcome` (optional) says which.
  // `manifest` (optional) gets the manifest read (for delete_corrupt).
  std::optional<std::vector<uint8_t>> fetch(const CacheKey& key, Fetch* outcome = nullptr,
                                            std::string* manifest_out = nullptr);
  // Deletes `key`'s row (its manifest, the chunks `manifest` names, its meta entry)
  // if `manifest` is still its manifest, atomically; true if it did (counted in
  // corrupt_deleted). fetch calls it on a row that failed verification, the cache on
  // a delta row whose chain is broken in Redis (a parent gone or bad).
  bool delete_corrupt(const CacheKey& key, const std::string& manifest);
  // Refreshes `key`'s row in Redis (manifest and chunks: TTL back to ttl_s when set,
  // else Redis's LRU clock) and returns its delta depth (0: a full row); nullopt when
  // the row is absent (evicted, expired, lost a chunk key) or Redis is unavailable.
  // A delta is published, and a chain fetched, with its parent touched, so a live
  // chain tends to stay together under Redis's own eviction.
  std::optional<uint32_t> touch_row(const CacheKey& key);
  // A delta row fetched whose chain could not be walked (counted in chain_broken).
  void note_chain_broken() { chain_broken_.fetch_add(1); }
  // Full resync: every row in the meta hash.
  Result<std::vector<RemoteRowMeta>> scan_index();
  // Stream entries after *last_id ("0" = from the start); advances *last_id.
  Result<std::vector<RemoteRowMeta>> read_index(std::string* last_id);

  RemoteCounters counters() const;
  bool degraded() const { return degraded_.load(); }
  const RemoteTierConfig& config() const { return cfg_; }

 private:
  RemoteTier(RemoteTierConfig cfg, RedisUrl url) : cfg_(std::move(cfg)), url_(std::move(url)) {}
  // Runs fn on a pooled connection with the degradation bookkeeping.
  template <typename Fn>
  auto with_conn(Fn&& fn) -> decltype(fn(std::declval<RedisClient&>()));
  Result<std::unique_ptr<RedisClient>> take(bool* skipped);
  void give(std::unique_ptr<RedisClient> c);
  void note_failure();
  void note_success();
  std::string k(std::string_view kind, const std::string& hex) const;
  std::string chunk_key(const std::string& hex, const std::string& id, uint64_t i) const;

  RemoteTierConfig cfg_;
  RedisUrl url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RedisClient>> pool_;
  std::chrono::steady_clock::time_point retry_at_{};
  uint32_t backoff_ms_ = 0;
  std::atomic<bool> degraded_{false};
  std::atomic<uint64_t> publishes_{0}, publish_lost_{0}, bytes_stored_{0}, delta_publishes_{0},
      chain_broken_{0}, hits_{0}, misses_{0}, corrupt_{0}, corrupt_deleted_{0}, errors_{0},
      skipped_{0}, recoveries_{0};
};

}  // namespace hearth::cache
