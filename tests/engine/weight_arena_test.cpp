// WeightArena: the huge-page region the weight matrices are copied into.
#include "engine/model/weight_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace hearth::engine {
namespace {

constexpr size_t kTwoMiB = size_t{2} << 20;

TEST(WeightArenaTest, ZeroBytesIsAnError) {
  auto a = WeightArena::create(0);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("size must be positive"), std::string::npos);
}

TEST(WeightArenaTest, AlignedWholeHugePagesAndWritable) {
  for (size_t bytes : {size_t{1}, kTwoMiB, kTwoMiB + 1, 5 * kTwoMiB - 3}) {
    auto a = WeightArena::create(bytes);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % kTwoMiB, 0u) << bytes;
    EXPECT_GE(a->size(), bytes);
    EXPECT_EQ(a->size() % kTwoMiB, 0u);
    EXPECT_LT(a->size() - bytes, kTwoMiB);
    std::memset(a->data(), 0x5A, a->size());  // every byte is ours (ASan/segfault otherwise)
    EXPECT_EQ(a->data()[a->size() - 1], 0x5A);
  }
}

TEST(WeightArenaTest, MoveTransfersOwnership) {
  auto a = WeightArena::create(100);
  ASSERT_TRUE(a.ok());
  uint8_t* p = a->data();
  p[0] = 7;
  WeightArena b = std::move(*a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  WeightArena c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[0], 7);
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace hearth::engine
