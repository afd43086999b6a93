// Model registry, cache wiring across loads, evict, embeddings, utilities.
#include <algorithm>
#include <filesystem>
#include <future>
#include <thread>

#include "slow_disk.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

TEST(Registry, IdsInfoListAndErrors) {
  auto rt = make_runtime();
  auto a = rt->load_model(stub_config("", 1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, "model_1");
  ASSERT_TRUE(rt->load_model(stub_config("tiny", 2, nullptr, "tiny.gguf")).ok());
  auto dup = rt->load_model(stub_config("tiny", 1));
  EXPECT_EQ(dup.status().code(), ErrorCode::kAlreadyExists);
  auto cfg = stub_config("bad", 8);
  cfg.n_batch = 4;
  auto bad = rt->load_model(cfg);
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("n_batch"), std::string::npos);
  auto cfg2 = stub_config("ramfile", 1);
  cfg2.tier = Tier::kRamFile;  // not enabled in this runtime's cache
  EXPECT_EQ(rt->load_model(cfg2).status().code(), ErrorCode::kInvalidArgument);

  auto list = rt->list_models();
  ASSERT_EQ(list.size(), 2u);
  auto info = rt->model_info("tiny");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->status, ModelStatus::kIdle);
  EXPECT_EQ(info->backend, "stub");
  EXPECT_EQ(info->context_size, 4096);
  EXPECT_EQ(info->n_seq_max, 2);
  EXPECT_EQ(info->fingerprint_hex.size(), 64u);
  EXPECT_NE(info->fingerprint_hex, rt->model_info("model_1")->fingerprint_hex);
  EXPECT_EQ(info->tier, Tier::kRam);
  EXPECT_EQ(rt->model_info("nope").status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(rt->unload_model("tiny").ok());
  EXPECT_EQ(rt->unload_model("tiny").code(), ErrorCode::kNotFound);
  EXPECT_EQ(rt->list_models().size(), 1u);
}

TEST(Registry, AdaptersUnsupportedByStubFailTheLoad) {
  auto rt = make_runtime();
  auto cfg = stub_config("lora", 1);
  cfg.adapters = {AdapterSpec{"adapter.gguf", 1.0f}};
  EXPECT_EQ(rt->load_model(cfg).status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(rt->list_models().empty());
}

TEST(Registry, FingerprintModes) {
  auto rt = make_runtime();
  auto cfg = stub_config("fast", 1);
  cfg.fingerprint_mode = FingerprintMode::kFastUnsafe;
  EXPECT_EQ(rt->load_model(cfg).status().code(), ErrorCode::kInvalidArgument);
  cfg.fingerprint_hex = std::string(64, 'a');
  ASSERT_TRUE(rt->load_model(cfg).ok());
  EXPECT_EQ(rt->model_info("fast")->fingerprint_hex, std::string(64, 'a'));
  auto safe = stub_config("safe", 1);
  safe.fingerprint_mode = FingerprintMode::kSafe;
  ASSERT_TRUE(rt->load_model(safe).ok());
  auto custom = stub_config("ctx", 1);
  custom.ctx_params_hash_hex = std::string(64, 'b');
  ASSERT_TRUE(rt->load_model(custom).ok());
  EXPECT_EQ(rt->model_info("ctx")->ctx_params_hash_hex, std::string(64, 'b'));
}

TEST(Registry, UnloadAndReloadKeepsRowsUsable) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  auto t1 = rt->complete("m", text_of(300), greedy(8));
  ASSERT_TRUE(t1.ok());
  ASSERT_TRUE(rt->unload_model("m").ok());
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  RequestParams p = greedy(8);
  p.parent_key = t1->finish_key;
  auto t2 = rt->complete_tokens("m", t1->context_tokens, p);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kExact);
  // The restore is timed and its tier named (/metrics' hearth_cache_restore_seconds);
  // a cold start has neither.
  EXPECT_EQ(t1->stats.restore_ms, -1);
  EXPECT_FALSE(t1->stats.restore_tier);
  EXPECT_GE(t2->stats.restore_ms, 0);
  EXPECT_EQ(t2->stats.restore_tier, std::optional<Tier>(Tier::kRam));
  // A different model (other fingerprint) never sees those rows.
  ASSERT_TRUE(rt->load_model(stub_config("other", 1, nullptr, "other.gguf")).ok());
  auto t3 = rt->complete_tokens("other", t1->context_tokens, greedy(8));
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->cache_hit_kind, CacheHitKind::kCold);
}

// With slow writers the finish save is still queued when complete() returns: unload must
// wait for it, so the reloaded model finds the row published (exact, not resume).
TEST(Registry, UnloadWaitsForThatModelsAsyncSaves) {
  SlowDisk disk(std::chrono::milliseconds(150));  // each disk publish takes 150 ms
  auto rt = make_runtime(disk.options());
  auto cfg = stub_config("m", 1);
  cfg.tier = Tier::kDisk;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  auto t1 = rt->complete("m", text_of(300), greedy(8));
  ASSERT_TRUE(t1.ok());
  ASSERT_TRUE(t1->finish_key.has_value());
  ASSERT_TRUE(rt->unload_model("m").ok());
  for (const CacheRowSummary& r : rt->cache_rows()) EXPECT_FALSE(r.in_flight);
  ASSERT_TRUE(rt->load_model(cfg).ok());
  RequestParams p = greedy(8);
  p.parent_key = t1->finish_key;
  auto t2 = rt->complete_tokens("m", t1->context_tokens, p);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->cache_hit_kind, CacheHitKind::kExact);
}

