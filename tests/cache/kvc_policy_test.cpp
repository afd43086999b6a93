#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>

#include "cache/crc32c.h"
#include "cache/kvc.h"
#include "hearth/cache/policy.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

std::vector<uint8_t> build_file(const KvcBuildMeta& m, const std::vector<uint8_t>& payload) {
  auto prefix = kvc_build_prefix(m, payload);
  EXPECT_TRUE(prefix.ok()) << prefix.status().to_string();
  std::vector<uint8_t> f = *prefix;
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

uint32_t u32_at(const std::vector<uint8_t>& b, size_t off) {
  return b[off] | b[off + 1] << 8 | b[off + 2] << 16 | uint32_t(b[off + 3]) << 24;
}
uint64_t u64_at(const std::vector<uint8_t>& b, size_t off) {
  return u32_at(b, off) | uint64_t(u32_at(b, off + 4)) << 32;
}

TEST(Kvc, HeaderAndTrailerLayout) {
  auto m = testing::make_meta(testing::seq_tokens(5), testing::test_ns(), SaveReason::kFinish);
  m.quant_bits = 4;
  m.hit_count = 9;
  m.context_size = 2048;
  m.creation_time = 111;
  m.last_used_time = 222;
  std::vector<uint8_t> payload = {'h', 'i'};
  auto f = build_file(m, payload);
  EXPECT_EQ(std::memcmp(f.data(), "KVC", 3), 0);
  EXPECT_EQ(f[3], 1);   // version
  EXPECT_EQ(f[4], 4);   // quant_bits
  EXPECT_EQ(f[5], 5);   // finish
  EXPECT_EQ(f[6], kKvcFlagMetaCrc);
  EXPECT_EQ(f[7], 0);
  EXPECT_EQ(u32_at(f, 8), 5u);     // cached_token_count
  EXPECT_EQ(u32_at(f, 12), 9u);    // hit_count
  EXPECT_EQ(u32_at(f, 16), 2048u); // context_size
  EXPECT_EQ(u32_at(f, 20), 0u);
  EXPECT_EQ(u64_at(f, 24), 111u);
  EXPECT_EQ(u64_at(f, 32), 222u);
  EXPECT_EQ(u64_at(f, 40), 2u);    // payload_byte_count
  uint64_t po = u64_at(f, 48);
  EXPECT_EQ(po, f.size() - 2);
  EXPECT_EQ(u64_at(f, 56), 2u);
  EXPECT_EQ(u32_at(f, 64), crc32c(payload.data(), 2));
  EXPECT_EQ(u32_at(f, 68), kvc_meta_crc(std::span(f).first(po)));
  EXPECT_NE(u32_at(f, 68), 0u);
  EXPECT_EQ(u32_at(f, 72), 5u);    // prompt length ("hello")
  EXPECT_EQ(std::memcmp(f.data() + 76, "hello", 5), 0);
  // TLV section: first record is the fingerprint.
  EXPECT_EQ(f[85], kTagFingerprint);
  EXPECT_EQ(u32_at(f, 86), 32u);
}

TEST(Kvc, RoundTripWithExtraTlv) {
  auto m = testing::make_meta(testing::seq_tokens(300));
  m.extra_tlvs.push_back({kTagLogits, {1, 2, 3, 4}});
  m.extra_tlvs.push_back({0x7F, {9}});
  auto payload = testing::random_bytes(1000, 1);
  auto f = build_file(m, payload);
  CacheKey key = make_key(m.ns, m.tokens);
  auto info = kvc_parse(f, key);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->tokens, m.tokens);
  EXPECT_EQ(info->ns, m.ns);
  EXPECT_EQ(info->hostname, "test");
  EXPECT_EQ(info->prompt_text, "hello");
  ASSERT_NE(info->find_tlv(kTagLogits), nullptr);
  EXPECT_EQ(info->find_tlv(kTagLogits)->value, (std::vector<uint8_t>{1, 2, 3, 4}));
  ASSERT_NE(info->find_tlv(0x7F), nullptr);
  EXPECT_EQ(info->payload_length, 1000u);
}

