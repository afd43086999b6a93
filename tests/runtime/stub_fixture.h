// Shared helpers for runtime tests on the deterministic stub backend.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "hearth/runtime/runtime.h"
#include "testing/stub_backend.h"

namespace hearth::runtime::testing {

inline ModelSavePolicy small_policy(int32_t min_tokens = 64, int32_t align = 64) {
  ModelSavePolicy p;
  p.min_tokens = min_tokens;
  p.cold_min_tokens = min_tokens;
  p.boundary_trim_tokens = 32;
  p.boundary_align_tokens = align;
  p.continued_interval = 2048;
  p.session_resume_wait_ms = 2000;
  return p;
}

inline ModelConfig stub_config(std::string id, int32_t n_seq_max,
                               std::shared_ptr<StubControl> control = nullptr,
                               std::string path = "stub-a.gguf") {
  StubOptions o;
  o.n_ctx = 4096;
  o.n_seq_max = n_seq_max;
  o.model_path = std::move(path);
  if (control) o.control = std::move(control);
  ModelConfig c;
  c.id = std::move(id);
  c.model_path = o.model_path;
  c.factory = stub_factory(o);
  c.n_seq_max = n_seq_max;
  c.n_batch = 256;
  c.prefill_chunk_size = 64;
  c.policy = small_policy();
  c.restart_backoff_ms = 1;
  return c;
}

// A model on the real engine, small and single-threaded: a 512-position context,
// 24-token prefill slices (so prompts cross several ticks), no slot affinity (so a
// second request restores from the cache), and a save policy for short prompts unless
// `caching` is false.
inline ModelConfig engine_config(std::string id, std::string path, int32_t n_seq_max,
                                 bool caching = true) {
  ModelConfig c;
  c.id = std::move(id);
  c.model_path = std::move(path);
  c.n_ctx = 512;
  c.n_seq_max = n_seq_max;
  c.n_batch = 64;
  c.prefill_chunk_size = 24;
  c.n_threads = 1;
  c.slot_affinity = false;
  c.policy = small_policy(32, 32);
  if (!caching) {
    c.policy.min_tokens = 1 << 30;
    c.policy.cold_min_tokens = 1 << 30;
  }
  return c;
}

inline std::unique_ptr<Runtime> make_runtime(RuntimeOptions o = {}) {
  auto rt = Runtime::create(std::move(o));
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return std::move(rt).value();
}

// Deterministic filler text of about n bytes (= n stub tokens).
inline std::string text_of(size_t n, char seed = 'a') {
  std::string s;
  while (s.size() < n) {
    s += "word";
    s += static_cast<char>(seed + static_cast<char>(s.size() % 7));
    s += ' ';
  }
  s.resize(n);
  return s;
}

inline RequestParams greedy(int32_t n = 24) {
  RequestParams p;
  p.response_tokens = n;
  p.sampling.temperature = 0;
  p.capture_logits = true;
  return p;
}

inline void wait_for_counter(Runtime& rt, const std::string& name, uint64_t at_least) {
  for (int i = 0; i < 2000; ++i) {
    auto c = rt.cache_counters();
    if (c[name] >= at_least) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  FAIL() << "counter " << name << " never reached " << at_least;
}

// Cold reference: the same request on a fresh runtime with saving disabled.
inline CompletionResult cold_reference(std::span<const TokenId> prompt, const RequestParams& p) {
  auto rt = make_runtime();
  auto cfg = stub_config("ref", 1);
  cfg.policy.min_tokens = 1 << 30;
  cfg.policy.cold_min_tokens = 1 << 30;
  EXPECT_TRUE(rt->load_model(cfg).ok());
  auto r = rt->complete_tokens("ref", prompt, p);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cache_hit_kind, CacheHitKind::kCold);
  return std::move(r).value();
}

inline void expect_same_output(const CompletionResult& warm, const CompletionResult& cold) {
  EXPECT_EQ(warm.generated, cold.generated);
  EXPECT_EQ(warm.reply, cold.reply);
  EXPECT_EQ(warm.finish_reason, cold.finish_reason);
  ASSERT_EQ(warm.token_logits.size(), cold.token_logits.size());
  for (size_t i = 0; i < warm.token_logits.size(); ++i)
    ASSERT_EQ(warm.token_logits[i], cold.token_logits[i]) << "logits differ at token " << i;
}

}  // namespace hearth::runtime::testing
