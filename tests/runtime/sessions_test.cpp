// Sticky sessions (RequestParams::session_id, Runtime::continue_session): a session's
// next turn extends its pinned sequence with no cache lookup (hit kind continuation),
// bit-identical to the same prompt run cold; no_session / sticky_busy; idle expiry and
// LRU release save the session's cells so a sessionless request is still warm.
#include <filesystem>
#include <future>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

// The cache's own lookup counters: a continuation must leave every one unchanged.
uint64_t lookups(Runtime& rt) {
  auto c = rt.cache_counters();
  return c["hits_exact"] + c["hits_resume"] + c["hits_longest_prefix"] + c["hits_radix"] +
         c["misses"] + c["longest_prefix_probes"];
}

struct Streamed {
  Status error;
  RequestStats stats;
  std::vector<TokenId> tokens;
};

// continue_session, waited for.
Streamed run_continue(Runtime& rt, const std::string& session, std::span<const TokenId> suffix,
                      const RequestParams& p) {
  auto out = std::make_shared<Streamed>();
  auto done = std::make_shared<std::promise<void>>();
  StreamSink sink;
  sink.on_token = [out](TokenId t) { out->tokens.push_back(t); };
  sink.on_done = [out, done](const RequestStats& s) {
    out->stats = s;
    done->set_value();
  };
  sink.on_error = [out, done](const Status& e) {
    out->error = e;
    done->set_value();
  };
  auto id = rt.continue_session("m", session, suffix, p, std::move(sink));
  if (!id.ok()) return Streamed{id.status(), {}, {}};
  done->get_future().wait();
  return *out;
}

RequestParams in_session(const std::string& id, RequestParams p = greedy(16)) {
  p.session_id = id;
  return p;
}

std::vector<TokenId> joined(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The cost rule with a write rate so slow that no policy save (cold, finish) is worth it:
// only the unconditional evict saves of session releases write rows.
ModelConfig no_policy_saves(ModelConfig c) {
  c.policy.min_tokens = ModelSavePolicy::kCostRule;
  c.policy.write_bytes_per_s = 1;
  c.policy.prefill_tokens_per_s = 1;
  return c;
}

std::vector<SessionInfo> sessions_of(Runtime& rt) {
  auto info = rt.model_info("m");
  EXPECT_TRUE(info.ok());
  return info.ok() ? info->sessions : std::vector<SessionInfo>{};
}

TEST(Sessions, SecondTurnContinuesThePinnedSequenceWithoutLookup) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  const auto prompt = *rt->tokenize("m", text_of(300));
  auto t1 = rt->complete_tokens("m", prompt, in_session("chat-1"));
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  EXPECT_NE(t1->cache_hit_kind, CacheHitKind::kContinuation);  // it opened the session
  auto open = sessions_of(*rt);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].id, "chat-1");
  EXPECT_FALSE(open[0].busy);
  EXPECT_EQ(open[0].n_tokens, static_cast<int64_t>(t1->context_tokens.size()));

  ASSERT_TRUE(rt->cache_flush());
  const uint64_t before = lookups(*rt);
  const auto suffix = *rt->tokenize("m", " and the user asked again", false);
  Streamed t2 = run_continue(*rt, "chat-1", suffix, greedy(16));
  ASSERT_TRUE(t2.error.ok()) << t2.error.to_string();
  EXPECT_EQ(t2.stats.cache_hit_kind, CacheHitKind::kContinuation);
  EXPECT_EQ(t2.stats.cache_delta.read, t1->committed_tokens);
  EXPECT_EQ(t2.stats.prompt_tokens,
            static_cast<int64_t>(t1->context_tokens.size() + suffix.size()));
  EXPECT_EQ(lookups(*rt), before) << "a continuation looked the prompt up in the cache";
  EXPECT_EQ(rt->cache_counters()["runtime_hits_continuation"], 1u);
  // Same tokens as the whole conversation run cold.
  const auto full = joined(t1->context_tokens, suffix);
  EXPECT_EQ(t2.tokens, cold_reference(full, greedy(16)).generated);
  EXPECT_EQ(sessions_of(*rt)[0].n_tokens, static_cast<int64_t>(full.size() + t2.tokens.size()));
}

class SessionsWarmCold : public ::testing::TestWithParam<bool> {};

