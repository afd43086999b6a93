// Unit tests of the runtime's pure parts: batch planning, stop sequences, stub backend,
// sampler determinism, ChatML.
#include <gtest/gtest.h>

#include "hearth/runtime/runtime.h"
#include "runtime/batch_planner.h"
#include "runtime/stop_matcher.h"
#include "runtime/token_sampler.h"
#include "testing/stub_backend.h"

namespace hearth::runtime {
namespace {

int32_t total_tokens(const std::vector<PlanRow>& rows) {
  int32_t t = 0;
  for (const auto& r : rows) t += r.decode ? 1 : r.prefill_len;
  return t;
}

TEST(BatchPlanner, DecodeFirstKeepsDecodersWholeAndSlicesPrefillHeadFirst) {
  std::vector<PlanCandidate> c = {{0, true, 0}, {1, false, 100}, {2, true, 0}, {3, false, 50}};
  auto rows = plan_batch(c, 64, 0, BatchStrategy::kDecodeFirst);
  ASSERT_EQ(rows.size(), 3u);  // slot 3 gets nothing: slot 1 (head) took the rest
  EXPECT_TRUE(rows[0].decode);
  EXPECT_EQ(rows[1].slot, 1);
  EXPECT_EQ(rows[1].prefill_len, 62);
  EXPECT_TRUE(rows[2].decode);
  EXPECT_EQ(total_tokens(rows), 64);
}

TEST(BatchPlanner, ChunkCapsEachPrefillRow) {
  std::vector<PlanCandidate> c = {{0, false, 100}, {1, false, 100}};
  auto rows = plan_batch(c, 512, 32, BatchStrategy::kDecodeFirst);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].prefill_len, 32);
  EXPECT_EQ(rows[1].prefill_len, 32);
}

TEST(BatchPlanner, PrefillFirstDefersDecodersThatDoNotFit) {
  std::vector<PlanCandidate> c = {{0, true, 0}, {1, false, 100}};
  auto rows = plan_batch(c, 16, 0, BatchStrategy::kPrefillFirst);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].slot, 1);
  EXPECT_EQ(rows[0].prefill_len, 16);
}

TEST(BatchPlanner, BalancedGivesPrefillHalfWhileDecodersWait) {
  std::vector<PlanCandidate> c = {{0, true, 0}, {1, false, 100}};
  auto rows = plan_batch(c, 64, 0, BatchStrategy::kBalanced);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].prefill_len, 32);
  std::vector<PlanCandidate> only_prefill = {{1, false, 100}};
  EXPECT_EQ(plan_batch(only_prefill, 64, 0, BatchStrategy::kBalanced)[0].prefill_len, 64);
}

TEST(BatchPlanner, EffectiveChunkDefault) {
  EXPECT_EQ(effective_chunk(0, 512), 128);
  EXPECT_EQ(effective_chunk(0, 100), 64);
  EXPECT_EQ(effective_chunk(-1, 512), 0);
  EXPECT_EQ(effective_chunk(7, 512), 7);
}

TEST(StopMatcher, HoldsBackPossibleStartAndCutsAtMatch) {
  StopMatcher m({"END", "xyz"});
  EXPECT_EQ(m.push("abcE"), "abc");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("Dtail"), "");
  ASSERT_TRUE(m.matched());
  EXPECT_EQ(*m.matched(), "END");
  StopMatcher n({"END"});
  EXPECT_EQ(n.push("aE"), "a");
  EXPECT_EQ(n.push("x"), "Ex");
  EXPECT_EQ(n.flush(), "");
  EXPECT_FALSE(n.matched());
}

TEST(StubBackend, PackUnpackRestoresIdenticalLogits) {
  StubBackend b(StubOptions{});
  auto toks = *b.tokenize("hello world, this is a stub", false, {});
  std::vector<std::vector<float>> l1, l2;
  StepRow r{0, 0, toks, true};
  ASSERT_TRUE(b.step({&r, 1}, &l1).ok());
  auto kv = b.kv_pack(0, static_cast<int32_t>(toks.size()));
  ASSERT_TRUE(kv.ok());
  ASSERT_TRUE(b.kv_unpack(1, *kv, static_cast<int32_t>(toks.size())).ok());
  TokenId next = 70;
  StepRow a{0, static_cast<int32_t>(toks.size()), {&next, 1}, true};
  StepRow c{1, static_cast<int32_t>(toks.size()), {&next, 1}, true};
  StepRow both[] = {a, c};
  ASSERT_TRUE(b.step(both, &l2).ok());
  ASSERT_EQ(l2.size(), 2u);
  EXPECT_EQ(l2[0], l2[1]);
  EXPECT_NE(l2[0], l1[0]);
  // A row that does not continue the sequence is a scheduler bug the stub reports.
  StepRow bad{0, 3, {&next, 1}, true};
  EXPECT_EQ(b.step({&bad, 1}, &l2).code(), ErrorCode::kInternal);
}

