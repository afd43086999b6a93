// dequantize_row against an independent per-element statement of each format:
// for element e of a block, where its bits live and which scale applies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/quant/scales.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::random_blocks;

float h(uint16_t v) {
  return fp16_to_fp32(v);
}
// Float product kept rounded (ggml's C semantics with no contraction).
float mul(float a, float b) {
  return rounded(a * b);
}

// Expected value of element e (0-based within the row) read from raw bytes.
float expected(TensorType t, const uint8_t* row, int64_t e) {
  const BlockGeometry g = block_geometry(t);
  const uint8_t* blk = row + (e / g.block_size) * g.block_bytes;
  const int i = static_cast<int>(e % g.block_size);
  switch (t) {
    case TensorType::kF32: {
      float f;
      std::memcpy(&f, blk, 4);
      return f;
    }
    case TensorType::kF16:
      return h(*reinterpret_cast<const uint16_t*>(blk));
    case TensorType::kBF16:
      return bf16_to_fp32(*reinterpret_cast<const uint16_t*>(blk));
    case TensorType::kQ4_0: {
      const auto& b = *reinterpret_cast<const BlockQ4_0*>(blk);
      const int nib = i < 16 ? (b.qs[i] & 15) : (b.qs[i - 16] >> 4);
      return mul(static_cast<float>(nib - 8), h(b.d));
    }
    case TensorType::kQ4_1: {
      const auto& b = *reinterpret_cast<const BlockQ4_1*>(blk);
      const int nib = i < 16 ? (b.qs[i] & 15) : (b.qs[i - 16] >> 4);
      return mul(static_cast<float>(nib), h(b.d)) + h(b.m);
    }
    case TensorType::kQ5_0:
    case TensorType::kQ5_1: {
      const bool one = t == TensorType::kQ5_1;
      const uint8_t* qh = blk + (one ? 4 : 2);
      const uint8_t* qs = qh + 4;
      const int nib = i < 16 ? (qs[i] & 15) : (qs[i - 16] >> 4);
      const int hi = (qh[i / 8] >> (i % 8)) & 1;
      const int q = nib + 16 * hi;
      const float d = h(*reinterpret_cast<const uint16_t*>(blk));
      if (!one) return mul(static_cast<float>(q - 16), d);
      return mul(static_cast<float>(q), d) + h(*reinterpret_cast<const uint16_t*>(blk + 2));
    }
    case TensorType::kQ8_0: {
      const auto& b = *reinterpret_cast<const BlockQ8_0*>(blk);
      return mul(static_cast<float>(b.qs[i]), h(b.d));
    }
    case TensorType::kQ2_K: {
      const auto& b = *reinterpret_cast<const BlockQ2_K*>(blk);
      const int half = i / 128, r = i % 128;
      const int q = (b.qs[32 * half + r % 32] >> (2 * (r / 32))) & 3;
      const int sb = i / 16;
      const float dl = mul(h(b.d), static_cast<float>(b.scales[sb] & 15));
      const float ml = mul(h(b.dmin), static_cast<float>(b.scales[sb] >> 4));
      return mul(dl, static_cast<float>(q)) - ml;
    }
    case TensorType::kQ3_K: {
      const auto& b = *reinterpret_cast<const BlockQ3_K*>(blk);
      const int half = i / 128, r = i % 128;
      const int lo = (b.qs[32 * half + r % 32] >> (2 * (r / 32))) & 3;
      const int hbit = (b.hmask[r % 32] >> (4 * half + r / 32)) & 1;
      const int q = lo - (hbit ? 0 : 4);
      const int sb = i / 16;
      // Scale sb: 4 low bits from byte sb%8 (low nibble for sb<8), 2 high bits
      // from byte 8 + sb%4 at bit 2*(sb/4).
      const int low4 = sb < 8 ? (b.scales[sb] & 15) : (b.scales[sb - 8] >> 4);
      const int high2 = (b.scales[8 + sb % 4] >> (2 * (sb / 4))) & 3;
      const int sc = (low4 | (high2 << 4)) - 32;
      return mul(mul(h(b.d), static_cast<float>(sc)), static_cast<float>(q));
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {
      const bool five = t == TensorType::kQ5_K;
      const uint16_t* dd = reinterpret_cast<const uint16_t*>(blk);
      const uint8_t* sc12 = blk + 4;
      const uint8_t* qh = blk + 16;
      const uint8_t* qs = five ? blk + 48 : blk + 16;
      const int sb = i / 32;
      const int chunk = i / 64, r = i % 64;
      int q = r < 32 ? (qs[32 * chunk + r] & 15) : (qs[32 * chunk + r - 32] >> 4);
      if (five) q += 16 * ((qh[i % 32] >> sb) & 1);
      int s, m;
      if (sb < 4) {
        s = sc12[sb] & 63;
        m = sc12[sb + 4] & 63;
      } else {
        s = (sc12[sb + 4] & 15) | ((sc12[sb - 4] >> 6) << 4);
        m = (sc12[sb + 4] >> 4) | ((sc12[sb] >> 6) << 4);
      }
      const float d1 = mul(h(dd[0]), static_cast<float>(s));
      const float m1 = mul(h(dd[1]), static_cast<float>(m));
      return mul(d1, static_cast<float>(q)) - m1;
    }
    case TensorType::kQ6_K: {
      const auto& b = *reinterpret_cast<const BlockQ6_K*>(blk);
      const int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
      const uint8_t lbyte = b.ql[64 * half + 32 * (quarter % 2) + l];
      const int low = quarter < 2 ? (lbyte & 15) : (lbyte >> 4);
      const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
      const int q = (low | (high << 4)) - 32;
      return mul(mul(h(b.d), static_cast<float>(b.scales[i / 16])), static_cast<float>(q));
    }
    case TensorType::kQ8_K: {
      const auto& b = *reinterpret_cast<const BlockQ8_K*>(blk);
      return mul(b.d, static_cast<float>(b.qs[i]));
    }
    default:
      return NAN;
  }
}

class DequantizeTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(DequantizeTest, MatchesPerElementFormulaBitExactly) {
  const TensorType t = GetParam();
  const int64_t n = 512;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const auto row = random_blocks(t, n, seed);
    std::vector<float> out(n);
    dequantize_row(t, row.data(), out.data(), n);
    for (int64_t e = 0; e < n; ++e) {
      const float want = expected(t, row.data(), e);
      ASSERT_EQ(bits(out[e]), bits(want)) << quant_type_name(t) << " element " << e << " seed "
                                          << seed << ": got " << out[e] << " want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantizeTest,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                           TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K,
                                           TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                                           TensorType::kQ6_K),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

// A hand-built Q4_0 block with known numbers.
TEST(DequantizeTest, HandBuiltQ4_0Block) {
  BlockQ4_0 b{};
  b.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[32];
  dequantize_row(TensorType::kQ4_0, &b, out, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(out[j + 16], 0.5f * static_cast<float>(7 - j));
  }
}

// A hand-built Q8_K block (activation format).
TEST(DequantizeTest, HandBuiltQ8_KBlock) {
  BlockQ8_K b{};
  b.d = 0.25f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
  std::vector<float> out(256);
  dequantize_row(TensorType::kQ8_K, &b, out.data(), 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(out[j], 0.25f * static_cast<float>(j - 128));
}

}  // namespace
}  // namespace hearth::engine