// The chat path: the client sends the whole conversation with the session id.
TEST_P(SessionsWarmCold, FullPromptContinuationMatchesCold) {
  RequestParams p = greedy(24);
  if (GetParam()) {
    p.sampling.temperature = 0.9f;
    p.sampling.top_k = 40;
    p.sampling.seed = 77;
  }
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  auto t1 = rt->complete("m", text_of(200), in_session("s", p));
  ASSERT_TRUE(t1.ok());
  const auto prompt2 = joined(t1->context_tokens, *rt->tokenize("m", " next question", false));
  auto t2 = rt->complete_tokens("m", prompt2, in_session("s", p));
  ASSERT_TRUE(t2.ok()) << t2.status().to_string();
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kContinuation);
  expect_same_output(*t2, cold_reference(prompt2, p));
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSeeded, SessionsWarmCold, ::testing::Bool());

TEST(Sessions, EditedHistoryFallsBackToNormalAdmission) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  auto t1 = rt->complete("m", text_of(200), in_session("s"));
  ASSERT_TRUE(t1.ok());
  // The client changed the last reply: the session's tokens no longer lead the prompt.
  auto edited = *rt->tokenize("m", text_of(200) + " a different reply", true);
  auto t2 = rt->complete_tokens("m", edited, in_session("s"));
  ASSERT_TRUE(t2.ok());
  EXPECT_NE(t2->cache_hit_kind, CacheHitKind::kContinuation);
  EXPECT_EQ(rt->cache_counters()["runtime_session_fallbacks"], 1u);
  expect_same_output(*t2, cold_reference(edited, greedy(16)));
  // The session now holds the new conversation and continues it.
  auto t3 = rt->complete_tokens("m", joined(t2->context_tokens, {5, 6, 7}), in_session("s"));
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->cache_hit_kind, CacheHitKind::kContinuation);
}

TEST(Sessions, UnknownOrReleasedSessionIsNoSession) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  const std::vector<TokenId> suffix = {10, 11, 12};
  Streamed none = run_continue(*rt, "never-opened", suffix, greedy(4));
  EXPECT_EQ(none.error.code(), ErrorCode::kNotFound);
  EXPECT_EQ(session_error_code(none.error), kNoSession) << none.error.to_string();
  Status rel = rt->release_session("m", "never-opened");
  EXPECT_EQ(session_error_code(rel), kNoSession) << rel.to_string();

  ASSERT_TRUE(rt->complete("m", text_of(100), in_session("s")).ok());
  ASSERT_TRUE(rt->release_session("m", "s").ok());
  EXPECT_TRUE(sessions_of(*rt).empty());
  EXPECT_EQ(session_error_code(run_continue(*rt, "s", suffix, greedy(4)).error), kNoSession);
  EXPECT_EQ(rt->cache_counters()["runtime_sessions_released_explicit"], 1u);
}

TEST(Sessions, SecondRequestOnABusySessionIsStickyBusy) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 2000;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2, ctl)).ok());
  ASSERT_TRUE(rt->complete("m", text_of(100), in_session("s", greedy(2))).ok());
  // A long turn in flight.
  auto done = std::make_shared<std::promise<void>>();
  StreamSink sink;
  sink.on_done = [done](const RequestStats&) { done->set_value(); };
  sink.on_error = [done](const Status&) { done->set_value(); };
  const auto prompt = *rt->tokenize("m", text_of(120));
  auto running = rt->infer("m", prompt, in_session("s", greedy(200)), std::move(sink));
  ASSERT_TRUE(running.ok());
  auto second = rt->complete("m", text_of(100), in_session("s"));
  EXPECT_EQ(second.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(session_error_code(second.status()), kStickyBusy) << second.status().to_string();
  EXPECT_EQ(session_error_code(run_continue(*rt, "s", std::vector<TokenId>{1}, greedy(2)).error),
            kStickyBusy);
  EXPECT_EQ(session_error_code(rt->release_session("m", "s")), kStickyBusy);
  rt->cancel(*running);
  done->get_future().wait();
  // Idle again: the session serves its next turn.
  EXPECT_TRUE(run_continue(*rt, "s", std::vector<TokenId>{1, 2}, greedy(2)).error.ok());
}