TEST(Kvc, ReservedTagsRefusedAsExtras) {
  auto m = testing::make_meta(testing::seq_tokens(3));
  m.extra_tlvs.push_back({kTagTokenIds, {0, 0, 0, 0}});
  std::vector<uint8_t> p;
  EXPECT_EQ(kvc_build_prefix(m, p).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Kvc, DetectsCorruption) {
  auto m = testing::make_meta(testing::seq_tokens(10));
  auto payload = testing::random_bytes(512, 2);
  auto f = build_file(m, payload);
  CacheKey key = make_key(m.ns, m.tokens);
  ASSERT_TRUE(kvc_parse(f, key).ok());
  // Payload bit flip: meta parse passes, full parse fails.
  auto flipped = f;
  flipped[flipped.size() - 10] ^= 0x10;
  EXPECT_TRUE(kvc_parse_meta(flipped).ok());
  EXPECT_EQ(kvc_parse(flipped, key).status().code(), ErrorCode::kDataLoss);
  // Truncation and trailing bytes.
  auto trunc = f;
  trunc.pop_back();
  EXPECT_FALSE(kvc_parse_meta(trunc).ok());
  auto longer = f;
  longer.push_back(0);
  EXPECT_FALSE(kvc_parse_meta(longer).ok());
  // Key replay against a different expected key.
  CacheKey other = key;
  other[0] ^= 1;
  EXPECT_EQ(kvc_parse(f, other).status().code(), ErrorCode::kDataLoss);
  // Bad magic / version.
  auto bad = f;
  bad[0] = 'X';
  EXPECT_FALSE(kvc_parse_meta(bad).ok());
  bad = f;
  bad[3] = 2;
  EXPECT_FALSE(kvc_parse_meta(bad).ok());
}

// Every byte before the payload is covered by meta_crc32c except the fields a reader
// rewrites in place: damage anywhere else is refused by the metadata parse itself,
// before anything it describes (tokens, logits, lengths) can be used.
TEST(Kvc, MetadataChecksumCoversEveryByteButTheInPlaceFields) {
  auto m = testing::make_meta(testing::seq_tokens(7));
  m.extra_tlvs.push_back({kTagLogits, {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}});
  const std::vector<uint8_t> payload = testing::random_bytes(64, 3);
  const std::vector<uint8_t> f = build_file(m, payload);
  const CacheKey key = make_key(m.ns, m.tokens);
  const uint64_t po = u64_at(f, 48);
  auto in_place = [](size_t at) {
    return (at >= kKvcHitCountOffset && at < kKvcHitCountOffset + 4) ||
           (at >= kKvcLastUsedOffset && at < kKvcLastUsedOffset + 8);
  };
  for (size_t at = 0; at < po; ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      auto d = f;
      d[at] ^= mask;
      auto info = kvc_parse(d, key);
      if (in_place(at)) {
        EXPECT_TRUE(info.ok()) << "offset " << at;
      } else {
        EXPECT_EQ(info.status().code(), ErrorCode::kDataLoss) << "offset " << at;
        EXPECT_FALSE(kvc_parse_meta(d).ok()) << "offset " << at;
      }
    }
  }
  // A row written without the checksum (flags 0, as hearth 0.1 wrote) is refused.
  auto old = f;
  old[6] = 0;
  EXPECT_EQ(kvc_parse_meta(old).status().code(), ErrorCode::kDataLoss);
}

RC_GTEST_PROP(KvcProp, RoundTripsAndRejectsAnyPrefixTruncation, ()) {
  auto toks = *rc::gen::container<std::vector<uint32_t>>(*rc::gen::inRange<size_t>(1, 64),
                                                         rc::gen::arbitrary<uint32_t>());
  auto payload = *rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>());
  auto m = testing::make_meta(toks);
  m.prompt_text = *rc::gen::arbitrary<std::string>();
  m.ns.quant = static_cast<QuantType>(*rc::gen::inRange<int>(0, 13));
  m.save_reason = static_cast<SaveReason>(*rc::gen::inRange<int>(0, 6));
  auto prefix = kvc_build_prefix(m, payload);
  RC_ASSERT(prefix.ok());
  std::vector<uint8_t> f = *prefix;
  f.insert(f.end(), payload.begin(), payload.end());
  auto info = kvc_parse(f, make_key(m.ns, m.tokens));
  RC_ASSERT(info.ok());
  RC_ASSERT(info->tokens == toks);
  RC_ASSERT(info->save_reason == m.save_reason);
  RC_ASSERT(info->prompt_text == m.prompt_text);
  size_t cut = *rc::gen::inRange<size_t>(0, f.size());
  std::vector<uint8_t> t(f.begin(), f.begin() + static_cast<ptrdiff_t>(cut));
  RC_ASSERT(!kvc_parse_meta(t).ok());
}