TEST(Registry, CacheRowsEvictBytesAndGc) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  EXPECT_TRUE(rt->cache_rows().empty());
  auto a = rt->complete("m", text_of(200, 'a'), greedy(4));
  auto b = rt->complete("m", text_of(200, 'k'), greedy(4));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->finish_key && b->finish_key);
  const std::string fp = rt->model_info("m")->fingerprint_hex;
  // Both replies were delivered after their cold and finish saves were queued; once
  // those publish, the row set no longer changes under the evict and gc below.
  ASSERT_TRUE(rt->cache_flush());
  const std::vector<CacheRowSummary> rows = rt->cache_rows();
  ASSERT_GE(rows.size(), 2u);
  bool saw_a = false;
  for (const auto& r : rows) {
    EXPECT_FALSE(r.in_flight);
    EXPECT_EQ(r.key_hex.size(), 64u);
    EXPECT_EQ(r.tier, Tier::kRam);
    EXPECT_GT(r.size_bytes, 0u);
    EXPECT_GT(r.n_tokens, 0u);
    EXPECT_EQ(r.fingerprint_hex, fp);
    saw_a |= r.key_hex == *a->finish_key;
  }
  EXPECT_TRUE(saw_a);
  // Another tier holds nothing; the ram tier gives up the least recently used row.
  const Tier disk[] = {Tier::kDisk};
  EXPECT_EQ(rt->cache_evict_bytes(1, disk).rows, 0u);
  const Tier ram[] = {Tier::kRam};
  auto ev = rt->cache_evict_bytes(1, ram);
  EXPECT_EQ(ev.rows, 1u);
  EXPECT_GT(ev.bytes, 0u);
  EXPECT_EQ(rt->cache_rows().size(), rows.size() - 1);
  EXPECT_EQ(rt->cache_gc(), rows.size() - 1);
  EXPECT_TRUE(rt->cache_rows().empty());
  // The collected parent is gone: the next turn restores nothing from the cache.
  RequestParams p = greedy(4);
  p.parent_key = a->finish_key;
  auto again = rt->complete_tokens("m", a->context_tokens, p);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->cache_hit_kind, CacheHitKind::kExact);
  EXPECT_NE(again->cache_hit_kind, CacheHitKind::kPartial);
}

TEST(Registry, DiskTierSurvivesRuntimeRestart) {
  auto dir = std::filesystem::temp_directory_path() /
             ("hearth-rt-disk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::optional<std::string> key;
  std::vector<TokenId> ctx;
  {
    RuntimeOptions o;
    o.cache.disk_dir = dir.string();
    auto rt = std::move(Runtime::create(o)).value();
    auto cfg = stub_config("m", 1);
    cfg.tier = Tier::kDisk;
    ASSERT_TRUE(rt->load_model(cfg).ok());
    auto r = rt->complete("m", text_of(300), greedy(8));
    ASSERT_TRUE(r.ok());
    key = r->finish_key;
    ctx = r->context_tokens;
    rt->shutdown();
  }
  RuntimeOptions o;
  o.cache.disk_dir = dir.string();
  auto rt = std::move(Runtime::create(o)).value();
  auto cfg = stub_config("m", 1);
  cfg.tier = Tier::kDisk;
  ASSERT_TRUE(rt->load_model(cfg).ok());
  RequestParams p = greedy(8);
  p.parent_key = key;
  auto r = rt->complete_tokens("m", ctx, p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cache_hit_kind, CacheHitKind::kExact);
  expect_same_output(*r, cold_reference(ctx, p));
  rt.reset();
  std::filesystem::remove_all(dir);
}

TEST(Runtime, EvictSavesInFlightSynchronously) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 1000;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, ctl)).ok());
  auto prompt = *rt->tokenize("m", text_of(200));
  auto fut = std::async(std::launch::async, [&] { return rt->complete_tokens("m", prompt, greedy(200)); });
  while (ctl->steps.load() < 8) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(rt->evict("m").ok());
  EXPECT_GE(rt->cache_counters()["saves_evict"], 1u);  // sync: published on return
  auto r = fut.get();
  ASSERT_TRUE(r.ok());
  expect_same_output(*r, cold_reference(prompt, greedy(200)));
}

TEST(Runtime, UnloadRunsShutdownSaveAndEndsRequests) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 1000;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, ctl)).ok());
  auto prompt = *rt->tokenize("m", text_of(200));
  auto fut = std::async(std::launch::async, [&] { return rt->complete_tokens("m", prompt, greedy(5000)); });
  while (ctl->steps.load() < 8) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(rt->unload_model("m").ok());
  auto r = fut.get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(r->finish_key);
  EXPECT_GE(rt->cache_counters()["saves_shutdown"], 1u);
}

TEST(Runtime, EmbeddingsTokenizeAndChatWhileGenerating) {
  auto ctl = std::make_shared<StubControl>();
  ctl->step_delay_us = 500;
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1, ctl)).ok());
  auto fut = std::async(std::launch::async, [&] { return rt->complete("m", text_of(100), greedy(100)); });
  auto toks = rt->tokenize("m", "hello");
  ASSERT_TRUE(toks.ok());
  EXPECT_EQ(toks->size(), 5u);
  EXPECT_EQ(*rt->detokenize("m", *toks), "hello");
  std::vector<std::string> inputs = {"alpha", "beta", "alpha"};
  auto e = rt->embeddings("m", inputs);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[0], (*e)[2]);
  EXPECT_NE((*e)[0], (*e)[1]);
  ASSERT_TRUE(fut.get().ok());
}

TEST(Runtime, ShutdownIsIdempotentAndRefusesWork) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(stub_config("m", 1)).ok());
  rt->shutdown();
  rt->shutdown();
  EXPECT_EQ(rt->complete("m", "x", greedy()).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(rt->load_model(stub_config("n", 1)).status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace hearth::runtime
