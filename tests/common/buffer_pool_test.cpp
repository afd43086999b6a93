// BufferPool: a released buffer is served again (its memory, not a new allocation) to
// the next take() it can hold, best fit first; small buffers are not kept; the idle
// bytes stay within the bound, the oldest dropped first.
#include "common/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hearth {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(BufferPool, ServesAReleasedBufferToTheNextTakeItHolds) {
  BufferPool pool(64 * kMiB);
  std::vector<uint8_t> a = pool.take(4 * kMiB);
  ASSERT_EQ(a.size(), 4 * kMiB);
  EXPECT_GE(a.capacity(), 4 * kMiB);
  EXPECT_LE(a.capacity(), 5 * kMiB);  // headroom at most a quarter
  const uint8_t* memory = a.data();
  pool.give(std::move(a));
  EXPECT_EQ(pool.idle_buffers(), 1u);
  // A slightly shorter and a slightly longer row (within the headroom) reuse it.
  std::vector<uint8_t> b = pool.take(3 * kMiB);
  EXPECT_EQ(b.data(), memory);
  EXPECT_EQ(b.size(), 3 * kMiB);
  EXPECT_EQ(pool.idle_buffers(), 0u);
  const size_t cap = b.capacity();
  pool.give(std::move(b));
  std::vector<uint8_t> c = pool.take(cap);
  EXPECT_EQ(c.data(), memory);
  EXPECT_EQ(c.size(), cap);
  // Nothing idle: a new allocation.
  std::vector<uint8_t> d = pool.take(4 * kMiB);
  EXPECT_NE(d.data(), memory);
  EXPECT_EQ(pool.reused(), 2u);
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(BufferPool, TakesTheSmallestIdleBufferThatHoldsTheRequest) {
  BufferPool pool(256 * kMiB);
  std::vector<uint8_t> big = pool.take(32 * kMiB), mid = pool.take(8 * kMiB),
                       small = pool.take(2 * kMiB);
  const uint8_t* mid_memory = mid.data();
  pool.give(std::move(big));
  pool.give(std::move(mid));
  pool.give(std::move(small));
  std::vector<uint8_t> got = pool.take(5 * kMiB);
  EXPECT_EQ(got.data(), mid_memory);
  // Larger than every idle buffer: none of them is touched.
  std::vector<uint8_t> huge = pool.take(64 * kMiB);
  EXPECT_EQ(pool.idle_buffers(), 2u);
  EXPECT_EQ(huge.size(), 64 * kMiB);
}

TEST(BufferPool, KeepsNoSmallBuffersAndStaysWithinItsBound) {
  BufferPool pool(10 * kMiB);
  pool.give(std::vector<uint8_t>(BufferPool::kMinPooledBytes - 1));
  EXPECT_EQ(pool.idle_buffers(), 0u);
  pool.give(std::vector<uint8_t>(11 * kMiB));  // larger than the whole bound
  EXPECT_EQ(pool.idle_buffers(), 0u);
  std::vector<uint8_t> first(4 * kMiB), second(4 * kMiB), third(4 * kMiB);
  const uint8_t* second_memory = second.data();
  pool.give(std::move(first));
  pool.give(std::move(second));
  EXPECT_EQ(pool.idle_bytes(), 8 * kMiB);
  pool.give(std::move(third));  // 12 MiB > 10: the oldest (first) goes
  EXPECT_EQ(pool.idle_buffers(), 2u);
  EXPECT_LE(pool.idle_bytes(), 10 * kMiB);
  std::vector<uint8_t> again = pool.take(4 * kMiB);
  EXPECT_EQ(again.data(), second_memory);
}

}  // namespace
}  // namespace hearth