RC_GTEST_PROP(KvcProp, BitFlipNeverYieldsWrongPayload, ()) {
  auto m = testing::make_meta(testing::seq_tokens(*rc::gen::inRange<size_t>(1, 40)));
  auto payload = testing::random_bytes(*rc::gen::inRange<size_t>(1, 4096), 7);
  auto prefix = kvc_build_prefix(m, payload);
  std::vector<uint8_t> f = *prefix;
  f.insert(f.end(), payload.begin(), payload.end());
  size_t pos = *rc::gen::inRange<size_t>(0, f.size());
  int bit = *rc::gen::inRange(0, 8);
  f[pos] ^= uint8_t(1u << bit);
  auto info = kvc_parse(f, make_key(m.ns, m.tokens));
  if (info.ok()) {
    // Only header fields outside the verified set may flip undetected; the
    // payload and token ids must be exactly what was saved.
    std::vector<uint8_t> got(f.begin() + static_cast<ptrdiff_t>(info->payload_offset), f.end());
    RC_ASSERT(got == payload);
    RC_ASSERT(info->tokens == m.tokens);
  }
}

// ---- policy ----

TEST(Policy, DefaultsMatchSpec) {
  PolicyConfig c;
  EXPECT_EQ(c.min_tokens, 512u);
  EXPECT_EQ(c.cold_min_tokens, 512u);
  EXPECT_EQ(c.cold_max_tokens, 30000u);
  EXPECT_EQ(c.continued_interval, 2048u);
  EXPECT_EQ(c.boundary_trim_tokens, 32u);
  EXPECT_EQ(c.boundary_align_tokens, 2048u);
  EXPECT_EQ(c.session_resume_wait_ms, 500u);
  EXPECT_TRUE(validate_policy(c).ok());
}

TEST(Policy, ValidateRejectsBadOrdering) {
  PolicyConfig c;
  c.cold_min_tokens = 100;
  auto s = validate_policy(c);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cold_min_tokens"), std::string::npos);
  c = PolicyConfig{};
  c.cold_max_tokens = 10;
  EXPECT_FALSE(validate_policy(c).ok());
  c = PolicyConfig{};
  c.continued_interval = 0;
  EXPECT_FALSE(validate_policy(c).ok());
  c = PolicyConfig{};
  c.boundary_align_tokens = 0;
  EXPECT_FALSE(validate_policy(c).ok());
}

TEST(Policy, TrimAndColdSplitExamples) {
  EXPECT_EQ(trim_boundary(5000, 32, 2048), std::optional<size_t>(4096));
  EXPECT_FALSE(trim_boundary(2079, 32, 2048).has_value());
  EXPECT_EQ(trim_boundary(2080, 32, 2048), std::optional<size_t>(2048));
  EXPECT_FALSE(trim_boundary(10, 32, 4).has_value());
  PolicyConfig c;
  EXPECT_FALSE(cold_save_split(511, c).has_value());
  EXPECT_FALSE(cold_save_split(30001, c).has_value());
  EXPECT_FALSE(cold_save_split(1000, c).has_value());  // too short after trim
  EXPECT_EQ(cold_save_split(4200, c), std::optional<size_t>(4096));
  EXPECT_TRUE(should_finish_save(512, c));
  EXPECT_FALSE(should_finish_save(511, c));
  EXPECT_TRUE(should_continued_save(4096, 2048, c));
  EXPECT_FALSE(should_continued_save(4095, 2048, c));
  PolicyConfig small;
  small.continued_interval = 100;
  EXPECT_FALSE(should_continued_save(300, 0, small));  // below min_tokens
  EXPECT_TRUE(should_continued_save(600, 500, small));
}

RC_GTEST_PROP(PolicyProp, TrimIsAlignedAndBounded, ()) {
  size_t len = *rc::gen::inRange<size_t>(0, 100000);
  uint64_t trim = *rc::gen::inRange<uint64_t>(0, 5000);
  uint64_t align = *rc::gen::inRange<uint64_t>(1, 5000);
  auto r = trim_boundary(len, trim, align);
  if (len < trim || len - trim < align) {
    RC_ASSERT(!r.has_value());
  } else {
    RC_ASSERT(r.has_value());
    RC_ASSERT(*r % align == 0);
    RC_ASSERT(*r + trim <= len);
    RC_ASSERT(*r + trim + align > len);  // the largest such multiple
    RC_ASSERT(*r >= align);
  }
}

}  // namespace
}  // namespace hearth::cache
