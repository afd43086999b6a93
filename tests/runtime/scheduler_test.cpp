// Acceptance: shared-prefix agents, concurrency beyond n_seq_max, FIFO admission,
// cancellation, supervision, admission control, batch budget.
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <mutex>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

// Collects a streaming request's events; wait() blocks until done or error.
struct Collector {
  std::mutex mu;
  std::string text;
  std::vector<TokenId> tokens;
  std::optional<RequestStats> stats;
  std::optional<Status> error;
  std::promise<void> finished;
  std::atomic<int> after_cancel{0};
  std::atomic<bool> cancel_sent{false};
  std::function<void(size_t)> on_nth_token;

  StreamSink sink() {
    StreamSink s;
    s.on_text = [this](std::string_view t) {
      std::lock_guard l(mu);
      text += t;
    };
    s.on_token = [this](TokenId t) {
      size_t n;
      {
        std::lock_guard l(mu);
        tokens.push_back(t);
        n = tokens.size();
      }
      if (cancel_sent) ++after_cancel;
      if (on_nth_token) on_nth_token(n);
    };
    s.on_done = [this](const RequestStats& st) {
      stats = st;
      finished.set_value();
    };
    s.on_error = [this](const Status& e) {
      error = e;
      finished.set_value();
    };
    return s;
  }
};

TEST(Agents, SharedSystemPromptOneColdPrefillThreePrefixHits) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 4);
  cfg.policy = small_policy(/*min_tokens=*/256, /*align=*/256);
  cfg.slot_affinity = false;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  const std::string system = text_of(1000, 'k');
  auto prompt_for = [&](int agent) {
    return system + "\nagent " + std::to_string(agent) + ": what is your task?";
  };
  RequestParams p = greedy(16);
  auto first = rt->complete("m", prompt_for(0), p);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->cache_hit_kind, CacheHitKind::kCold);
  wait_for_counter(*rt, "saves_cold", 1);
  std::vector<std::future<Result<CompletionResult>>> futures;
  for (int a = 1; a <= 3; ++a)
    futures.push_back(
        std::async(std::launch::async, [&, a] { return rt->complete("m", prompt_for(a), p); }));
  for (int a = 1; a <= 3; ++a) {
    auto r = futures[static_cast<size_t>(a - 1)].get();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->cache_hit_kind, CacheHitKind::kPartial);
    // At least the cold row (1000+ - 32, aligned down to 256); the radix lookup may also
    // find the longer common prefix inside agent 0's finish row.
    EXPECT_GE(r->cache_delta.read, 768);
    auto tokens = *rt->tokenize("m", prompt_for(a));
    expect_same_output(*r, cold_reference(tokens, p));
  }
  auto c = rt->cache_counters();
  EXPECT_EQ(c["runtime_misses"], 1u);
  EXPECT_EQ(c["runtime_hits_longest_prefix"], 3u);
  EXPECT_EQ(c["saves_cold"], 1u);
}

TEST(Scheduler, EightConcurrentOnFourSequencesFifoAndIdenticalToSolo) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 200;
  auto rt = make_runtime();
  auto cfg = stub_config("m", 4, ctl);
  cfg.n_batch = 64;
  cfg.prefill_chunk_size = 16;
  cfg.policy.min_tokens = 1 << 30;  // no cache: each output must equal a solo cold run
  cfg.policy.cold_min_tokens = 1 << 30;
  cfg.slot_affinity = false;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  constexpr int kN = 8;
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::unique_ptr<Collector>> cols;
  std::atomic<int> first_token_rank{0};
  std::vector<int> rank(kN, -1);
  RequestParams p = greedy(12);
  p.capture_logits = false;
  for (int i = 0; i < kN; ++i) {
    prompts.push_back(*rt->tokenize("m", text_of(40 + 13 * static_cast<size_t>(i), 'a' + i)));
    cols.push_back(std::make_unique<Collector>());
    cols.back()->on_nth_token = [&, i](size_t n) {
      if (n == 1) rank[static_cast<size_t>(i)] = first_token_rank++;
    };
  }
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(rt->infer("m", prompts[i], p, cols[i]->sink()).ok());
  for (auto& c : cols) c->finished.get_future().wait();
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(cols[i]->stats) << "request " << i << " did not finish";
    auto solo = cold_reference(prompts[i], p);
    EXPECT_EQ(cols[i]->tokens, solo.generated) << "request " << i;
    EXPECT_EQ(cols[i]->text, solo.reply);
  }
  // FIFO: the four queued requests got their first token in submission order, after the
  // first four.
  for (int i = 4; i < kN; ++i) EXPECT_GE(rank[i], 4) << i;
  for (int i = 5; i < kN; ++i) EXPECT_GT(rank[i], rank[i - 1]) << i;
  EXPECT_LE(ctl->max_tokens_seen.load(), 64);
  EXPECT_GE(ctl->max_rows_seen.load(), 2);  // several sequences shared forward passes
}

