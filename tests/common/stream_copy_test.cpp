// stream_copy: the same bytes as memcpy at every size and alignment, the streaming
// stores' boundaries (a head up to the destination's first 64-byte line, whole lines in
// blocks of 256 bytes and one by one, a tail) included, and nothing written outside.
#include "common/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace hearth {
namespace {

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

TEST(StreamCopy, CopiesExactlyAtEverySizeAndAlignment) {
  const size_t big = size_t{1} << 20;
  const size_t sizes[] = {0,   1,   63,   64,   65,      127,       255,
                          256, 320, 4096, 8191, big + 1, big + 257, 3 * big + 123};
  const std::vector<uint8_t> src = pattern(3 * big + 1024, 7);
  for (size_t n : sizes) {
    for (size_t src_off : {0, 1, 33}) {
      for (size_t dst_off : {0, 5, 64, 127}) {
        std::vector<uint8_t> dst(n + dst_off + 128, 0xAB);
        if (n % 2 == 0) {
          stream_copy(dst.data() + dst_off, src.data() + src_off, n);
        } else {
          stream_copy_unfenced(dst.data() + dst_off, src.data() + src_off, n);
          stream_fence();
        }
        ASSERT_EQ(std::memcmp(dst.data() + dst_off, src.data() + src_off, n), 0)
            << "n " << n << " src+" << src_off << " dst+" << dst_off;
        for (size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xAB) << "wrote before dst";
        for (size_t i = dst_off + n; i < dst.size(); ++i)
          ASSERT_EQ(dst[i], 0xAB) << "wrote past the end, n " << n << " dst+" << dst_off;
      }
    }
  }
}

}  // namespace
}  // namespace hearth
