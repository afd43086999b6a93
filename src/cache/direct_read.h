// Cold-cache reads of large disk-tier rows: O_DIRECT, bypassing the page cache.
//
// A buffered read of a file that is not in the page cache goes through the kernel's
// readahead window (a few hundred KiB at a time) and then a second copy out of the
// page cache; a direct read asks the device for large aligned requests and lands the
// bytes in a buffer of ours. A helper thread reads 4 MiB requests into 4 buffers in
// turn, up to 3 ahead of the caller, which copies each into its destination and
// extends the CRC32C over every 256 KiB piece while it is still in cache. When the
// file's pages are already cached a buffered read is a memcpy from RAM and wins, so
// the caller asks cached_fraction() first (mincore of a throwaway mapping).
#pragma once

#include <cstdint>
#include <span>

#include "hearth/cache/io.h"
#include "hearth/status.h"

namespace hearth::cache {

inline constexpr size_t kDirectAlign = 4096;        // offset, length and buffer alignment
inline constexpr size_t kDirectRequest = 4u << 20;  // bytes per read request
inline constexpr size_t kDirectSlots = 4;           // request buffers: reads 3 ahead

// Fraction (0..1) of the pages of bytes [off, off + len) of the file open as `fd`
// (`file_size` bytes) that are in the page cache; 1 when it cannot tell.
double cached_fraction(int fd, uint64_t file_size, uint64_t off, uint64_t len);

// Reads bytes [off, off + the sum of dst's sizes) of the file open as `fd` into dst,
// in order, through a second descriptor of the same file opened with O_DIRECT
// ("/proc/self/fd/<fd>" through `io`, so it is the same inode even if the path was
// replaced). When `crc` is set it is extended over every byte delivered.
// kUnsupported when the file system refuses O_DIRECT or its alignment (dst is then
// partly written and `crc` partly extended: start over, buffered); kIo on a read error; kDataLoss
// when the file ends early.
Status direct_read(CacheIo& io, int fd, uint64_t off, std::span<const std::span<uint8_t>> dst,
                   uint32_t* crc);

}  // namespace hearth::cache