TEST(Scheduler, SingleSequenceCompletesInSubmissionOrder) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::unique_ptr<Collector>> cols;
  for (int i = 0; i < 4; ++i) {
    cols.push_back(std::make_unique<Collector>());
    auto sink = cols.back()->sink();
    auto done = sink.on_done;
    sink.on_done = [&, i, done](const RequestStats& s) {
      {
        std::lock_guard l(mu);
        order.push_back(i);
      }
      done(s);
    };
    auto prompt = *rt->tokenize("m", text_of(30, 'a' + i));
    ASSERT_TRUE(rt->infer("m", prompt, greedy(8), sink).ok());
  }
  for (auto& c : cols) c->finished.get_future().wait();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Scheduler, CancelDuringStreamingEndsWithinOneTickAndStillSaves) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 500;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2, ctl)).ok());
  auto prompt = *rt->tokenize("m", text_of(200));
  Collector c;
  RequestId id = 0;
  std::atomic<bool> id_ready{false};
  c.on_nth_token = [&](size_t n) {
    if (n == 5) {
      while (!id_ready) std::this_thread::yield();
      c.cancel_sent = true;
      rt->cancel(id);
      rt->cancel(id);  // idempotent
    }
  };
  RequestParams p = greedy(100000);
  p.response_tokens = 3000;
  auto r = rt->infer("m", prompt, p, c.sink());
  ASSERT_TRUE(r.ok());
  id = *r;
  id_ready = true;
  c.finished.get_future().wait();
  ASSERT_TRUE(c.stats);
  EXPECT_TRUE(c.stats->cancelled);
  EXPECT_EQ(c.stats->finish_reason, FinishReason::kCancelled);
  EXPECT_LE(c.after_cancel.load(), 1);  // at most the token of the tick in flight
  // The runtime's own count: at most the step already running when cancel() came.
  EXPECT_GE(c.stats->steps_after_cancel, 0);
  EXPECT_LE(c.stats->steps_after_cancel, 1);
  EXPECT_GE(rt->model_info("m")->scheduler_steps, 5u);
  EXPECT_EQ(rt->model_info("m")->active_requests, 0);
  ASSERT_TRUE(c.stats->finish_key);  // the finish save still happened
  wait_for_counter(*rt, "saves_finish", 1);
  rt->cancel(id);  // after the end: still fine
  rt->cancel(987654321);
}

TEST(Supervision, WorkerFaultFailsOnlyThatRequestAndOtherModelNeverNotices) {
  auto ctl_a = std::make_shared<StubControl>();
  auto ctl_b = std::make_shared<StubControl>();
  ctl_b->step_delay_us = 300;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("a", 2, ctl_a, "a.gguf")).ok());
  ASSERT_TRUE(rt->load_model(stub_config("b", 2, ctl_b, "b.gguf")).ok());
  auto prompt_b = *rt->tokenize("b", text_of(150, 'q'));
  Collector cb;
  RequestParams pb = greedy(60);
  pb.capture_logits = false;
  ASSERT_TRUE(rt->infer("b", prompt_b, pb, cb.sink()).ok());

  ctl_a->throw_at_step = ctl_a->steps.load() + 3;
  auto prompt_a = *rt->tokenize("a", text_of(150));
  auto failed = rt->complete_tokens("a", prompt_a, greedy(40));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kInternal);
  EXPECT_NE(failed.status().message().find("injected throw"), std::string::npos);

  auto next = rt->complete_tokens("a", prompt_a, greedy(40));  // same model serves again
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  expect_same_output(*next, cold_reference(prompt_a, greedy(40)));
  EXPECT_EQ(rt->model_info("a")->restarts, 1);

  // A backend error (not a throw) is supervised the same way.
  ctl_a->fail_at_step = ctl_a->steps.load() + 2;
  EXPECT_EQ(rt->complete_tokens("a", prompt_a, greedy(40)).status().code(), ErrorCode::kInternal);
  EXPECT_TRUE(rt->complete_tokens("a", prompt_a, greedy(4)).ok());

  cb.finished.get_future().wait();
  ASSERT_TRUE(cb.stats) << (cb.error ? cb.error->to_string() : "");
  EXPECT_EQ(cb.tokens, cold_reference(prompt_b, pb).generated);
  EXPECT_EQ(rt->model_info("b")->restarts, 0);
}

