// Internal state of a Cache. Included by the cache sources and by white-box
// tests; not a public API.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "cache/file_tier.h"
#include "cache/meta_index.h"
#include "cache/read_path.h"
#include "cache/remote_sync.h"
#include "cache/remote_tier.h"
#include "cache/writer_pool.h"
#include "hearth/cache/cache.h"

namespace hearth::cache {

struct Cache::Impl {
  explicit Impl(CacheConfig c);
  ~Impl();

  CacheConfig cfg;
  // How large ram_file payloads are copied out (src/cache/read_path.h).
  CopyPathChooser ram_file_copy{cfg.ram_file_read};
  Counters counters;
  MetaIndex meta;
  std::shared_ptr<CacheIo> io;
  std::unique_ptr<FileTier> files[kNumTiers];  // [kRam] stays null
  // Each enabled tier's own writer: the slots its saves (sync and async) hold and the
  // worker threads behind its bounded queue. A slow disk then never holds up, or
  // crowds out, the saves of another tier; null for a disabled tier.
  struct TierWriter {
    TierWriter(uint32_t threads, uint32_t queue_depth)
        : slots(threads), pool(threads, queue_depth) {}
    SaveSlots slots;
    WriterPool pool;
  };
  std::unique_ptr<TierWriter> writers[kNumTiers];
  TierWriter* writer(Tier t) const { return writers[static_cast<int>(t)].get(); }

  // Background sweeper (TTL reaping, degraded-tier rescans) and scheduler.
  std::mutex bg_mu;
  std::condition_variable bg_cv;
  bool bg_stop = false;
  std::thread sweeper;
  std::thread scheduler_thread;

  // Measured write bandwidth of each tier's saves (bytes / second, build + write +
  // publish), an exponentially weighted mean; 0 until the tier's first save.
  mutable std::mutex rate_mu;
  double write_rate[kNumTiers] = {};
  void record_write(Tier tier, uint64_t bytes, uint64_t ns);

  mutable std::mutex sched_mu;
  SchedulerConfig sched;
  SchedulerStatus sched_state;

  // The shared remote tier (null when cfg.remote.url is empty), the rows it is
  // known to hold, and the thread that follows its index (cache_remote.cpp).
  std::unique_ptr<RemoteTier> remote;
  RemoteIndex remote_index;
  std::unique_ptr<RemoteSync> remote_sync;
  Status start_remote();
  // Publishes a row just saved locally (not one pulled from the remote tier).
  void remote_publish(const CacheKey& key, std::span<const uint8_t> prefix,
                      std::span<const uint8_t> payload);
  // Publishes a delta row just saved locally (`prefix` || `delta_payload`, with `crc`
  // its payload CRC32C): as a delta when its parent's row is in Redis (touched) at a
  // depth that keeps the chain within max_delta_depth (the header's depth is then the
  // Redis chain's), else as the whole row (`full_meta`, `full_payload`).
  void remote_publish_delta(const CacheKey& key, const KvcBuildMeta& full_meta,
                            const KvcDelta& local, std::span<const uint8_t> prefix,
                            std::span<const uint8_t> delta_payload, uint32_t crc,
                            std::span<const uint8_t> full_payload);
  // Fetches `key` from the remote tier into the ram tier; null on a miss.
  RowPtr remote_pull(const CacheKey& key);
  // The whole payload of a delta row fetched from Redis (`info`, its own `payload`):
  // walks its chain, each link from the local tiers or Redis (verified), at most
  // kMaxDeltaDepth links. nullopt = a miss: a broken chain (a link missing, corrupt
  // or not continuing into the one above), or Redis unavailable (*unavailable set).
  std::optional<std::vector<uint8_t>> remote_assemble(const KvcInfo& info,
                                                      std::vector<uint8_t> payload,
                                                      bool* unavailable);
  // The whole (assembled) payload of a local row, verified as a lease reads it;
  // nullopt when there is none or it cannot be read (lease.cpp).
  std::optional<std::vector<uint8_t>> local_full_payload(const CacheKey& key);
  // A local radix hit, or a longer one pulled from the remote tier.
  std::optional<PrefixHit> radix_local(const KeyNamespace& ns, std::span<const Token> tokens,
                                       size_t min_tokens);
  void remote_counters(std::vector<std::pair<std::string, uint64_t>>& out) const;

