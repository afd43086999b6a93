#include "cli/bench_restore.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cache/read_path.h"
#include "cli/bench_util.h"
#include "common/huge_page_region.h"
#include "hearth/cache/cache.h"

namespace hearth::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<std::string> kvc_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".kvc") out.push_back(e.path().string());
  return out;
}

}  // namespace

// Restores land in the engine's KV store, which lives on 2 MiB pages
// (HugePageRegion), and the ram tier's slabs are huge-page memory too: the
// yardstick memcpy and the restore destinations here are the same kind of memory. (On
// a host that shadows the guest's page tables, a copy into idle 4 KiB pages ran 5-15x
// slower than into huge pages, which would measure the buffer, not the restore.)
Result<HugePageRegion> touched_region(uint64_t bytes, uint8_t fill) {
  HEARTH_ASSIGN_OR_RETURN(auto r, HugePageRegion::create(bytes, "a benchmark buffer"));
  std::memset(r.data(), fill, r.size());
  return r;
}

Result<double> memcpy_ms(uint64_t bytes) {
  if (bytes == 0) return 0.0;
  HEARTH_ASSIGN_OR_RETURN(auto a, touched_region(bytes, 1));
  HEARTH_ASSIGN_OR_RETURN(auto b, touched_region(bytes, 0));
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, ms_since(t0));
  }
  return best;
}

Result<double> dd_direct_read_ms(const std::string& path, int rounds) {
  constexpr size_t kBlock = 4u << 20;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      static_cast<uint8_t*>(std::aligned_alloc(4096, kBlock)), &std::free);
  if (!buf) return ResourceExhausted("dd: no aligned buffer");
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) return IoError("dd: open " + path + " with O_DIRECT: " + std::strerror(errno));
    const auto t0 = Clock::now();
    ssize_t n = 0;
    while ((n = ::read(fd, buf.get(), kBlock)) > 0) {
    }
    ms.push_back(ms_since(t0));
    const int err = errno;
    ::close(fd);
    if (n < 0) return IoError("dd: read " + path + ": " + std::strerror(err));
  }
  return median(ms);
}

