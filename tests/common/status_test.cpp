#include "hearth/status.h"

#include <gtest/gtest.h>

#include "hearth/engine/fp16.h"
#include "hearth/sha256.h"

namespace hearth {
namespace {

Result<int> half_of(int x) {
  if (x % 2 != 0) return InvalidArgument("x must be even, got " + std::to_string(x));
  return x / 2;
}

Result<int> quarter_of(int x) {
  HEARTH_ASSIGN_OR_RETURN(int h, half_of(x));
  return half_of(h);
}

TEST(Status, ResultCarriesValueOrError) {
  auto ok = quarter_of(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  auto bad = quarter_of(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().to_string(), "invalid_argument: x must be even, got 3");
}

TEST(Sha256, KnownVectorsAndIncremental) {
  EXPECT_EQ(to_hex(Sha256::of("abc", 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a", 1);
  auto mid = h.digest();  // does not end the stream
  EXPECT_EQ(mid, Sha256::of("a", 1));
  h.update("bc", 2);
  EXPECT_EQ(h.digest(), Sha256::of("abc", 3));
  Sha256 copy = h;
  copy.update("d", 1);
  EXPECT_EQ(copy.digest(), Sha256::of("abcd", 4));
  EXPECT_EQ(h.digest(), Sha256::of("abc", 3));
}

TEST(Fp16, RoundTripsEveryHalf) {
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t h = static_cast<uint16_t>(i);
    float f = fp16_to_fp32(h);
    if (f != f) continue;  // NaN payloads need not round-trip exactly
    EXPECT_EQ(fp32_to_fp16(f), h) << "half bits " << i;
  }
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
}

}  // namespace
}  // namespace hearth