TEST(Supervision, RestartLimitMarksModelFailed) {
  auto ctl = std::make_shared<StubControl>();
  auto rt = make_runtime();
  auto cfg = stub_config("a", 1, ctl);
  cfg.max_restarts = 1;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto prompt = *rt->tokenize("a", text_of(20));
  ctl->fail_at_step = ctl->steps.load() + 1;
  EXPECT_FALSE(rt->complete_tokens("a", prompt, greedy(4)).ok());
  ctl->fail_at_step = ctl->steps.load() + 1;
  EXPECT_FALSE(rt->complete_tokens("a", prompt, greedy(4)).ok());
  for (int i = 0; i < 100 && rt->model_info("a")->status != ModelStatus::kFailed; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(rt->model_info("a")->status, ModelStatus::kFailed);
  EXPECT_EQ(rt->complete_tokens("a", prompt, greedy(4)).status().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(rt->unload_model("a").ok());
}

TEST(Admission, QueueFullIsResourceExhausted) {
  // The collectors outlive the runtime: its worker may still call their sinks.
  Collector c1, c2, c3;
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 10000;  // the first request holds the sequence for ~0.5 s
  auto rt = make_runtime();
  auto cfg = stub_config("m", 1, ctl);
  cfg.max_queue = 1;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto prompt = *rt->tokenize("m", text_of(20));
  RequestParams p = greedy(50);
  ASSERT_TRUE(rt->infer("m", prompt, p, c1.sink()).ok());
  ASSERT_TRUE(rt->infer("m", prompt, p, c2.sink()).ok());
  auto third = rt->infer("m", prompt, p, c3.sink());
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), ErrorCode::kResourceExhausted);
  c1.finished.get_future().wait();
  c2.finished.get_future().wait();
}

TEST(Admission, BadInputsAreErrors) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  EXPECT_EQ(rt->complete_tokens("m", {}, greedy()).status().code(), ErrorCode::kInvalidArgument);
  std::vector<TokenId> bad = {5, 999999};
  EXPECT_EQ(rt->complete_tokens("m", bad, greedy()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt->complete("nope", "x", greedy()).status().code(), ErrorCode::kNotFound);
  std::vector<TokenId> huge(5000, 70);
  EXPECT_EQ(rt->complete_tokens("m", huge, greedy()).status().code(), ErrorCode::kOutOfRange);
}

// Sampling knobs are range-checked once, here, with errors naming the field and value.
TEST(Admission, SamplingOutOfRangeNamesTheField) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  struct Case {
    const char* field;
    std::function<void(SamplingOptions&)> set;
  };
  const Case cases[] = {
      {"sampling.temperature", [](SamplingOptions& o) { o.temperature = -1; }},
      {"sampling.temperature", [](SamplingOptions& o) { o.temperature = std::nanf(""); }},
      {"sampling.top_k", [](SamplingOptions& o) { o.top_k = -3; }},
      {"sampling.top_p", [](SamplingOptions& o) { o.top_p = 2; }},
      {"sampling.top_p", [](SamplingOptions& o) { o.top_p = 0; }},
      {"sampling.min_p", [](SamplingOptions& o) { o.min_p = -0.5f; }},
      {"sampling.repetition_penalty", [](SamplingOptions& o) { o.repetition_penalty = 0; }},
      {"sampling.frequency_penalty",
       [](SamplingOptions& o) { o.frequency_penalty = std::numeric_limits<float>::infinity(); }},
  };
  for (const Case& c : cases) {
    RequestParams p = greedy();
    c.set(p.sampling);
    const std::vector<TokenId> prompt = {70, 71};
    auto r = rt->complete_tokens("m", prompt, p);
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.field), std::string::npos) << r.status().message();
  }
  RequestParams none = greedy();
  none.response_tokens = 0;
  const std::vector<TokenId> prompt = {70};
  EXPECT_NE(rt->complete_tokens("m", prompt, none).status().message().find("response_tokens"),
            std::string::npos);
}