void drop_page_cache(const std::string& dir) {
  for (const std::string& f : kvc_files(dir)) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

void warm_page_cache(const std::string& dir) {
  std::vector<uint8_t> buf(4u << 20);
  for (const std::string& f : kvc_files(dir)) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
}

Result<nlohmann::json> restore_row_figures(uint64_t payload_bytes, const std::string& shm_dir,
                                           const std::string& disk_dir, int rounds) {
  using namespace hearth::cache;
  CacheConfig cfg;
  cfg.ram_quota_bytes = 2 * payload_bytes + (64u << 20);
  cfg.ram_file_dir = shm_dir;
  cfg.ram_file_quota_bytes = cfg.ram_quota_bytes;
  cfg.disk_dir = disk_dir;
  cfg.disk_quota_bytes = cfg.ram_quota_bytes;
  cfg.sweep_interval_ms = 0;
  HEARTH_ASSIGN_OR_RETURN(auto cache, Cache::open(cfg));
  std::vector<uint8_t> payload(payload_bytes);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 131 + 7);
  HEARTH_ASSIGN_OR_RETURN(auto dst_region, touched_region(payload_bytes, 0));
  const std::span<uint8_t> dst(dst_region.data(), payload_bytes);  // like the KV store
  HEARTH_ASSIGN_OR_RETURN(const double copy_ms, memcpy_ms(payload_bytes));
  nlohmann::json out = nlohmann::json::object();
  out["payload_bytes"] = payload_bytes;
  out["memcpy_ms"] = copy_ms;
  // One case: `rounds` checkouts + reads of `key` (page cache dropped first when cold).
  auto measure = [&](Cache& c, const CacheKey& key, const std::string& name, bool cold,
                     int warmup_reads = 0) -> Status {
    if (name == "disk_warm_cache") warm_page_cache(disk_dir);
    for (int i = 0; i < warmup_reads; ++i) {
      HEARTH_ASSIGN_OR_RETURN(Lease lease, c.checkout(key));
      HEARTH_RETURN_IF_ERROR(lease.read_payload(dst));
    }
    std::vector<double> ms;
    for (int r = 0; r < rounds; ++r) {
      if (cold) drop_page_cache(disk_dir);
      const auto t0 = Clock::now();
      HEARTH_ASSIGN_OR_RETURN(Lease lease, c.checkout(key));
      HEARTH_RETURN_IF_ERROR(lease.read_payload(dst));
      ms.push_back(ms_since(t0));
    }
    if (!std::equal(dst.begin(), dst.end(), payload.begin())) {
      return DataLoss("bench: the " + name + " restore read other bytes");
    }
    std::fill(dst.begin(), dst.end(), 0);
    const double restore_ms = median(ms);
    nlohmann::json j = {{"restore_ms", restore_ms},
                        {"restore_vs_memcpy", restore_ms / copy_ms},
                        {"gb_s", static_cast<double>(payload_bytes) / restore_ms / 1e6}};
    const std::vector<std::string> files = kvc_files(disk_dir);
    if (cold && files.size() == 1) {
      drop_page_cache(disk_dir);
      auto dd = dd_direct_read_ms(files[0], rounds);  // tmpfs refuses O_DIRECT
      if (!dd.ok()) {
        j["dd_error"] = dd.status().message();
      } else {
        const double file_bytes = static_cast<double>(std::filesystem::file_size(files[0]));
        j["dd_ms"] = *dd;
        j["dd_gb_s"] = file_bytes / *dd / 1e6;
        j["vs_dd"] = (static_cast<double>(payload_bytes) / restore_ms) / (file_bytes / *dd);
      }
    }
    out[name] = j;
    return OkStatus();
  };
  CacheKey disk_key{};
  CacheKey ram_file_key{};
  for (Tier tier : {Tier::kRam, Tier::kRamFile, Tier::kDisk}) {
    KvcBuildMeta meta;
    meta.ns.fingerprint[0] = static_cast<uint8_t>(tier);  // one namespace per tier
    meta.tokens = {1, 2, 3, static_cast<Token>(tier)};
    meta.context_size = 1;
    HEARTH_ASSIGN_OR_RETURN(CacheKey key, cache->save(tier, meta, payload));
    if (tier == Tier::kRamFile) {
      ram_file_key = key;
      // After the copy-path chooser's probe reads (src/cache/read_path.h): the path a
      // chat's repeated restores take.
      HEARTH_RETURN_IF_ERROR(measure(*cache, key, tier_name(tier), false,
                                     2 * static_cast<int>(CopyPathChooser::kProbeReads)));
      continue;
    }
    if (tier != Tier::kDisk) {
      HEARTH_RETURN_IF_ERROR(measure(*cache, key, tier_name(tier), false));
      continue;
    }
    disk_key = key;
    HEARTH_RETURN_IF_ERROR(measure(*cache, key, "disk_warm_cache", false));
    HEARTH_RETURN_IF_ERROR(measure(*cache, key, "disk_cold_cache", true));
  }
  // The ram_file row through each copy path alone: what the chooser picks between.
  for (auto [mode, name] : {std::pair{CacheConfig::RamFileRead::kMapped, "ram_file_mapped"},
                            std::pair{CacheConfig::RamFileRead::kPread, "ram_file_pread"}}) {
    cache.reset();
    cfg.ram_file_read = mode;
    cfg.keep_ram_file_mappings = false;  // the path itself on every read, not a kept mapping
    HEARTH_ASSIGN_OR_RETURN(cache, Cache::open(cfg));
    HEARTH_RETURN_IF_ERROR(measure(*cache, ram_file_key, name, false));
  }
  cfg.ram_file_read = CacheConfig::RamFileRead::kAuto;
  cfg.keep_ram_file_mappings = true;
  // The ram_file row as a restart finds it (no kept mapping): its first read takes the
  // measured path and queues the mapping on the tier's writer; the reads after it are
  // the kept mapping's.
  cache.reset();
  HEARTH_ASSIGN_OR_RETURN(cache, Cache::open(cfg));
  double first_ms = 0;
  {
    const auto t0 = Clock::now();
    HEARTH_ASSIGN_OR_RETURN(Lease lease, cache->checkout(ram_file_key));
    HEARTH_RETURN_IF_ERROR(lease.read_payload(dst));
    first_ms = ms_since(t0);
  }
  cache->wait_idle();
  HEARTH_RETURN_IF_ERROR(measure(*cache, ram_file_key, "ram_file_restarted", false));
  out["ram_file_restarted"]["first_restore_ms"] = first_ms;
  // The same cold row read through the page cache (O_DIRECT off): what the direct read
  // is chosen over.
  cache.reset();
  cfg.direct_read_min_bytes = 0;
  HEARTH_ASSIGN_OR_RETURN(cache, Cache::open(cfg));
  HEARTH_RETURN_IF_ERROR(measure(*cache, disk_key, "disk_cold_cache_buffered", true));
  return out;
}

}  // namespace hearth::cli
