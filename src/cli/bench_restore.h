// The restore figures of `hearth bench cold-warm`: the floors a restore is compared
// against (a memcpy of the same bytes, a dd-style O_DIRECT read of the same file), page
// cache control for the disk tier's cold-cache runs, and the cache-level restore of one
// large row (a 16k-token prefix) from each tier.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "hearth/status.h"

namespace hearth::cli {

// One memcpy of `bytes` between two huge-page buffers already faulted in (the kind of
// memory the KV store and the ram tier use): the best of 3, in ms.
Result<double> memcpy_ms(uint64_t bytes);
// `dd if=PATH of=/dev/null bs=4M iflag=direct`, in process: the median of `rounds`, in ms.
Result<double> dd_direct_read_ms(const std::string& path, int rounds);
// posix_fadvise(POSIX_FADV_DONTNEED) on every *.kvc file in `dir` (the rows are
// fdatasync'ed when published, so their pages are clean and dropped).
void drop_page_cache(const std::string& dir);
// Reads every *.kvc file in `dir` once through the page cache (so it is cached).
void warm_page_cache(const std::string& dir);

// A row whose payload is `payload_bytes` (e.g. 16,384 tokens of the model's KV), saved
// to each tier of a fresh cache in `shm_dir` / `disk_dir`, checked out and read into a
// huge-page destination already faulted in (as the engine's KV store is), `rounds`
// times each: per case ("ram", "ram_file", "disk_warm_cache", "disk_cold_cache") the
// median restore_ms, restore_vs_memcpy and gb_s (and memcpy_ms once). "ram_file" is
// timed after the copy-path chooser's probe reads (src/cache/read_path.h);
// "ram_file_mapped" and "ram_file_pread" are each path alone (no kept mapping);
// "ram_file_restarted" the row as a restarted cache finds it, timed after its first read
// (which queues its kept mapping; first_restore_ms that read's time). The cold cases add dd_ms,
// dd_gb_s and vs_dd (the fraction of the dd-style read's speed; dd_error instead where
// the file system refuses O_DIRECT), and
// "disk_cold_cache_buffered" is the cold row read through the page cache (O_DIRECT off).
Result<nlohmann::json> restore_row_figures(uint64_t payload_bytes, const std::string& shm_dir,
                                           const std::string& disk_dir, int rounds);

}  // namespace hearth::cli