// No entry point feeds the backend a token id outside the vocabulary: a caller's bad id is
// InvalidArgument naming the id and the vocabulary size, not a context overflow.
TEST(Admission, OutOfVocabularyTokenIsInvalidArgumentAtEveryEntry) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  const int32_t n_vocab = rt->model_info("m")->n_vocab;
  ASSERT_EQ(n_vocab, StubBackend::kVocab);
  for (TokenId id : {n_vocab, -1}) {
    const std::vector<TokenId> bad = {5, id};
    const Status by_complete = rt->complete_tokens("m", bad, greedy()).status();
    const Status by_prefill = rt->prefill_only("m", bad, greedy()).status();
    const Status by_infer = rt->infer("m", bad, greedy(), StreamSink{}).status();
    for (const Status& s : {by_complete, by_prefill, by_infer}) {
      EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
      EXPECT_NE(s.message().find(std::to_string(id)), std::string::npos) << s.to_string();
      EXPECT_NE(s.message().find("vocabulary of " + std::to_string(n_vocab)), std::string::npos)
          << s.to_string();
    }
  }
}

TEST(Scheduler, StopSequenceEndsReplyBeforeMatch) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  auto full = rt->complete("m", text_of(50), greedy(40));
  ASSERT_TRUE(full.ok());
  ASSERT_GE(full->reply.size(), 20u);
  const std::string stop = full->reply.substr(10, 3);
  const size_t at = full->reply.find(stop);
  RequestParams p = greedy(40);
  p.stop_sequences = {stop};
  auto cut = rt->complete("m", text_of(50), p);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->reply, full->reply.substr(0, at));
  EXPECT_EQ(cut->finish_reason, FinishReason::kStop);
  ASSERT_TRUE(cut->stop_sequence);
  EXPECT_EQ(*cut->stop_sequence, stop);
  EXPECT_EQ(full->finish_reason, FinishReason::kLength);
}

TEST(Scheduler, BatchStrategiesAllProduceSoloOutputs) {
  for (BatchStrategy s :
       {BatchStrategy::kDecodeFirst, BatchStrategy::kPrefillFirst, BatchStrategy::kBalanced}) {
    auto ctl = std::make_shared<StubControl>();
    auto rt = make_runtime();
    auto cfg = stub_config("m", 3, ctl);
    cfg.batch_planner = builtin_batch_planner(s);
    cfg.n_batch = 32;
    cfg.prefill_chunk_size = 0;
    cfg.policy.min_tokens = 1 << 30;
    cfg.policy.cold_min_tokens = 1 << 30;
    ASSERT_TRUE(rt->load_model(cfg).ok());
    std::vector<std::future<Result<CompletionResult>>> fs;
    std::vector<std::vector<TokenId>> prompts;
    for (int i = 0; i < 3; ++i) prompts.push_back(*rt->tokenize("m", text_of(90 + 7 * i, 'c' + i)));
    for (int i = 0; i < 3; ++i)
      fs.push_back(std::async(std::launch::async,
                              [&, i] { return rt->complete_tokens("m", prompts[i], greedy(10)); }));
    for (int i = 0; i < 3; ++i) {
      auto r = fs[i].get();
      ASSERT_TRUE(r.ok());
      expect_same_output(*r, cold_reference(prompts[i], greedy(10)));
    }
    EXPECT_LE(ctl->max_tokens_seen.load(), 32);
  }
}

}  // namespace
}  // namespace hearth::runtime

namespace hearth::runtime {
namespace {
using namespace testing;

TEST(Scheduler, CancelWhileQueuedEndsWithoutWaitingForASequence) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 2000;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, ctl)).ok());
  auto prompt = *rt->tokenize("m", text_of(20));
  std::promise<RequestStats> first_done, second_done;
  StreamSink s1, s2;
  s1.on_done = [&](const RequestStats& s) { first_done.set_value(s); };
  s2.on_done = [&](const RequestStats& s) { second_done.set_value(s); };
  RequestParams p = greedy(400);
  auto a = rt->infer("m", prompt, p, s1);
  auto b = rt->infer("m", prompt, p, s2);
  ASSERT_TRUE(a.ok() && b.ok());
  rt->cancel(*b);
  auto f2 = second_done.get_future();
  ASSERT_EQ(f2.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto st = f2.get();
  EXPECT_TRUE(st.cancelled);
  EXPECT_EQ(st.completion_tokens, 0);
  EXPECT_GE(st.steps_after_cancel, 0);  // left the queue before the next tick's step
  EXPECT_LE(st.steps_after_cancel, 1);
  auto f1 = first_done.get_future();
  EXPECT_EQ(f1.wait_for(std::chrono::milliseconds(1)),
            std::future_status::timeout);  // still running
  rt->cancel(*a);
  EXPECT_TRUE(f1.get().cancelled);
}

}  // namespace
}  // namespace hearth::runtime
