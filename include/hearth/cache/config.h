// Configuration of a Cache instance. validate_cache_config() runs at
// Cache::open(): an invalid configuration is an error at start, never later.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hearth/cache/io.h"
#include "hearth/cache/policy.h"
#include "hearth/cache/scheduler.h"
#include "hearth/status.h"

namespace hearth::cache {

// Upper bound of CacheConfig::max_delta_depth (a restore opens one row per link).
inline constexpr uint32_t kMaxDeltaDepth = 64;
// The remote (Redis) tier, shared by several nodes: see src/cache/remote_tier.h
// and docs/cache.md "Remote tier".
struct RemoteTierConfig {
  std::string url;                    // redis://HOST:PORT[/DB]; empty = tier off
  uint32_t ttl_s = 0;                 // 0 = rows never expire (Redis's LRU may still evict)
  uint64_t chunk_bytes = 1ull << 20;  // bytes per SET: bounds how long one command blocks Redis
  uint32_t timeout_ms = 500;          // connect and per-command timeout
  uint32_t pool_size = 4;             // idle connections kept
  uint32_t backoff_max_ms = 5000;     // longest wait between retries while degraded
  uint32_t index_poll_ms = 200;       // how often the cross-node row index is followed
  std::string key_prefix = "hearth:";
};
// Errors name the field ("remote.chunk_bytes ..."). An empty url is valid (off).
Status validate_remote_tier_config(const RemoteTierConfig& c);

struct CacheConfig {
  // Tiers: ram is always on (quota 0 disables saves to it); a file tier is on
  // when its directory is non-empty. Directories are created 0700.
  uint64_t ram_quota_bytes = 1ull << 30;
  std::string ram_file_dir;  // e.g. default_ram_file_dir(): /dev/shm/hearth-<uid>
  uint64_t ram_file_quota_bytes = 4ull << 30;
  std::string disk_dir;
  uint64_t disk_quota_bytes = 16ull << 30;

  // Each enabled tier has its own writer: `writer_threads` workers (and as many
  // concurrent sync saves); at most `writer_queue_depth` async saves waiting. A
  // save_async beyond that is dropped and counted.
  uint32_t writer_threads = 2;
  uint32_t writer_queue_depth = 4;
  // Sync saves (evict, shutdown) give up after this long.
  uint64_t evict_save_timeout_ms = 30000;

  // Reservations older than this are reaped by the sweeper (two-stage cleanup).
  uint64_t reservation_ttl_ms = 60000;
  uint64_t sweep_interval_ms = 1000;  // 0 = no background sweeper (tests call sweep)

  PolicyConfig policy;
  SchedulerConfig scheduler;

  // Delta rows (docs/cache-design.md): a save whose payload has a layout
  // (KvcBuildMeta::kv_groups) and whose tokens extend a row of the same namespace on
  // the same tier stores only the positions after that parent. A chain is at most
  // this many deltas above its full row; a longer one saves a full row. 0 = off.
  uint32_t max_delta_depth = 0;

  // Verify payload CRC32C on every load (RAM slabs included).
  bool verify_on_load = true;
  // Disk-tier payloads of at least this many bytes whose pages are mostly not in the
  // page cache are read with O_DIRECT in large aligned requests (src/cache/direct_read.h);
  // 0 = always read through the page cache.
  uint64_t direct_read_min_bytes = 8ull << 20;
  // How a ram_file payload of 1 MiB or more is copied out of its tmpfs file: out of a
  // mapping of the file, through pread, or (kAuto) whichever the restores themselves
  // measure as faster on this machine (src/cache/read_path.h). Every path reads the
  // same bytes and checks the same CRC.
  enum class RamFileRead : uint8_t { kAuto, kMapped, kPread };
  RamFileRead ram_file_read = RamFileRead::kAuto;
  // Keep a mapping of each ram_file row of 1 MiB or more (unless ram_file_read is
  // kPread): made and touched once on the tier's writer, when this process saves the
  // row or after the first read of one found by a scan, and kept while the row lives,
  // so that its restores read it as a RAM slab is read (docs/cache-design.md, "Payload
  // API"). Off: every read takes the ram_file_read path.
  bool keep_ram_file_mappings = true;
  // The shared remote tier: local saves are published to it, exact and prefix
  // lookups that miss locally pull its rows into the ram tier.
  RemoteTierConfig remote;
  // I/O layer for the file tiers; null = posix_io().
  std::shared_ptr<CacheIo> io;
};

Status validate_cache_config(const CacheConfig& cfg);
// /dev/shm/hearth-<uid>
std::string default_ram_file_dir();

}  // namespace hearth::cache
