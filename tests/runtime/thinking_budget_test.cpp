// The thinking budget: after N tokens inside a think block the runtime appends the
// closing tokens instead of sampling, then samples again; nothing changes before it,
// and a warm run equals a cold one.
#include <gtest/gtest.h>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {

using testing::make_runtime;
using testing::stub_config;

std::vector<TokenId> stub_tokens(std::string_view text) {
  std::vector<TokenId> t;
  for (unsigned char c : text) t.push_back(static_cast<TokenId>(c) + 3);  // the stub's vocab
  return t;
}

RequestParams params(int32_t n, ThinkingBudget thinking = {}) {
  RequestParams p;
  p.response_tokens = n;
  p.sampling.temperature = 0;
  p.thinking = std::move(thinking);
  return p;
}

ThinkingBudget budget(int32_t n, bool starts_inside, std::string_view open = "<think>") {
  return {n, starts_inside, stub_tokens(open), stub_tokens("</think>")};
}

class ThinkingBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rt_ = make_runtime();
    ASSERT_TRUE(rt_->load_model(stub_config("m", 2)).ok());
  }
  CompletionResult run(const std::string& prompt, const RequestParams& p) {
    auto r = rt_->complete("m", prompt, p);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : CompletionResult{};
  }
  std::unique_ptr<Runtime> rt_;
};

TEST_F(ThinkingBudgetTest, ClosesTheBlockThePromptOpened) {
  const std::string prompt = "Question: what is 2 + 2?\n<think>\n";
  const CompletionResult free = run(prompt, params(30));
  const CompletionResult capped = run(prompt, params(30, budget(5, true)));
  ASSERT_GE(capped.generated.size(), 13u);
  // The first 5 tokens are the model's own, then the closing tag is forced.
  EXPECT_TRUE(
      std::equal(free.generated.begin(), free.generated.begin() + 5, capped.generated.begin()));
  const auto close = stub_tokens("</think>");
  EXPECT_TRUE(std::equal(close.begin(), close.end(), capped.generated.begin() + 5));
  EXPECT_EQ(capped.reply.find("</think>"), 5u);
  EXPECT_NE(free.reply.find("</think>"), 5u);
  // After the block, sampling resumes (no second close is forced).
  EXPECT_EQ(capped.generated.size(), 30u);
  EXPECT_EQ(capped.reply.find("</think>", 6), std::string::npos);
}

TEST_F(ThinkingBudgetTest, ZeroBudgetClosesAtOnce) {
  const CompletionResult r = run("Q?\n<think>\n", params(12, budget(0, true)));
  EXPECT_EQ(r.reply.rfind("</think>", 0), 0u);
}

TEST_F(ThinkingBudgetTest, OpensWhenTheModelWritesTheOpenTag) {
  const std::string prompt = "Tell me something.";
  const CompletionResult free = run(prompt, params(20));
  ASSERT_GE(free.reply.size(), 2u);
  // The model's own first byte stands in for the open tag: the block opens after it.
  const CompletionResult capped =
      run(prompt, params(20, budget(3, false, free.reply.substr(0, 1))));
  EXPECT_EQ(capped.reply.substr(0, 4), free.reply.substr(0, 4));
  EXPECT_EQ(capped.reply.find("</think>"), 4u);
}

TEST_F(ThinkingBudgetTest, NoBlockNoChange) {
  const std::string prompt = "Plain prompt.";
  const CompletionResult free = run(prompt, params(20));
  const CompletionResult off = run(prompt, params(20, budget(2, false)));
  EXPECT_EQ(off.generated, free.generated);  // "<think>" never generated: nothing forced
  const CompletionResult disabled = run(prompt, params(20, budget(-1, true)));
  EXPECT_EQ(disabled.generated, free.generated);
}

TEST_F(ThinkingBudgetTest, WarmEqualsCold) {
  const std::string prompt = std::string(200, 'p') + "\n<think>\n";
  const CompletionResult cold = run(prompt, params(24, budget(4, true)));
  const CompletionResult warm = run(prompt, params(24, budget(4, true)));
  EXPECT_NE(warm.cache_hit_kind, CacheHitKind::kCold);
  EXPECT_EQ(warm.generated, cold.generated);
  EXPECT_EQ(warm.reply, cold.reply);
}

}  // namespace
}  // namespace hearth::runtime
