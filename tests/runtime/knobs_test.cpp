// Runtime knobs (issue #23 items 5-7): the batch-strategy interface, the default thread
// count, the cost save rule, cache_prompt = false, shutdown(model) and the pressure
// scheduler's admin calls, all through hearth::runtime::Runtime on the stub backend.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "runtime/batch_planner.h"
#include "runtime/save_policy.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {

using testing::greedy;
using testing::make_runtime;
using testing::stub_config;
using testing::text_of;

// ---------------------------------------------------------------- batch strategies

// A user strategy: one prefill token per row per tick, decode rows first.
class OneTokenPrefill final : public BatchPlanner {
 public:
  std::vector<PlanRow> plan(std::span<const PlanCandidate> c, int32_t budget,
                            int32_t) const override {
    std::vector<PlanRow> rows;
    for (const PlanCandidate& x : c) {
      if (budget-- <= 0) break;
      rows.push_back({x.slot, x.decode, x.decode ? 0 : 1});
    }
    return rows;
  }
  std::string name() const override { return "one_token"; }
};

// A broken strategy: asks for more prefill than the slot has left.
class Overreach final : public BatchPlanner {
 public:
  std::vector<PlanRow> plan(std::span<const PlanCandidate> c, int32_t, int32_t) const override {
    std::vector<PlanRow> rows;
    for (const PlanCandidate& x : c)
      rows.push_back({x.slot, x.decode, x.decode ? 0 : x.prefill_remaining + 5});
    return rows;
  }
  std::string name() const override { return "overreach"; }
};

TEST(BatchStrategyTest, NamesRoundTripAndUnknownIsNullopt) {
  for (BatchStrategy s :
       {BatchStrategy::kDecodeFirst, BatchStrategy::kPrefillFirst, BatchStrategy::kBalanced}) {
    EXPECT_EQ(batch_strategy_from_name(batch_strategy_name(s)), s);
    EXPECT_EQ(builtin_batch_planner(s)->name(), batch_strategy_name(s));
  }
  EXPECT_FALSE(batch_strategy_from_name("fastest").has_value());
}

TEST(BatchStrategyTest, CheckPlanNamesTheBrokenRule) {
  const PlanCandidate c[] = {{0, true, 0}, {1, false, 10}};
  const PlanRow ok[] = {{0, true, 0}, {1, false, 10}};
  EXPECT_TRUE(check_plan(c, ok, 64, 0).ok());
  const PlanRow twice[] = {{0, true, 0}, {0, true, 0}};
  EXPECT_NE(check_plan(c, twice, 64, 0).message().find("named twice"), std::string::npos);
  const PlanRow too_long[] = {{1, false, 11}};
  EXPECT_NE(check_plan(c, too_long, 64, 0).message().find("prefill_len 11"), std::string::npos);
  const PlanRow over_chunk[] = {{1, false, 8}};
  EXPECT_FALSE(check_plan(c, over_chunk, 64, 4).ok());
  const PlanRow wrong_kind[] = {{1, true, 0}};
  EXPECT_FALSE(check_plan(c, wrong_kind, 64, 0).ok());
  const PlanRow unknown[] = {{7, true, 0}};
  EXPECT_FALSE(check_plan(c, unknown, 64, 0).ok());
  EXPECT_NE(check_plan(c, ok, 5, 0).message().find("exceed n_batch"), std::string::npos);
}

TEST(BatchStrategyTest, ACustomPlannerDrivesTheScheduler) {
  auto rt = make_runtime();
  auto control = std::make_shared<StubControl>();
  auto cfg = stub_config("m", 1, control);
  cfg.batch_planner = std::make_shared<OneTokenPrefill>();
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto r = rt->complete("m", text_of(40), greedy(3));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // 40 prompt tokens (+BOS) one per tick, then the decode ticks: far more steps than the
  // built-in strategy's single 64-token slice would take.
  EXPECT_GE(control->steps.load(), 41);
  EXPECT_EQ(control->max_tokens_seen.load(), 1);
  EXPECT_EQ(rt->model_info("m")->batch_strategy, "one_token");

  // The same prompt under the default strategy is one prefill step.
  auto rt2 = make_runtime();
  auto control2 = std::make_shared<StubControl>();
  ASSERT_TRUE(rt2->load_model(stub_config("m", 1, control2)).ok());
  ASSERT_TRUE(rt2->complete("m", text_of(40), greedy(3)).ok());
  EXPECT_LT(control2->steps.load(), 10);
  EXPECT_EQ(rt2->model_info("m")->batch_strategy, "decode_first");
}

