// RAM-tier slabs: small ones from the heap, large ones huge-page regions (2 MiB
// aligned, so every 2 MiB of the slab can be one huge page).
#include "cache/slab_alloc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace hearth::cache {
namespace {

constexpr size_t kTwoMiB = size_t{2} << 20;

TEST(SlabAlloc, LargeSlabsAreWholeAlignedHugePageRegions) {
  for (size_t n : {size_t{4} << 20, (size_t{9} << 20) + 3}) {
    Slab s = allocate_slab(n);
    ASSERT_NE(s.data, nullptr) << n;
    ASSERT_TRUE(s.owner) << n;
    EXPECT_EQ(s.size, n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data) % kTwoMiB, 0u) << n;
    std::memset(s.data, 0x5A, n);  // every byte is the slab's (ASan/segfault otherwise)
    EXPECT_EQ(s.data[n - 1], 0x5A);
  }
}

TEST(SlabAlloc, SmallSlabsAndEmptyOnesAreUsable) {
  for (size_t n : {size_t{0}, size_t{1}, (size_t{4} << 20) - 1}) {
    Slab s = allocate_slab(n);
    ASSERT_NE(s.data, nullptr) << n;
    EXPECT_EQ(s.size, n);
    if (n > 0) {
      std::memset(s.data, 1, n);
      EXPECT_EQ(s.data[n - 1], 1);
    }
  }
}

TEST(SlabAlloc, TheOwnerKeepsTheMemoryUntilTheLastCopyGoes) {
  Slab s = allocate_slab(size_t{6} << 20);
  ASSERT_NE(s.data, nullptr);
  uint8_t* p = s.data;
  p[0] = 7;
  std::shared_ptr<void> keep = s.owner;
  s = Slab{};
  EXPECT_EQ(keep.use_count(), 1);
  EXPECT_EQ(p[0], 7);  // still mapped (a segfault, or ASan, if it were gone)
}

}  // namespace
}  // namespace hearth::cache
