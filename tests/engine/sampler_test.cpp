// Sampler: portable PRNG, determinism, and each stage of the chain.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hearth/engine/sampler.h"

namespace hearth {
namespace {

std::vector<float> ramp_logits(int n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / static_cast<float>(1 << 24) * 6.0f;
  }
  return v;
}

TEST(RngTest, MatchesXoshiro256StarStarSeededBySplitmix64) {
  // Values from an independent Python implementation of splitmix64 + xoshiro256**.
  Rng rng(42);
  EXPECT_EQ(rng.next_u64(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(rng.next_u64(), 0x6104d9866d113a7eull);
  EXPECT_EQ(rng.next_u64(), 0xae17533239e499a1ull);
  Rng r2(7);
  for (int i = 0; i < 1000; ++i) {
    const double d = r2.next_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(SamplerTest, SameSeedSameTokens) {
  const auto logits = ramp_logits(1000, 1);
  SamplingParams p;
  p.seed = 1234;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.5f;
  Sampler a(p), b(p);
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(logits, ta));
    tb.push_back(b.sample(logits, tb));
  }
  EXPECT_EQ(ta, tb);
  p.seed = 99;
  Sampler c(p);
  std::vector<int32_t> tc;
  for (int i = 0; i < 200; ++i) tc.push_back(c.sample(logits, tc));
  EXPECT_NE(ta, tc);
  a.reset();
  std::vector<int32_t> again;
  for (int i = 0; i < 200; ++i) again.push_back(a.sample(logits, again));
  EXPECT_EQ(ta, again);
}

TEST(SamplerTest, GreedyIsArgmaxWithLowestIdOnTies) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(Sampler::greedy(logits), 1);
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  EXPECT_EQ(s.sample(logits, {}), 1);
  p.temperature = 1.0f;
  p.top_k = 1;
  Sampler k1(p);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(k1.sample(logits, {}), 1);
}

TEST(SamplerTest, RepetitionPenaltyMovesGreedyChoice) {
  const std::vector<float> logits = {1.0f, 2.0f, 1.5f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;  // 2.0 -> 1.0, so token 2 (1.5) wins
  Sampler s(p);
  const std::vector<int32_t> history = {1};
  EXPECT_EQ(s.sample(logits, history), 2);
  p.penalty_last_n = 1;
  Sampler window(p);
  const std::vector<int32_t> old = {1, 0};  // token 1 is outside the last-1 window
  EXPECT_EQ(window.sample(logits, old), 1);
  p.repetition_penalty = 1.0f;
  p.presence_penalty = 0.6f;
  p.frequency_penalty = 0.0f;
  p.penalty_last_n = 64;
  Sampler presence(p);
  EXPECT_EQ(presence.sample(logits, history), 2);  // 2.0 - 0.6 = 1.4 < 1.5
  p.presence_penalty = 0.0f;
  p.frequency_penalty = 0.3f;
  Sampler freq(p);
  EXPECT_EQ(freq.sample(logits, history), 1);  // once: 2.0 - 0.3 = 1.7 > 1.5
  const std::vector<int32_t> twice = {1, 1};   // twice: 2.0 - 0.6 = 1.4 < 1.5
  EXPECT_EQ(freq.sample(logits, twice), 2);
}

TEST(SamplerTest, MinPAndTopPKeepOnlyTheHead) {
  // Token 0 dominates: with min_p 0.5 nothing else is within half its probability.
  std::vector<float> logits = {10.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.temperature = 5.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.5f;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(logits, {}), 0);
  p.min_p = 0.0f;
  p.top_p = 0.5f;
  Sampler tp(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(tp.sample(logits, {}), 0);
}

TEST(SamplerTest, DrawFollowsTheDistribution) {
  // p = softmax(log(0.2), log(0.3), log(0.5)).
  const std::vector<float> logits = {std::log(0.2f), std::log(0.3f), std::log(0.5f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 5;
  Sampler s(p);
  int counts[3] = {0, 0, 0};
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits, {})];
  EXPECT_NEAR(counts[0] / static_cast<double>(n), 0.2, 0.02);
  EXPECT_NEAR(counts[1] / static_cast<double>(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / static_cast<double>(n), 0.5, 0.02);
}

TEST(SamplerTest, LowTemperatureConcentratesOnTheTop) {
  auto logits = ramp_logits(300, 3);
  logits[17] = 6.5f;  // a clear top: 0.5 above the rest, i.e. e^-50 at this temperature
  SamplingParams p;
  p.temperature = 0.01f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  Sampler s(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits, {}), 17);
}

}  // namespace
}  // namespace hearth
