// n > 1 choices (Runtime::infer_n): the prompt is prefilled once and the other sequences
// fork from its KV (Backend::kv_copy); each choice samples on its own, choice i with
// seed + i. On the stub (scheduling, seeds, admission) and on the engine for every KV
// type (a fork decodes exactly what a single sequence decodes: same tokens, same logprobs).
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

struct Choice {
  std::vector<TokenId> tokens;
  std::vector<TokenLogprobs> logprobs;
  RequestStats stats;
  Status error;
};

// Runs n choices and waits for all of them.
std::vector<Choice> run_n(Runtime& rt, const std::string& model, std::span<const TokenId> prompt,
                          const RequestParams& params, size_t n) {
  std::vector<Choice> out(n);
  std::vector<std::promise<void>> done(n);
  std::vector<StreamSink> sinks(n);
  for (size_t i = 0; i < n; ++i) {
    sinks[i].on_token = [&out, i](TokenId t) { out[i].tokens.push_back(t); };
    sinks[i].on_logprobs = [&out, i](const TokenLogprobs& lp) { out[i].logprobs.push_back(lp); };
    sinks[i].on_done = [&out, &done, i](const RequestStats& s) {
      out[i].stats = s;
      done[i].set_value();
    };
    sinks[i].on_error = [&out, &done, i](const Status& e) {
      out[i].error = e;
      done[i].set_value();
    };
  }
  auto ids = rt.infer_n(model, prompt, params, std::move(sinks));
  EXPECT_TRUE(ids.ok()) << ids.status().to_string();
  if (!ids.ok()) return {};
  EXPECT_EQ(ids->size(), n);
  for (auto& d : done) d.get_future().wait();
  return out;
}

std::vector<TokenId> prompt_of(Runtime& rt, const std::string& model, const std::string& text) {
  auto t = rt.tokenize(model, text);
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : std::vector<TokenId>{};
}

TEST(Fork, GreedyChoicesAreAllTheSingleRunAndThePromptIsForwardedOnce) {
  auto control = std::make_shared<StubControl>();
  auto rt = make_runtime();
  auto cfg = stub_config("m", 4, control);
  cfg.policy.min_tokens = 1 << 30;  // nothing cached: the fork is the only reuse
  cfg.policy.cold_min_tokens = 1 << 30;
  cfg.slot_affinity = false;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const auto prompt = prompt_of(*rt, "m", text_of(150));
  RequestParams p = greedy(12);
  p.logprobs = 3;
  auto single = rt->complete_tokens("m", prompt, p);
  ASSERT_TRUE(single.ok());
  const int64_t before = control->tokens_forwarded.load();
  const auto choices = run_n(*rt, "m", prompt, p, 3);
  ASSERT_EQ(choices.size(), 3u);
  for (const Choice& c : choices) {
    ASSERT_TRUE(c.error.ok()) << c.error.to_string();
    EXPECT_EQ(c.tokens, single->generated);
    ASSERT_EQ(c.logprobs.size(), single->logprobs.size());
    for (size_t i = 0; i < c.logprobs.size(); ++i)
      EXPECT_EQ(c.logprobs[i].logprob, single->logprobs[i].logprob) << "token " << i;
    EXPECT_EQ(c.stats.prompt_tokens, static_cast<int64_t>(prompt.size()));
  }
  // One prefill of the prompt, then each choice feeds back its own tokens (the last
  // sampled token of each is never fed).
  const int64_t forwarded = control->tokens_forwarded.load() - before;
  EXPECT_EQ(forwarded, static_cast<int64_t>(prompt.size()) + 3 * (12 - 1));
}

TEST(Fork, SeededChoicesDifferButRepeatAndChoiceZeroIsTheSingleRun) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 4)).ok());
  const auto prompt = prompt_of(*rt, "m", text_of(40));
  RequestParams p;
  p.response_tokens = 16;
  p.sampling.temperature = 1.5f;
  p.sampling.seed = 1234;
  const auto a = run_n(*rt, "m", prompt, p, 4);
  const auto b = run_n(*rt, "m", prompt, p, 4);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(a[i].tokens, b[i].tokens) << "choice " << i;
  EXPECT_NE(a[0].tokens, a[1].tokens);
  EXPECT_NE(a[1].tokens, a[2].tokens);
  auto single = rt->complete_tokens("m", prompt, p);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(a[0].tokens, single->generated);
  RequestParams p3 = p;
  p3.sampling.seed = 1236;  // choice 2's seed
  auto third = rt->complete_tokens("m", prompt, p3);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(a[2].tokens, third->generated);
}

TEST(Fork, MoreChoicesThanSequencesIsRefusedNamingN) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  const auto prompt = prompt_of(*rt, "m", "hello");
  auto ids = rt->infer_n("m", prompt, greedy(4), std::vector<StreamSink>(3));
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("n (3"), std::string::npos) << ids.status().message();
}

