// Which way of copying a large ram_file payload out of its tmpfs file is faster on
// this machine, learned from the restores themselves.
//
// Both ways read the same bytes and check the same CRC; only their speed differs, and
// it differs by host in both directions. On a KVM guest (2-core Intel VM) a
// MAP_POPULATE mapping copied at memcpy speed and pread at about half of it. On a
// guest whose page tables the hypervisor shadows (the 2-core AMD EPYC VM, a PVM
// guest), every 4 KiB page a user mapping touches first costs a trip to the
// hypervisor: the same 373 MB copied out of a mapping in ~165 ms (map, copy, unmap)
// and through pread, which the kernel serves from its own huge-page direct map, in
// ~40 ms. No fixed choice is right for both, so the cache measures.
//
// Policy: each path's cost is an exponentially weighted mean of nanoseconds per byte
// over the reads that took it. The first kProbeReads large reads of each path measure
// it (pread first, the path whose worst case is bounded); after that a read takes the
// cheaper path, and every kExploreEvery-th read the other one, so a change of host or
// load is noticed.
#pragma once

#include <cstdint>
#include <mutex>

#include "hearth/cache/config.h"

namespace hearth::cache {

enum class CopyPath : uint8_t { kMapped = 0, kPread = 1 };

class CopyPathChooser {
 public:
  static constexpr uint32_t kProbeReads = 2;
  static constexpr uint64_t kExploreEvery = 32;

  explicit CopyPathChooser(CacheConfig::RamFileRead mode) : mode_(mode) {}

  // The path of the next large read.
  CopyPath choose();
  // A read of `bytes` by `path` took `ns` (measured from before any mapping to the
  // end of the copy and CRC, unmapping included).
  void record(CopyPath path, uint64_t bytes, uint64_t ns);
  // The path's mean cost in ns per byte; 0 while it has not been measured.
  double ns_per_byte(CopyPath path) const;

 private:
  static constexpr double kWeight = 0.25;  // of the newest read in the mean

  const CacheConfig::RamFileRead mode_;
  mutable std::mutex mu_;
  double cost_[2] = {0, 0};
  uint32_t samples_[2] = {0, 0};
  uint64_t decisions_ = 0;  // choices made after probing
};

}  // namespace hearth::cache
