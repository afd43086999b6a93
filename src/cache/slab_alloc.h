// Memory for RAM-tier payload slabs. Large slabs are HugePageRegions (2 MiB-aligned
// anonymous mappings advised for transparent huge pages, src/common/huge_page_region.h):
// a fresh 64 MiB slab then takes 32 page faults instead of 16384, which on virtual
// machines (where each fault is expensive) is the difference between tens of
// milliseconds and seconds, and a restore's copy out of it walks no 4 KiB pages. Small
// slabs use the ordinary heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hearth::cache {

struct Slab {
  std::shared_ptr<void> owner;  // frees the memory when the last user lets go
  uint8_t* data = nullptr;
  size_t size = 0;
};

// nullptr data (and an empty owner) when the allocation fails.
Slab allocate_slab(size_t n);

}  // namespace hearth::cache