TEST(BatchStrategyTest, APlannerBreakingTheContractFailsTheRequestByName) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 1);
  cfg.batch_planner = std::make_shared<Overreach>();
  cfg.max_restarts = 0;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto r = rt->complete("m", text_of(20), greedy(2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("overreach"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("prefill_len"), std::string::npos) << r.status().message();
}

// ---------------------------------------------------------------- threads

TEST(ThreadKnobTest, DefaultDividesTheCoresAmongModels) {
  const int32_t cores = std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  EXPECT_EQ(default_thread_count(1), cores);
  EXPECT_EQ(default_thread_count(cores * 2), 1);  // never below one
  EXPECT_EQ(default_thread_count(2), std::max(1, cores / 2));

  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("a", 1)).ok());
  ASSERT_TRUE(rt->load_model(stub_config("b", 1)).ok());
  auto fixed = stub_config("c", 1);
  fixed.n_threads = 3;
  ASSERT_TRUE(rt->load_model(fixed).ok());
  EXPECT_EQ(rt->model_info("a")->n_threads, default_thread_count(1));
  EXPECT_EQ(rt->model_info("b")->n_threads, default_thread_count(2));
  EXPECT_EQ(rt->model_info("c")->n_threads, 3);

  auto bad = stub_config("d", 1);
  bad.n_threads = 257;
  auto refused = rt->load_model(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("n_threads"), std::string::npos);
}

// ---------------------------------------------------------------- the cost save rule

TEST(CostRuleTest, SavesWhenPrefillCostsMoreThanTheWrite) {
  // TinyLlama-1.1B, f16 KV: 22 layers x 2 x 256 x 2 bytes = 22,528 bytes per token.
  const uint64_t bytes = 300ull * 22528;
  EXPECT_TRUE(cost_rule_saves(300, bytes, SaveRates{90, 1e8}));    // 3.3 s vs 68 ms
  EXPECT_FALSE(cost_rule_saves(300, bytes, SaveRates{1e6, 1e8}));  // 0.3 ms vs 68 ms
  EXPECT_FALSE(cost_rule_saves(100, 100, SaveRates{100, 100}));    // equal: not worth it
  EXPECT_FALSE(cost_rule_saves(0, 0, SaveRates{100, 1e9}));
}

TEST(CostRuleTest, FixedRatesWinOverMeasurementsWhichWinOverPriors) {
  ModelSavePolicy p;
  SaveRates r = effective_rates(p, Tier::kDisk, 0, 0);
  EXPECT_EQ(r.prefill_tokens_per_s, kPriorPrefillTokensPerS);
  EXPECT_EQ(r.write_bytes_per_s, prior_write_bytes_per_s(Tier::kDisk));
  EXPECT_GT(prior_write_bytes_per_s(Tier::kRam), prior_write_bytes_per_s(Tier::kDisk));
  r = effective_rates(p, Tier::kDisk, 42, 4242);
  EXPECT_EQ(r.prefill_tokens_per_s, 42);
  EXPECT_EQ(r.write_bytes_per_s, 4242);
  p.prefill_tokens_per_s = 7;
  p.write_bytes_per_s = 77;
  r = effective_rates(p, Tier::kDisk, 42, 4242);
  EXPECT_EQ(r.prefill_tokens_per_s, 7);
  EXPECT_EQ(r.write_bytes_per_s, 77);
}

TEST(CostRuleTest, TheDefaultPolicyIsTheCostRule) {
  EXPECT_EQ(ModelSavePolicy{}.min_tokens, ModelSavePolicy::kCostRule);
  ModelSavePolicy p;
  EXPECT_TRUE(set_save_policy_field(p, "min_tokens", 512).ok());  // the spec's gate
  EXPECT_EQ(p.min_tokens, 512);
  EXPECT_TRUE(set_save_policy_field(p, "min_tokens", -1).ok());  // back to the rule
  EXPECT_EQ(p.min_tokens, ModelSavePolicy::kCostRule);
  EXPECT_FALSE(set_save_policy_field(p, "min_tokens", -2).ok());
  Status bad = set_save_policy_field(p, "write_bytes_per_s", -5);
  EXPECT_NE(bad.message().find("policy.write_bytes_per_s"), std::string::npos);
  for (const char* k : {"session_resume_wait_ms", "evict_save_timeout_ms", "prefill_tokens_per_s",
                        "write_bytes_per_s"})
    EXPECT_TRUE(set_save_policy_field(p, k, 123).ok()) << k;
  EXPECT_EQ(p.evict_save_timeout_ms, 123);
}

// A 40-token prompt on a stub model under the default (cost) policy with fixed rates.
std::optional<std::string> finish_key_with_rates(int32_t prefill_tps, int32_t write_bps,
                                                 int32_t min_tokens = ModelSavePolicy::kCostRule) {
  auto rt = make_runtime();
  auto cfg = stub_config("m", 1);
  cfg.policy = ModelSavePolicy{};
  cfg.policy.min_tokens = min_tokens;
  cfg.policy.prefill_tokens_per_s = prefill_tps;
  cfg.policy.write_bytes_per_s = write_bps;
  EXPECT_TRUE(rt->load_model(cfg).ok());
  auto r = rt->complete("m", text_of(40), greedy(4));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->finish_key : std::nullopt;
}

