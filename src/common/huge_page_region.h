// A private anonymous memory region that asks the kernel for transparent huge pages.
//
// Decode streams the weight matrices and the KV rows once per token. With 4 KiB pages
// that is a TLB miss (a page walk, costlier still under a hypervisor) every 4 KiB, and
// the hardware prefetchers stop at every page boundary; 2 MiB pages avoid both. The
// region is 2 MiB aligned and a whole number of 2 MiB pages, so the kernel can back
// all of it with huge pages when transparent huge pages are enabled ("always" or
// "madvise"); otherwise it is ordinary 4 KiB pages, and still correct.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hearth/status.h"

namespace hearth {

// Owns one mapping; unmapped on destruction. Move-only. Its bytes start zeroed (fresh
// anonymous memory), and pages are committed on first touch.
class HugePageRegion {
 public:
  HugePageRegion() = default;
  ~HugePageRegion();
  HugePageRegion(HugePageRegion&& other) noexcept;
  HugePageRegion& operator=(HugePageRegion&& other) noexcept;
  HugePageRegion(const HugePageRegion&) = delete;
  HugePageRegion& operator=(const HugePageRegion&) = delete;

  // At least `bytes` bytes (rounded up to whole 2 MiB pages). `what` names the use in
  // the error message (e.g. "the weight matrices").
  static Result<HugePageRegion> create(size_t bytes, const char* what);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  uint8_t* data_ = nullptr;  // 2 MiB aligned; the mapping starts here
  size_t size_ = 0;          // the mapping's length
};

}  // namespace hearth
