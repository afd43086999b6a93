// HugePageRegion: the 2 MiB-aligned regions that hold the weight matrices' copies
// (WeightArena), the KV blocks (KvStore) and the ram tier's large slabs.
#include "common/huge_page_region.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace hearth {
namespace {

constexpr size_t kTwoMiB = size_t{2} << 20;

TEST(HugePageRegionTest, ZeroBytesIsAnErrorNamingTheUse) {
  auto r = HugePageRegion::create(0, "the test buffer");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the test buffer: size must be positive"), std::string::npos)
      << r.status().message();
}

TEST(HugePageRegionTest, AnImpossibleSizeIsAnErrorNotACrash) {
  auto r = HugePageRegion::create(SIZE_MAX - 5, "the test buffer");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the test buffer"), std::string::npos);
  auto huge = HugePageRegion::create(size_t{1} << 62, "the test buffer");  // 4 EiB
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("cannot map"), std::string::npos);
}

TEST(HugePageRegionTest, AlignedWholeHugePagesZeroedAndWritable) {
  for (size_t bytes : {size_t{1}, kTwoMiB, kTwoMiB + 1, 5 * kTwoMiB - 3}) {
    auto r = HugePageRegion::create(bytes, "the test buffer");
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->data()) % kTwoMiB, 0u) << bytes;
    EXPECT_GE(r->size(), bytes);
    EXPECT_EQ(r->size() % kTwoMiB, 0u);
    EXPECT_LT(r->size() - bytes, kTwoMiB);
    EXPECT_EQ(r->data()[0], 0);
    EXPECT_EQ(r->data()[r->size() - 1], 0);
    std::memset(r->data(), 0x5A, r->size());  // every byte is ours (ASan/segfault otherwise)
    EXPECT_EQ(r->data()[r->size() - 1], 0x5A);
  }
}

TEST(HugePageRegionTest, MoveTransfersOwnership) {
  auto a = HugePageRegion::create(100, "the test buffer");
  ASSERT_TRUE(a.ok());
  uint8_t* p = a->data();
  p[0] = 7;
  HugePageRegion b = std::move(*a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  HugePageRegion c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[0], 7);
  EXPECT_EQ(b.data(), nullptr);
  c = HugePageRegion();  // unmaps; ASan/LSan would report a leak otherwise
  EXPECT_EQ(c.data(), nullptr);
}

}  // namespace
}  // namespace hearth