TEST(CostRuleTest, DecidesTheFinishSaveThroughTheRuntime) {
  // The stub packs 8 bytes per token: ~44 tokens = 352 bytes.
  EXPECT_TRUE(finish_key_with_rates(/*slow prefill*/ 10, /*fast write*/ 1 << 30).has_value());
  EXPECT_FALSE(finish_key_with_rates(/*fast prefill*/ 1 << 30, /*slow write*/ 1).has_value());
  // The spec's static gate, set explicitly, ignores the rates.
  EXPECT_FALSE(finish_key_with_rates(10, 1 << 30, /*min_tokens*/ 512).has_value());
  EXPECT_TRUE(finish_key_with_rates(1 << 30, 1, /*min_tokens*/ 8).has_value());
}

TEST(CostRuleTest, MeasuresThePrefillRate) {
  auto rt = make_runtime();
  auto control = std::make_shared<StubControl>();
  control->step_delay_us = 4000;  // 64-token slices at 4 ms: ~16,000 tokens/s
  auto cfg = stub_config("m", 1, control);
  cfg.policy = ModelSavePolicy{};
  cfg.policy.write_bytes_per_s = 1;  // 8 s per token written: never worth it
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto r = rt->complete("m", text_of(200), greedy(2));
  ASSERT_TRUE(r.ok());
  const double measured = rt->model_info("m")->prefill_tokens_per_s;
  EXPECT_GT(measured, 1000);
  EXPECT_LT(measured, 20000);
  EXPECT_FALSE(r->finish_key.has_value());
  EXPECT_GE(rt->cache_counters()["runtime_saves_skipped_cost"], 1u);
}

// ---------------------------------------------------------------- cache control

TEST(CachePromptTest, FalseMeansNoLookupAndNoSave) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  const std::string prompt = text_of(150);
  auto first = rt->complete("m", prompt, greedy(4));
  ASSERT_TRUE(first.ok() && first->finish_key);
  ASSERT_TRUE(rt->cache_flush());
  const size_t rows = rt->cache_rows().size();

  RequestParams off = greedy(4);
  off.cache_prompt = false;
  off.parent_key = first->finish_key;  // even an exact key is not looked up
  auto second = rt->complete("m", prompt, off);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->cache_hit_kind, CacheHitKind::kCold);  // no sticky reuse either
  EXPECT_EQ(second->cache_delta.read, 0);
  EXPECT_FALSE(second->finish_key.has_value());
  EXPECT_EQ(second->generated, first->generated);
  // Its cells are not saved later either (evict, shutdown).
  ASSERT_TRUE(rt->evict("m").ok());
  ASSERT_TRUE(rt->cache_flush());
  EXPECT_EQ(rt->cache_rows().size(), rows);

  auto third = rt->complete("m", prompt, greedy(4));  // caching again
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->cache_hit_kind, CacheHitKind::kCold);
}

TEST(ShutdownModelTest, SavesLiveStateAndKeepsServing) {
  auto rt = make_runtime();
  auto control = std::make_shared<StubControl>();
  control->step_delay_us = 1000;
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, control)).ok());
  std::atomic<int> tokens{0};
  std::promise<void> done;
  StreamSink sink;
  sink.on_token = [&](TokenId) { tokens++; };
  sink.on_done = [&](const RequestStats&) { done.set_value(); };
  sink.on_error = [&](const Status&) { done.set_value(); };
  auto prompt = rt->tokenize("m", text_of(120));
  ASSERT_TRUE(prompt.ok());
  auto id = rt->infer("m", *prompt, greedy(2000), sink);
  ASSERT_TRUE(id.ok());
  while (tokens.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const uint64_t before = rt->cache_counters()["saves_shutdown"];
  ASSERT_TRUE(rt->shutdown("m").ok());  // the live sequence, mid-generation
  EXPECT_EQ(rt->cache_counters()["saves_shutdown"], before + 1);  // sync: counted already
  rt->cancel(*id);
  done.get_future().wait();
  EXPECT_TRUE(rt->complete("m", text_of(120), greedy(4)).ok());  // still serving
  EXPECT_EQ(rt->shutdown("nope").code(), ErrorCode::kNotFound);
  EXPECT_EQ(rt->evict("nope").code(), ErrorCode::kNotFound);
}

TEST(PressureAdminTest, EnableForceCheckStatus) {
  RuntimeOptions o;
  o.cache.pressure.source = cache::PressureSource::kCallback;
  o.cache.pressure.callback = [] { return cache::PressureReading{10, 100}; };  // 10%: low
  auto rt = make_runtime(std::move(o));
  EXPECT_FALSE(rt->pressure_status().enabled);
  EXPECT_EQ(rt->pressure_force_check().outcome, cache::ForceCheckResult::Outcome::kSkippedDisabled);
  rt->pressure_enable(true);
  EXPECT_TRUE(rt->pressure_status().enabled);
  EXPECT_EQ(rt->pressure_force_check().outcome,
            cache::ForceCheckResult::Outcome::kSkippedBelowWatermark);
  EXPECT_EQ(rt->pressure_status().last_used, 10u);
  rt->pressure_enable(false);
  EXPECT_FALSE(rt->pressure_status().enabled);
}

}  // namespace
}  // namespace hearth::runtime
