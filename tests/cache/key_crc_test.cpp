#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cache/crc32c.h"
#include "hearth/cache/key.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

TEST(CacheKey, MatchesManualConcatenation) {
  KeyNamespace ns = testing::test_ns();
  ns.quant = QuantType::kQ4_K_M;
  std::vector<Token> toks = {1, 2, 0x01020304};
  std::vector<uint8_t> buf;
  buf.insert(buf.end(), ns.fingerprint.begin(), ns.fingerprint.end());
  buf.push_back(7);  // q4_k_m
  buf.insert(buf.end(), ns.ctx_params_hash.begin(), ns.ctx_params_hash.end());
  for (Token t : toks) {
    for (int i = 0; i < 4; ++i) buf.push_back(uint8_t(t >> (8 * i)));
  }
  EXPECT_EQ(make_key(ns, toks), Sha256::of(buf.data(), buf.size()));
}

TEST(CacheKey, QuantBytesAreStable) {
  EXPECT_EQ(static_cast<int>(*quant_type_from_name("f32")), 0);
  EXPECT_EQ(static_cast<int>(*quant_type_from_name("f16")), 1);
  EXPECT_EQ(static_cast<int>(*quant_type_from_name("q8_0")), 6);
  EXPECT_EQ(static_cast<int>(*quant_type_from_name("q4_k_m")), 7);
  EXPECT_EQ(static_cast<int>(*quant_type_from_name("q8_k")), 12);
  EXPECT_FALSE(quant_type_from_byte(13).has_value());
  EXPECT_FALSE(quant_type_from_name("q3_k").has_value());
}

RC_GTEST_PROP(CacheKeyProp, StreamDigestEqualsKeyOfEveryPrefix, (std::vector<uint32_t> toks)) {
  KeyNamespace ns = testing::test_ns();
  KeyStream ks(ns);
  RC_ASSERT(ks.key() == make_key(ns, {}));
  for (size_t i = 0; i < toks.size(); ++i) {
    ks.append(toks[i]);
    RC_ASSERT(ks.key() == make_key(ns, std::span<const Token>(toks.data(), i + 1)));
  }
}

RC_GTEST_PROP(CacheKeyProp, DifferentTokensDifferentKeys,
              (std::vector<uint32_t> a, std::vector<uint32_t> b)) {
  RC_PRE(a != b);
  KeyNamespace ns = testing::test_ns();
  RC_ASSERT(make_key(ns, a) != make_key(ns, b));
}

RC_GTEST_PROP(CacheKeyProp, TokenEncodingRoundTrips, (std::vector<uint32_t> toks)) {
  auto enc = encode_tokens(toks);
  RC_ASSERT(enc.size() == toks.size() * 4);
  auto dec = decode_tokens(enc);
  RC_ASSERT(dec.ok());
  RC_ASSERT(*dec == toks);
}

TEST(CacheKey, DecodeRejectsRaggedBytes) {
  std::vector<uint8_t> b(7);
  EXPECT_EQ(decode_tokens(b).status().code(), ErrorCode::kDataLoss);
}

TEST(EffectiveFingerprint, NoAdaptersIsBase) {
  Digest256 base;
  base.fill(3);
  EXPECT_EQ(effective_fingerprint(base, {}), base);
}

TEST(EffectiveFingerprint, FoldsShaAndScaleOrderIndependently) {
  Digest256 base;
  base.fill(3);
  LoraAdapterId a, b;
  a.sha256.fill(1);
  a.scale = 1.0f;
  b.sha256.fill(2);
  b.scale = 0.5f;
  std::vector<LoraAdapterId> ab = {a, b}, ba = {b, a};
  Digest256 e1 = effective_fingerprint(base, ab);
  EXPECT_NE(e1, base);
  EXPECT_EQ(e1, effective_fingerprint(base, ba));
  std::vector<LoraAdapterId> ab2 = {a, b};
  ab2[1].scale = 0.25f;
  EXPECT_NE(e1, effective_fingerprint(base, ab2));
  std::vector<LoraAdapterId> only_a = {a};
  EXPECT_NE(e1, effective_fingerprint(base, only_a));
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
  std::vector<uint8_t> ff(32, 0xFF);
  EXPECT_EQ(crc32c(ff.data(), ff.size()), 0x62A8AB43u);
}