// The stub's vocabulary has no token with text, so special ranges change nothing; they
// are still checked against the text, as the engine checks them.
TEST(StubBackend, SpecialRangesChangeNothingButAreChecked) {
  StubBackend b(StubOptions{});
  const std::string text = "a</s>b";
  const std::vector<TextRange> whole = special_ranges_for(text, true);
  EXPECT_EQ(*b.tokenize(text, true, whole), *b.tokenize(text, true, {}));
  const std::vector<TextRange> past_end = {{0, text.size() + 1}};
  EXPECT_EQ(b.tokenize(text, true, past_end).status().code(), ErrorCode::kInvalidArgument);
}

TEST(StubBackend, WrongRestoreChangesLogits) {
  StubBackend b(StubOptions{});
  auto x = *b.tokenize("abcdef", false, {});
  auto y = *b.tokenize("abcdeg", false, {});
  std::vector<std::vector<float>> lx, ly;
  StepRow rx{0, 0, x, true}, ry{1, 0, y, true};
  StepRow rows[] = {rx, ry};
  ASSERT_TRUE(b.step(rows, &lx).ok());
  EXPECT_NE(lx[0], lx[1]);
}

TEST(TokenSampler, SeededIsDeterministicGreedyIsArgmax) {
  std::vector<float> logits = {0.1f, 2.0f, 1.9f, -1.0f};
  SamplingOptions greedy;
  greedy.temperature = 0;
  EXPECT_EQ(make_token_sampler(greedy, {}).value()->sample(logits), 1);
  SamplingOptions seeded;
  seeded.temperature = 1.0f;
  seeded.seed = 42;
  auto s1 = make_token_sampler(seeded, {}).value(), s2 = make_token_sampler(seeded, {}).value();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s1->sample(logits), s2->sample(logits));
  seeded.top_k = 1;
  EXPECT_EQ(make_token_sampler(seeded, {}).value()->sample(logits), 1);
}

TEST(TokenSampler, FrequencyAndPresencePenalties) {
  std::vector<float> logits = {0.0f, 2.0f, 1.5f, 1.0f};
  SamplingOptions o;
  o.temperature = 0;
  const TokenId seen_once[] = {1};
  const TokenId seen_twice[] = {1, 1, 2};
  EXPECT_EQ(make_token_sampler(o, seen_twice).value()->sample(logits), 1);  // penalties off
  o.presence_penalty = 0.6f;                                                // 2.0 - 0.6 = 1.4 < 1.5
  EXPECT_EQ(make_token_sampler(o, seen_once).value()->sample(logits), 2);
  o.presence_penalty = 0;
  o.frequency_penalty = 0.3f;  // once: 1.7 still wins; twice: 1.4, and 2 drops to 1.2
  EXPECT_EQ(make_token_sampler(o, seen_once).value()->sample(logits), 1);
  EXPECT_EQ(make_token_sampler(o, seen_twice).value()->sample(logits), 1);
  o.frequency_penalty = 0.4f;  // twice: 1.2; token 2 once: 1.1; token 3 unseen: 1.0
  EXPECT_EQ(make_token_sampler(o, seen_twice).value()->sample(logits), 1);
  o.frequency_penalty = 0.6f;  // twice: 0.8; 2: 0.9; 3: 1.0
  EXPECT_EQ(make_token_sampler(o, seen_twice).value()->sample(logits), 3);
  // Accepted tokens count too; a negative penalty favours seen tokens.
  SamplingOptions fav;
  fav.temperature = 0;
  fav.presence_penalty = -1.5f;
  auto s = make_token_sampler(fav, {}).value();
  EXPECT_EQ(s->sample(logits), 1);
  s->accept(3);
  EXPECT_EQ(s->sample(logits), 3);  // 1.0 + 1.5 > 2.0
}

}  // namespace
}  // namespace hearth::runtime