TEST(Fork, WaitsForEnoughSequencesAndCancellingTheFirstEndsTheOthers) {
  auto control = std::make_shared<StubControl>();
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 3, control)).ok());
  const auto prompt = prompt_of(*rt, "m", text_of(30));
  // One long single request holds a sequence: a 3-choice request must wait for it.
  control->step_delay_us = 2000;
  std::promise<void> long_done;
  StreamSink sink;
  sink.on_done = [&](const RequestStats&) { long_done.set_value(); };
  sink.on_error = [&](const Status&) { long_done.set_value(); };
  auto blocker = rt->infer("m", prompt, greedy(40), sink);
  ASSERT_TRUE(blocker.ok());
  const auto choices = run_n(*rt, "m", prompt, greedy(5), 3);
  ASSERT_EQ(choices.size(), 3u);
  for (const Choice& c : choices) {
    EXPECT_TRUE(c.error.ok());
    EXPECT_EQ(c.tokens.size(), 5u);
  }
  long_done.get_future().wait();

  // Cancelled while queued behind another request: every choice ends, none hangs.
  auto blocker2 = rt->infer("m", prompt, greedy(30), StreamSink{});
  ASSERT_TRUE(blocker2.ok());
  std::vector<std::promise<void>> ends(3);
  std::vector<StreamSink> sinks(3);
  for (size_t i = 0; i < 3; ++i) {
    sinks[i].on_done = [&ends, i](const RequestStats&) { ends[i].set_value(); };
    sinks[i].on_error = [&ends, i](const Status&) { ends[i].set_value(); };
  }
  auto ids = rt->infer_n("m", prompt, greedy(30), std::move(sinks));
  ASSERT_TRUE(ids.ok());
  rt->cancel(ids->front());
  for (auto& e : ends)
    EXPECT_EQ(e.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  control->step_delay_us = 0;
}

TEST(Fork, TheQueueBoundCountsEveryChoice) {
  auto control = std::make_shared<StubControl>();
  auto rt = make_runtime();
  ModelConfig cfg = stub_config("m", 2, control);
  cfg.max_queue = 1;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const auto prompt = prompt_of(*rt, "m", text_of(20));
  control->step_delay_us = 2000;
  std::vector<RequestId> running;
  for (int i = 0; i < 2; ++i) running.push_back(*rt->infer("m", prompt, greedy(200), {}));
  for (int i = 0; i < 2000 && rt->model_info("m")->active_requests < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(rt->model_info("m")->active_requests, 2);
  // Both sequences busy, room for one waiting sequence: two choices do not fit, one does.
  auto two = rt->infer_n("m", prompt, greedy(2), std::vector<StreamSink>(2));
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), ErrorCode::kResourceExhausted);
  auto one = rt->infer("m", prompt, greedy(2), {});
  EXPECT_TRUE(one.ok()) << one.status().to_string();
  for (RequestId id : running) rt->cancel(id);
  control->step_delay_us = 0;
}

// The engine's kv_copy (a memcpy of the prompt's cells) for each KV type: every choice
// decodes what one sequence decodes alone, token for token and logprob for logprob.
class ForkKvType : public ::testing::TestWithParam<KvType> {};

TEST_P(ForkKvType, ForkedChoicesMatchTheSingleRun) {
  const std::string path =
      std::string(HEARTH_SHARED_DIR) + "/reference/models/small-llama-q4_0.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  auto rt = make_runtime();
  ModelConfig cfg = engine_config("m", path, /*n_seq_max=*/3, /*caching=*/false);
  cfg.kv_type = GetParam();
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const auto prompt = prompt_of(*rt, "m", "Once upon a time, in a small village by the sea,");
  RequestParams p = greedy(6);
  p.logprobs = 2;
  auto single = rt->complete_tokens("m", prompt, p);
  ASSERT_TRUE(single.ok()) << single.status().to_string();
  const auto choices = run_n(*rt, "m", prompt, p, 3);
  ASSERT_EQ(choices.size(), 3u);
  for (const Choice& c : choices) {
    ASSERT_TRUE(c.error.ok()) << c.error.to_string();
    EXPECT_EQ(c.tokens, single->generated);
    ASSERT_EQ(c.logprobs.size(), single->logprobs.size());
    for (size_t i = 0; i < c.logprobs.size(); ++i)
      EXPECT_EQ(c.logprobs[i].logprob, single->logprobs[i].logprob) << "token " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, ForkKvType,
                         ::testing::Values(KvType::kF16, KvType::kQ8_0, KvType::kQ4_0),
                         [](const auto& info) { return std::string(kv_type_name(info.param)); });

}  // namespace
}  // namespace hearth::runtime
