// Sliding-window layers keep a ring of window + n_batch positions (KvStore, KvRing):
// on gen-model gemma2 and gemma3 files (window 64) with a small n_batch, so a 300-token
// prompt wraps the ring several times, the logits are bit-identical to the full layout
// (EngineOptions::swa_full) for every KV type; the packed rows hold the window only, and
// restoring one and continuing is bit-identical to the cold run; a truncation below
// what the ring holds is a FailedPrecondition naming the window.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gen_model_test_util.h"
#include "hearth/engine/engine.h"
#include "test_tokens.h"

namespace hearth {
namespace {

constexpr int32_t kPrompt = 300;
constexpr int32_t kMore = 12;        // tokens decoded one by one after the prompt
constexpr int32_t kSmallBatch = 16;  // ring of round_up(64 + 16, 16) = 80 positions

std::vector<int32_t> tokens(int32_t n, int32_t n_vocab, uint32_t seed) {
  return testing::lcg_tokens(n, n_vocab, seed);
}

std::unique_ptr<Engine> load(const std::string& path, KvType type, bool swa_full, int32_t n_batch) {
  EngineOptions o;
  o.n_threads = 2;
  o.n_ctx = 512;
  o.n_seq_max = 2;
  o.n_batch = n_batch;
  o.kv_type = type;
  o.swa_full = swa_full;
  auto e = Engine::load(path, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Appends toks to seq at its length in chunks of `chunk`, every position's logits.
std::vector<float> feed(Engine& e, int32_t seq, const std::vector<int32_t>& toks, size_t chunk) {
  std::vector<float> all, logits;
  std::vector<BatchToken> batch;
  for (size_t b = 0; b < toks.size(); b += chunk) {
    batch.clear();
    for (size_t i = b; i < std::min(toks.size(), b + chunk); ++i)
      batch.push_back({toks[i], e.seq_len(seq) + static_cast<int32_t>(i - b), seq, true});
    const Status st = e.forward(batch, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SwaRingTest : public ::testing::TestWithParam<std::tuple<const char*, KvType>> {
 protected:
  void SetUp() override {
    std::string why;
    path_ = testing::generated_model("tiny", "f16", &why, std::get<0>(GetParam()));
    if (path_.empty()) GTEST_SKIP() << "SKIPPED: " << why;
    type_ = std::get<1>(GetParam());
  }
  std::string path_;
  KvType type_ = KvType::kF16;
};

TEST_P(SwaRingTest, RingIsBitIdenticalToTheFullLayoutAndRowsHoldTheWindow) {
  auto full = load(path_, type_, true, 512);
  auto ring = load(path_, type_, false, kSmallBatch);
  ASSERT_TRUE(full && ring);
  ASSERT_EQ(ring->info().n_swa, 64);
  EXPECT_NE(full->numerics_id().find(":full"), std::string::npos) << full->numerics_id();
  EXPECT_NE(ring->numerics_id().find(":window"), std::string::npos) << ring->numerics_id();
  EXPECT_LT(ring->info().kv_bytes, full->info().kv_bytes);

  const auto prompt = tokens(kPrompt, full->info().n_vocab, 11);
  const auto more = tokens(kMore, full->info().n_vocab, 12);
  const std::vector<float> cold = feed(*full, 0, prompt, kPrompt);
  // Chunks of 7 and the engine's own split at 16: the ring wraps inside chunks too.
  EXPECT_TRUE(same_bits(feed(*ring, 0, prompt, 7), cold)) << "prompt logits differ";
  EXPECT_TRUE(same_bits(feed(*ring, 0, more, 1), feed(*full, 0, more, 1))) << "decode differs";

  // The saved row of the prompt holds the sliding layers' last 64 positions only, and a
  // restore into the other sequence continues as the cold run does.
  std::vector<uint8_t> row;
  ASSERT_TRUE(ring->kv_pack(0, kPrompt, row).ok());
  EXPECT_EQ(row.size(), ring->kv_pack_bytes(kPrompt));
  EXPECT_LT(row.size(), static_cast<size_t>(kPrompt) * ring->kv_bytes_per_position());
  std::vector<uint8_t> full_row;
  ASSERT_TRUE(full->kv_pack(0, kPrompt, full_row).ok());
  EXPECT_EQ(full_row.size(), static_cast<size_t>(kPrompt) * full->kv_bytes_per_position());
  ASSERT_TRUE(ring->kv_unpack(1, row, kPrompt).ok());
  ASSERT_TRUE(full->seq_truncate(0, kPrompt).ok());
  const std::vector<float> cold_more = feed(*full, 0, more, 1);
  EXPECT_TRUE(same_bits(feed(*ring, 1, more, 1), cold_more)) << "restored row differs";
  // The same through the in-place import (the file tier's path); a ring layer's run may
  // be split where it wraps.
  auto spans = ring->kv_import_spans(1, kPrompt);
  ASSERT_TRUE(spans.ok());
  size_t at = 0;
  for (const std::span<uint8_t> s : *spans) {
    std::memcpy(s.data(), row.data() + at, s.size());
    at += s.size();
  }
  EXPECT_EQ(at, row.size());
  ASSERT_TRUE(ring->kv_import_commit(1, kPrompt).ok());
  EXPECT_TRUE(same_bits(feed(*ring, 1, more, 1), cold_more)) << "imported row differs";
  // A restored row can still drop its last position to recompute its logits.
  ASSERT_TRUE(ring->kv_unpack(1, row, kPrompt).ok());
  ASSERT_TRUE(ring->seq_truncate(1, kPrompt - 1).ok());
  const std::vector<float> last = feed(*ring, 1, {prompt.back()}, 1);
  EXPECT_TRUE(same_bits(
      last, std::vector<float>(cold.end() - static_cast<std::ptrdiff_t>(last.size()), cold.end())));
}

TEST_P(SwaRingTest, TruncationBelowTheRingIsAFailedPreconditionNamingTheWindow) {
  if (type_ != KvType::kF16) GTEST_SKIP() << "one KV type is enough here";
  auto full = load(path_, type_, true, 512);
  auto ring = load(path_, type_, false, kSmallBatch);
  ASSERT_TRUE(full && ring);
  const auto prompt = tokens(kPrompt, full->info().n_vocab, 21);
  feed(*full, 0, prompt, kPrompt);
  feed(*ring, 0, prompt, kPrompt);
  // The ring holds 220..299: continuing at n needs n - 63 .. n - 1.
  const Status st = ring->seq_truncate(0, 250);
  ASSERT_EQ(st.code(), ErrorCode::kFailedPrecondition) << st.to_string();
  EXPECT_NE(st.message().find("window 64"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("283"), std::string::npos) << st.message();
  EXPECT_EQ(ring->seq_len(0), kPrompt);  // unchanged
  std::vector<uint8_t> row;
  EXPECT_EQ(ring->kv_pack(0, 250, row).code(), ErrorCode::kFailedPrecondition);
  // A short truncation works, and continues as the full layout does.
  ASSERT_TRUE(ring->seq_truncate(0, 283).ok());
  ASSERT_TRUE(full->seq_truncate(0, 283).ok());
  const auto more = tokens(kMore, full->info().n_vocab, 22);
  EXPECT_TRUE(same_bits(feed(*ring, 0, more, 5), feed(*full, 0, more, 5)));
  // The full layout truncates anywhere; the ring only to 0 that far back.
  EXPECT_TRUE(full->seq_truncate(0, 10).ok());
  EXPECT_EQ(ring->seq_truncate(0, 10).code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(ring->seq_truncate(0, 0).ok());
}

INSTANTIATE_TEST_SUITE_P(GenModels, SwaRingTest,
                         ::testing::Combine(::testing::Values("gemma2", "gemma3"),
                                            ::testing::Values(KvType::kF16, KvType::kQ8_0,
                                                              KvType::kQ4_0)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  kv_type_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace hearth