  Status start();
  void stop();

  uint64_t quota(Tier t) const;
  bool enabled(Tier t) const;
  FileTier* file_tier(Tier t) const { return files[static_cast<int>(t)].get(); }

  // `owned`, when given, is the payload's own vector: the RAM tier adopts it
  // instead of copying.
  Result<CacheKey> do_save(Tier tier, const KvcBuildMeta& meta, std::span<const uint8_t> payload,
                           std::vector<uint8_t>* owned = nullptr);
  Status make_room(Tier tier, uint64_t bytes);
  EvictResult evict(uint64_t target, uint32_t tier_mask);
  // Removes the row from the index (even if pinned) and deletes its file.
  void drop_corrupt(const RowPtr& row, const Status& why);
  // Unlinks a file tier's final path for `key` unless a row or a post-link
  // reservation of that tier owns it by now (takes the key's lock).
  void remove_unclaimed(FileTier& ft, const CacheKey& key, const std::string& path);
  // Verifies the file at `path` and registers it as the key's row. The caller
  // holds the key's lock. kAlreadyExists when the key is published or reserved.
  Status adopt_file(FileTier& ft, const CacheKey& key, const std::string& path);
  std::shared_ptr<Row> row_from_scan(Tier tier, const ScannedFile& f);
  // A ram_file row whose payload is at least kMapMinBytes: one worth a mapping, kept
  // (Row::file_map) or made for a read when the copy-path chooser (read_path.h) picks
  // it. Below that size a mapping's own cost (the syscalls, the page-table setup) is
  // not paid back, and pread is used.
  static constexpr uint64_t kMapMinBytes = uint64_t{1} << 20;
  static bool large_ram_file_row(const Row& row) {
    return row.tier == Tier::kRamFile && row.payload_bytes >= kMapMinBytes;
  }
  // Whether a row gets a kept mapping: a large ram_file row, with
  // cfg.keep_ram_file_mappings on and ram_file_read not kPread.
  bool wants_mapping(const Row& row) const;
  // Maps and touches row's file (row.location) and sets its file_map, unless
  // kMaxKeptMappings are kept already or the file cannot be mapped. For the caller that
  // set row.mapping_asked (or owns a row not yet published).
  void keep_mapping(const Row& row);
  // After a read of a row that wants a mapping and has none (one found by a scan): the
  // first such read queues keep_mapping on the ram_file tier's writer.
  void ask_mapping(const RowPtr& row);
  // Each kept mapping is one of the process's memory areas (vm.max_map_count, 65530 by
  // default, bounds them all); past this many, rows are read through pread.
  static constexpr int64_t kMaxKeptMappings = 4096;
  std::shared_ptr<std::atomic<int64_t>> kept_mappings = std::make_shared<std::atomic<int64_t>>(0);
  // A delta row read from a file: finds its parent in the index (same tier, the
  // header's key and token count, the chain's layout and depth) and pins it.
  // false = no such live parent (the row is an orphan and must not be served).
  bool link_parent(Row& row, const KvcInfo& info);
  // insert_available for a row that may hold a parent pin: gives the pin back when
  // the row is refused.
  bool insert_row(const std::shared_ptr<Row>& row);
  // Drops (and unlinks) every delta row whose parent is no longer the index's row for
  // its key, repeatedly, so no orphan stays listed or counted against a quota.
  void drop_orphans();
  // The delta to save for a payload of tokens on `tier`: the longest row of the same
  // namespace and tier whose tokens prefix `m.tokens`, pinned (the caller unpins), and
  // the delta's description. nullopt = save a full row.
  struct DeltaPlan {
    RowPtr parent;
    KvcDelta delta;
  };
  std::optional<DeltaPlan> plan_delta(Tier tier, const KvcBuildMeta& m, uint64_t payload_size);
  Status rescan(Tier tier);
  void sweep();
  ForceCheckResult force_check();
  RowInfo to_info(const Row& r) const;
  void touch(const Row& r);
};

}  // namespace hearth::cache
