// WeightArena: the huge-page copy of the weight matrices is a HugePageRegion
// (src/common/huge_page_region.h), with an error that names what it was for.
#include "engine/model/weight_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace hearth::engine {
namespace {

constexpr size_t kTwoMiB = size_t{2} << 20;

TEST(WeightArenaTest, ZeroBytesIsAnErrorNamingTheWeights) {
  auto a = WeightArena::create(0);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("weight matrices"), std::string::npos);
}

TEST(WeightArenaTest, IsAnAlignedRegionThatMoves) {
  auto a = WeightArena::create(kTwoMiB + 1);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % kTwoMiB, 0u);
  EXPECT_EQ(a->size(), 2 * kTwoMiB);
  EXPECT_EQ(a->interleaved_matrices(), 0);
  uint8_t* p = a->data();
  WeightArena b = std::move(*a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a->data(), nullptr);
}

}  // namespace
}  // namespace hearth::engine
