// Sliding-window layers keep a ring of window + n_batch positions, so a sequence can no
// longer be cut far below its length (Engine::seq_truncate: FailedPrecondition). The
// runtime then prefills cold instead of failing the request: a sticky prefix and a
// restored row that the new prompt leaves early both give the cold run's tokens and
// logits bit for bit. With swa_full the same requests reuse the prefix as before.
#include <filesystem>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

const std::string kGemma =
    std::string(HEARTH_SHARED_DIR) + "/reference/architectures/models/small-gemma3-f16.gguf";

// n_batch 8: a ring of round_up(64 + 8, 16) = 80 positions on the sliding layers.
ModelConfig config(bool caching, bool affinity, bool swa_full = false) {
  ModelConfig c = engine_config("m", kGemma, /*n_seq_max=*/1, caching);
  c.n_batch = 8;
  c.prefill_chunk_size = 8;
  c.slot_affinity = affinity;
  c.swa_full = swa_full;
  return c;
}

class SwaFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kGemma)) GTEST_SKIP() << "SKIPPED: " << kGemma << " is absent";
    auto rt = make_runtime();
    ASSERT_TRUE(rt->load_model(config(false, false)).ok());
    std::string story;
    for (int i = 0; i < 5; ++i) story += kWarmColdStoryText;
    first_ = *rt->tokenize("m", story, true);
    ASSERT_GT(first_.size(), 200u);
    // The second prompt shares the first 100 tokens, far below the ring's reach.
    second_.assign(first_.begin(), first_.begin() + 100);
    auto tail = *rt->tokenize("m", " Then a cat came by and sat in the sun.", false);
    second_.insert(second_.end(), tail.begin(), tail.end());
    auto ref = rt->complete_tokens("m", second_, greedy(8));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    reference_ = std::move(ref).value();
  }
  static constexpr const char* kWarmColdStoryText =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it. ";
  std::vector<TokenId> first_, second_;
  CompletionResult reference_;
};

TEST_F(SwaFallback, AStickyPrefixBelowTheRingPrefillsColdAndMatches) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(/*caching=*/false, /*affinity=*/true)).ok());
  ASSERT_TRUE(rt->complete_tokens("m", first_, greedy(4)).ok());
  auto warm = rt->complete_tokens("m", second_, greedy(8));
  ASSERT_TRUE(warm.ok()) << warm.status().to_string();
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kCold);
  expect_same_output(*warm, reference_);
  EXPECT_EQ(rt->cache_counters()["runtime_truncate_fallbacks"], 1u);

  // swa_full keeps every position: the same prefix is reused in place.
  auto full = make_runtime();
  ASSERT_TRUE(full->load_model(config(false, true, /*swa_full=*/true)).ok());
  ASSERT_TRUE(full->complete_tokens("m", first_, greedy(4)).ok());
  auto sticky = full->complete_tokens("m", second_, greedy(8));
  ASSERT_TRUE(sticky.ok()) << sticky.status().to_string();
  EXPECT_EQ(sticky->cache_hit_kind, CacheHitKind::kSticky);
  expect_same_output(*sticky, reference_);
  EXPECT_EQ(full->cache_counters()["runtime_truncate_fallbacks"], 0u);
}

TEST_F(SwaFallback, ARestoredRowCutBelowTheWindowPrefillsColdAndMatches) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(/*caching=*/true, /*affinity=*/false)).ok());
  ASSERT_TRUE(rt->complete_tokens("m", first_, greedy(4)).ok());
  ASSERT_TRUE(rt->cache_flush());
  auto warm = rt->complete_tokens("m", second_, greedy(8));
  ASSERT_TRUE(warm.ok()) << warm.status().to_string();
  expect_same_output(*warm, reference_);
  EXPECT_EQ(rt->cache_counters()["runtime_restore_failures"], 0u);
  // The longest row (the first prompt's) matches 100 tokens: restored, then refused the
  // cut (its row holds only the window before its end), so the request prefilled cold.
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kCold);
  EXPECT_EQ(rt->cache_counters()["runtime_truncate_fallbacks"], 1u);
}

}  // namespace
}  // namespace hearth::runtime
