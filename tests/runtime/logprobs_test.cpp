// Logprobs and logit_bias in the runtime: token_logprobs is a log-softmax (the top list
// over the whole vocabulary sums to 1, sorted, the chosen token's entry agrees), and
// the reported logprobs come from the row the sampler chose from (after logit_bias).
#include <cmath>

#include "runtime/logprobs.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

TEST(TokenLogprobs, IsALogSoftmaxSortedBestFirst) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  const TokenLogprobs lp = token_logprobs(logits, 4, 5);
  ASSERT_EQ(lp.top.size(), 5u);
  double sum = 0;
  for (const TokenLogprob& t : lp.top) sum += std::exp(static_cast<double>(t.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-6);
  for (size_t i = 1; i < lp.top.size(); ++i) EXPECT_GE(lp.top[i - 1].logprob, lp.top[i].logprob);
  EXPECT_EQ(lp.top[0].token, 1);  // a tie: lowest id first
  EXPECT_EQ(lp.top[1].token, 3);
  EXPECT_EQ(lp.token, 4);
  for (const TokenLogprob& t : lp.top) {
    if (t.token == 4) {
      EXPECT_EQ(t.logprob, lp.logprob);
    }
  }
  EXPECT_NEAR(lp.top[0].logprob - lp.top[4].logprob, 5.0, 1e-5);  // differences of logits
  EXPECT_TRUE(token_logprobs(logits, 1, 0).top.empty());
}

TEST(RuntimeLogprobs, GreedyTokenIsTopOneAndBiasBansOrForces) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  auto prompt = rt->tokenize("m", "The quick brown fox");
  ASSERT_TRUE(prompt.ok());
  RequestParams p = greedy(8);
  p.logprobs = 4;
  auto plain = rt->complete_tokens("m", *prompt, p);
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->logprobs.size(), plain->generated.size());
  for (size_t i = 0; i < plain->logprobs.size(); ++i) {
    const TokenLogprobs& lp = plain->logprobs[i];
    EXPECT_EQ(lp.token, plain->generated[i]);
    ASSERT_EQ(lp.top.size(), 4u);
    EXPECT_EQ(lp.top[0].token, lp.token);
    EXPECT_EQ(lp.top[0].logprob, lp.logprob);
    EXPECT_LE(lp.logprob, 0.0f);
  }
  // -100 on the first greedy token: it never appears; +100 on another: it is all there is.
  const TokenId first = plain->generated[0];
  RequestParams ban = p;
  ban.sampling.logit_bias = {{first, -100.0f}};
  auto banned = rt->complete_tokens("m", *prompt, ban);
  ASSERT_TRUE(banned.ok());
  for (TokenId t : banned->generated) EXPECT_NE(t, first);
  EXPECT_LT(banned->logprobs[0].logprob, 0.0f);
  const TokenId forced_id = 'Z' + 3;  // the stub's token for "Z"
  RequestParams force = p;
  force.sampling.temperature = 0.9f;
  force.sampling.seed = 5;
  force.sampling.logit_bias = {{forced_id, 100.0f}};
  auto forced = rt->complete_tokens("m", *prompt, force);
  ASSERT_TRUE(forced.ok());
  for (TokenId t : forced->generated) EXPECT_EQ(t, forced_id);
  EXPECT_NEAR(forced->logprobs[0].logprob, 0.0f, 1e-3);  // reported after the bias

  RequestParams bad = p;
  bad.sampling.logit_bias = {{StubBackend::kVocab, 1.0f}};
  auto refused = rt->complete_tokens("m", *prompt, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("logit_bias"), std::string::npos);
}

}  // namespace
}  // namespace hearth::runtime