TEST(Sessions, IdleExpirySavesTheRowForSessionlessRequests) {
  auto rt = make_runtime();
  ModelConfig cfg = no_policy_saves(stub_config("m", 1));
  cfg.session_idle_ms = 30;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto t1 = rt->complete("m", text_of(200), in_session("s"));
  ASSERT_TRUE(t1.ok());
  ASSERT_FALSE(t1->finish_key) << "the policy was meant to skip the finish save";
  wait_for_counter(*rt, "runtime_sessions_released_idle", 1);
  ASSERT_TRUE(rt->cache_flush());
  EXPECT_EQ(rt->cache_counters()["saves_evict"], 1u);
  EXPECT_TRUE(sessions_of(*rt).empty());
  EXPECT_EQ(session_error_code(run_continue(*rt, "s", std::vector<TokenId>{1}, greedy(2)).error),
            kNoSession);
  // The sequence's cells were freed: the next request is warm from the saved row.
  const auto prompt2 = joined(t1->context_tokens, {40, 41, 42});
  auto t2 = rt->complete_tokens("m", prompt2, greedy(16));
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kPartial);
  EXPECT_EQ(t2->cache_delta.read, t1->committed_tokens);
  expect_same_output(*t2, cold_reference(prompt2, greedy(16)));
}

TEST(Sessions, LeastRecentlyUsedIdleSessionGivesUpItsSequence) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(no_policy_saves(stub_config("m", 2))).ok());
  auto a = rt->complete("m", text_of(150, 'a'), in_session("a"));
  auto b = rt->complete("m", text_of(150, 'k'), in_session("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto open = sessions_of(*rt);
  ASSERT_EQ(open.size(), 2u);
  EXPECT_NE(open[0].seq, open[1].seq);
  // Every sequence is pinned: a sessionless request takes the one of "a" (used first).
  ASSERT_TRUE(rt->complete("m", text_of(90, 'x'), greedy(4)).ok());
  EXPECT_EQ(rt->cache_counters()["runtime_sessions_released_lru"], 1u);
  ASSERT_TRUE(rt->cache_flush());
  EXPECT_EQ(rt->cache_counters()["saves_evict"], 1u);
  open = sessions_of(*rt);
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].id, "b");
  EXPECT_EQ(session_error_code(run_continue(*rt, "a", std::vector<TokenId>{1}, greedy(2)).error),
            kNoSession);
  Streamed cb = run_continue(*rt, "b", std::vector<TokenId>{1, 2}, greedy(2));
  EXPECT_EQ(cb.stats.cache_hit_kind, CacheHitKind::kContinuation);
}

TEST(Sessions, RefusedCombinationsNameTheField) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 2)).ok());
  RequestParams p = in_session("s");
  p.cache_prompt = false;
  auto r = rt->complete("m", "hello", p);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cache_prompt"), std::string::npos);
  auto bad = rt->complete("m", "hello", in_session("a b"));
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("session_id"), std::string::npos);
  auto n2 =
      rt->infer_n("m", *rt->tokenize("m", "hello"), in_session("s"), std::vector<StreamSink>(2));
  EXPECT_EQ(n2.status().code(), ErrorCode::kInvalidArgument);
  // None of the refusals opened the session.
  EXPECT_TRUE(sessions_of(*rt).empty());
}

// Warm == cold through the real engine (stories260K), slot affinity off: a session still
// continues its pinned sequence, and its logits equal the cold run's bit for bit.
TEST(Sessions, EngineContinuationMatchesCold) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(engine_config("m", kModel, 2)).ok());
  RequestParams p = greedy(8);
  auto t1 = rt->complete("m", "Once upon a time, there was a little girl named Lily.",
                         in_session("story", p));
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  const auto prompt2 = joined(t1->context_tokens, *rt->tokenize("m", " She saw a dog.", false));
  auto t2 = rt->complete_tokens("m", prompt2, in_session("story", p));
  ASSERT_TRUE(t2.ok()) << t2.status().to_string();
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kContinuation);
  EXPECT_EQ(t2->cache_delta.read, t1->committed_tokens);

  auto cold_rt = make_runtime();
  ASSERT_TRUE(cold_rt->load_model(engine_config("m", kModel, 1, false)).ok());
  auto cold = cold_rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->cache_hit_kind, CacheHitKind::kCold);
  expect_same_output(*t2, *cold);
}

}  // namespace
}  // namespace hearth::runtime