RC_GTEST_PROP(Crc32cProp, HardwareMatchesPortableAndExtends, ()) {
  size_t n = *rc::gen::inRange<size_t>(0, 200000);
  size_t off = *rc::gen::inRange<size_t>(0, 8);
  auto bytes = testing::random_bytes(n + off, *rc::gen::arbitrary<uint32_t>());
  const uint8_t* p = bytes.data() + off;
  uint32_t whole = crc32c(p, n);
  RC_ASSERT(whole == crc32c_portable(0, p, n));
  size_t cut = n ? *rc::gen::inRange<size_t>(0, n + 1) : 0;
  RC_ASSERT(crc32c_extend(crc32c(p, cut), p + cut, n - cut) == whole);
  // Two halves checked apart (two threads' reads) combine into the whole's CRC.
  RC_ASSERT(crc32c_combine(crc32c(p, cut), crc32c(p + cut, n - cut), n - cut) == whole);
}

TEST(Crc32c, CombineOfKnownParts) {
  EXPECT_EQ(crc32c_combine(crc32c("12345", 5), crc32c("6789", 4), 4), 0xE3069283u);
  EXPECT_EQ(crc32c_combine(crc32c("123456789", 9), 0, 0), 0xE3069283u);  // an empty b
  EXPECT_EQ(crc32c_combine(0, crc32c("123456789", 9), 9), 0xE3069283u);  // an empty a
  // A long b: the shift by 8 * len_b bits over many squarings (64 MiB of zeros after a).
  const uint64_t len = uint64_t{64} << 20;
  std::vector<uint8_t> zeros(len, 0);
  EXPECT_EQ(crc32c_combine(crc32c("ab", 2), crc32c(zeros.data(), len), len),
            crc32c_extend(crc32c("ab", 2), zeros.data(), len));
}

// Lengths around the folding path's thresholds (1 KiB to start, 256-byte steps, the
// tail after them), each continued from a nonzero state, against the portable code.
TEST(Crc32c, FoldingThresholdsAndTailsMatchPortable) {
  auto bytes = testing::random_bytes(70000 + 8, 7);  // room for the offsets
  for (size_t n :
       {size_t{255}, size_t{256}, size_t{1023}, size_t{1024}, size_t{1025}, size_t{1279},
        size_t{1280}, size_t{1281}, size_t{1536}, size_t{4096 + 7}, size_t{65536}, size_t{69999}}) {
    for (size_t off : {size_t{0}, size_t{3}}) {
      const uint8_t* p = bytes.data() + off;
      for (uint32_t seed : {0u, 0xDEADBEEFu}) {
        ASSERT_EQ(crc32c_extend(seed, p, n), crc32c_portable(seed, p, n))
            << "n " << n << " off " << off << " seed " << seed << " (" << crc32c_impl_name() << ")";
      }
    }
  }
}

// The fused copy: the destination holds exactly the source bytes (nothing written past
// them) and the CRC is the plain one, at the folding thresholds, offsets and seeds.
TEST(Crc32c, CopyExtendCopiesExactlyAndMatchesExtend) {
  auto bytes = testing::random_bytes(70000 + 8, 11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{1024}, size_t{1025}, size_t{1279},
                   size_t{4096 + 7}, size_t{65536}, size_t{69999}}) {
    for (size_t off : {size_t{0}, size_t{5}}) {
      const uint8_t* p = bytes.data() + off;
      for (uint32_t seed : {0u, 0xDEADBEEFu}) {
        std::vector<uint8_t> dst(n + 64 + 3, 0xA5);
        const uint32_t got = crc32c_copy_extend(seed, dst.data() + 3, p, n);
        ASSERT_EQ(got, crc32c_portable(seed, p, n))
            << "n " << n << " off " << off << " seed " << seed << " (" << crc32c_impl_name() << ")";
        ASSERT_TRUE(std::equal(p, p + n, dst.begin() + 3)) << "n " << n << " off " << off;
        for (size_t i = 0; i < 3; ++i) ASSERT_EQ(dst[i], 0xA5) << "before, n " << n;
        for (size_t i = n + 3; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "after, n " << n;
      }
    }
  }
}

TEST(Crc32c, LargeBufferAcrossBlockBoundaries) {
  auto bytes = testing::random_bytes(3 * 8192 * 5 + 77, 42);
  EXPECT_EQ(crc32c(bytes.data(), bytes.size()), crc32c_portable(0, bytes.data(), bytes.size()));
  std::printf("crc32c implementation: %s\n", crc32c_impl_name());
}

}  // namespace
}  // namespace hearth::cache
