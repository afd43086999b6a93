// Acceptance: a warm request (exact, resume, longest-prefix, sticky) is bit-identical to a
// cold one: same tokens, same text, same per-token logits; greedy and seeded.
#include "slow_disk.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

class WarmCold : public ::testing::TestWithParam<bool> {
 protected:
  RequestParams params() const {
    RequestParams p = greedy(24);
    if (GetParam()) {  // seeded sampling
      p.sampling.temperature = 0.9f;
      p.sampling.top_k = 40;
      p.sampling.top_p = 0.95f;
      p.sampling.seed = 1234;
    }
    return p;
  }
};

TEST_P(WarmCold, ExactHitOnParentKey) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 2);
  cfg.slot_affinity = false;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto turn1 = rt->complete("m", text_of(300), params());
  ASSERT_TRUE(turn1.ok()) << turn1.status().to_string();
  ASSERT_TRUE(turn1->finish_key);
  wait_for_counter(*rt, "saves_finish", 1);
  std::vector<TokenId> prompt2 = turn1->context_tokens;
  auto more = *rt->tokenize("m", " and then the user asked again");
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  RequestParams p2 = params();
  p2.parent_key = turn1->finish_key;
  auto warm = rt->complete_tokens("m", prompt2, p2);
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kExact);
  EXPECT_EQ(warm->cache_delta.read, turn1->committed_tokens);
  EXPECT_EQ(rt->cache_counters()["runtime_hits_exact"], 1u);
  expect_same_output(*warm, cold_reference(prompt2, p2));
}

TEST_P(WarmCold, ExactHitOnWholePromptNeedsNoForwardBeforeFirstToken) {
  auto ctl = std::make_shared<StubControl>();
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, ctl)).ok());
  auto prompt = *rt->tokenize("m", text_of(200));
  auto pre = rt->prefill_only("m", prompt);
  ASSERT_TRUE(pre.ok());
  ASSERT_TRUE(pre->finish_key);
  EXPECT_EQ(pre->committed_tokens, static_cast<int64_t>(prompt.size()));
  wait_for_counter(*rt, "saves_finish", 1);
  RequestParams p = params();
  p.parent_key = pre->finish_key;
  p.response_tokens = 1;
  const int64_t steps_before = ctl->steps.load();
  auto warm = rt->complete_tokens("m", prompt, p);
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kExact);
  EXPECT_EQ(warm->cache_delta.read, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(warm->cache_delta.created, 0);
  EXPECT_EQ(ctl->steps.load(), steps_before);  // first token came from stored logits
  expect_same_output(*warm, cold_reference(prompt, p));
}

TEST_P(WarmCold, ResumeWaitsForInFlightFinishSave) {
  SlowDisk disk(std::chrono::milliseconds(250));  // each disk publish takes 250 ms
  auto rt = make_runtime(disk.options());
  auto cfg = stub_config("m", 1);
  cfg.tier = Tier::kDisk;
  cfg.slot_affinity = false;  // else the resident cells would serve turn 2 (sticky)
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto turn1 = rt->complete("m", text_of(300), params());
  ASSERT_TRUE(turn1.ok());
  ASSERT_TRUE(turn1->finish_key);
  EXPECT_EQ(rt->cache_counters()["saves_finish"], 0u);  // still in flight
  std::vector<TokenId> prompt2 = turn1->context_tokens;
  auto more = *rt->tokenize("m", " next question");
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  RequestParams p2 = params();
  p2.parent_key = turn1->finish_key;
  auto warm = rt->complete_tokens("m", prompt2, p2);
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kResume);
  EXPECT_EQ(warm->cache_delta.read, turn1->committed_tokens);
  EXPECT_EQ(rt->cache_counters()["runtime_hits_resume"], 1u);
  expect_same_output(*warm, cold_reference(prompt2, p2));
}

TEST_P(WarmCold, StatelessResendHitsLongestPrefix) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 1);
  cfg.slot_affinity = false;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto turn1 = rt->complete("m", text_of(300), params());
  ASSERT_TRUE(turn1.ok());
  wait_for_counter(*rt, "saves_finish", 1);
  std::vector<TokenId> prompt2 = turn1->context_tokens;
  auto more = *rt->tokenize("m", " user: and now?");
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  auto warm = rt->complete_tokens("m", prompt2, params());  // no parent_key
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kPartial);
  EXPECT_EQ(warm->cache_delta.read, turn1->committed_tokens);
  EXPECT_EQ(rt->cache_counters()["runtime_hits_longest_prefix"], 1u);
  expect_same_output(*warm, cold_reference(prompt2, params()));
}

TEST_P(WarmCold, StickySlotReuseMatchesCold) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 2);
  cfg.policy.min_tokens = 1 << 30;  // no rows at all: only resident cells can help
  cfg.policy.cold_min_tokens = 1 << 30;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto turn1 = rt->complete("m", text_of(200), params());
  ASSERT_TRUE(turn1.ok());
  std::vector<TokenId> prompt2 = turn1->context_tokens;
  auto more = *rt->tokenize("m", " again");
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  auto warm = rt->complete_tokens("m", prompt2, params());
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(warm->cache_hit_kind, CacheHitKind::kSticky);
  EXPECT_EQ(warm->cache_delta.read, turn1->committed_tokens);
  expect_same_output(*warm, cold_reference(prompt2, params()));
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSeeded, WarmCold, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "seeded" : "greedy"; });

}  // namespace
}  // namespace hearth::runtime
