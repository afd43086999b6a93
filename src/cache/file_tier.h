// A directory of .kvc files: the ram_file tier (on tmpfs) and the disk tier.
// Implements the file-system half of the publish protocol (write_tmp + fdatasync,
// link with EEXIST adopt-or-replace, directory fsync), start-up scans, reads.
// All I/O goes through CacheIo so tests can inject faults. A read I/O failure marks
// the tier degraded (reads and saves refused); a write-path failure (a full disk)
// refuses saves only, so rows already on disk keep hitting. The owner rescans the
// tier to recover.
//
// The directory is hearth's only when it says so: claim_dir() creates a missing one
// (0700) with a marker file, accepts an existing one only when it is empty or holds
// the marker, never changes its mode, and holds an exclusive lock on the marker for
// the tier's life, so a second process cannot share it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hearth/cache/counters.h"
#include "hearth/cache/io.h"
#include "cache/kvc.h"
#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

struct ScannedFile {
  std::string path;
  uint64_t size = 0;
  KvcInfo info;
};

// What link_publish did.
enum class LinkOutcome { kLinked, kAdoptedExisting, kReplacedExisting };

class FileTier {
 public:
  FileTier(Tier tier, std::string dir, std::shared_ptr<CacheIo> io);

  Tier tier() const { return tier_; }
  const std::string& dir() const { return dir_; }
  CacheIo& io() { return *io_; }
  std::string final_path(const CacheKey& key) const;

  // Name of the marker and lock file inside a tier directory.
  static constexpr const char* kMarkerName = "HEARTH-CACHE";
  ~FileTier();
  // mkdir -p (0700) of a missing directory, the marker check and the lock (see the
  // file comment). Idempotent: later calls only re-create a directory that vanished.
  Status claim_dir();

  // Stage 2: write prefix || payload to a writer-unique temp file next to the
  // final path (O_CREAT|O_EXCL, 0600) and fdatasync it. Returns its path.
  Result<std::string> write_tmp(const CacheKey& key, uint64_t token,
                                std::span<const uint8_t> prefix, std::span<const uint8_t> payload);
  // Stage 4: link(tmp, final). EEXIST: fully validate the existing file (CRC +
  // key replay + size); adopt it if valid, else unlink it and link again. Then
  // fsync the directory and remove tmp.
  Result<LinkOutcome> link_publish(const std::string& tmp, const CacheKey& key,
                                   uint64_t expected_size);
  void remove_quietly(const std::string& path);

  // Header/TLV parse of one file (no payload CRC).
  Result<ScannedFile> read_meta(const std::string& path);
  // Full validation (payload CRC32C + key replay).
  Status verify(const std::string& path, const CacheKey& key);
  // Start-up / recovery scan: removes *.tmp, parses every *.kvc (name must be
  // <hex key>.kvc and match the key replayed from its TLVs), removes invalid
  // files. Error only when the directory cannot be listed. A temp file of this
  // process for which `in_flight(key, token)` holds (under the key's lock) is a
  // save still under way and is kept.
  using InFlight = std::function<bool(const CacheKey& key, uint64_t token)>;
  Result<std::vector<ScannedFile>> scan(uint64_t* removed_tmp = nullptr,
                                        uint64_t* removed_bad = nullptr,
                                        const InFlight& in_flight = {});

  // Serialises everything that creates, judges or unlinks one key's final path
  // in this directory: a writer's check_reservation + link (stages 3-4), the
  // sweeper's handling of an expired post-link reservation, eviction and
  // corrupt-row removal, and a scan's removals. Without it a file judged
  // missing or junk could be a writer's freshly linked row by the time it is
  // unlinked. Striped by key; never hold two at once.
  std::unique_lock<std::mutex> lock_key(const CacheKey& key) {
    return std::unique_lock<std::mutex>(key_locks_[key[0] % kKeyLocks]);
  }
  // Best-effort write of the persisted hit counter (header offset 12) and
  // last_used_time (offset 32). Neither is covered by the payload CRC.
  void write_hits(const std::string& path, uint32_t hits);

  // Reads or writes failing (either).
  bool degraded() const { return reads_degraded() || writes_degraded(); }
  bool reads_degraded() const { return read_degraded_.load(std::memory_order_acquire); }
  bool writes_degraded() const { return write_degraded_.load(std::memory_order_acquire); }
  // Both: the device failed a read (a rescan clears it with false).
  void set_degraded(bool d) {
    const bool was = degraded();
    read_degraded_.store(d, std::memory_order_release);
    write_degraded_.store(d, std::memory_order_release);
    if (d && !was && counters) counters->add(Counter::kTierDegraded);
  }
  // Saves only: a write failed (ENOSPC, EIO on write); published rows stay readable.
  void set_writes_degraded() {
    const bool was = degraded();
    write_degraded_.store(true, std::memory_order_release);
    if (!was && counters) counters->add(Counter::kTierDegraded);
  }
  Counters* counters = nullptr;  // tier_degraded is bumped on each transition

 private:
  Status fsync_dir();
  enum class Path { kRead, kWrite };
  Status io_error(const char* what, const std::string& path, int neg_errno,
                  Path which = Path::kRead);

  Tier tier_;
  std::string dir_;
  std::shared_ptr<CacheIo> io_;
  std::atomic<bool> read_degraded_{false};
  std::atomic<bool> write_degraded_{false};
  int lock_fd_ = -1;  // the marker file, flock(LOCK_EX) while the tier lives
  static constexpr size_t kKeyLocks = 64;
  std::mutex key_locks_[kKeyLocks];
};

// Reads exactly n bytes at off (short reads retried; EOF is an error).
Status read_full(CacheIo& io, int fd, void* dst, size_t n, uint64_t off);

}  // namespace hearth::cache
