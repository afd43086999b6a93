// The warm == cold check of the runtime's engine tests (one model, any architecture or
// KV type): an exact hit (the row restored into another slot after another request
// used it), a longest-prefix hit (a prompt extending a saved row) and the same prompt
// again (a longer row cut back, or for sliding-window rings a cold prefill) give the
// cold run's tokens and logits bit for bit.
// The story prompt is longer than gemma's 64-position sliding window.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "stub_fixture.h"

namespace hearth::runtime::testing {

// A model of the shared reference set: reference/models/FILE, else the architecture set's.
inline std::string reference_model(const std::string& file) {
  const std::string root = std::string(HEARTH_SHARED_DIR) + "/reference/";
  if (std::filesystem::exists(root + "models/" + file)) return root + "models/" + file;
  return root + "architectures/models/" + file;
}

inline constexpr const char* kWarmColdStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it. "
    "Lily was sad, so her friend Tom gave her his kite, and they flew it together all day.";

// `config(caching)`: the model "m"; caching false for the cold reference runtime.
inline void expect_hits_match_cold(const std::function<ModelConfig(bool caching)>& config) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(true)).ok());
  RequestParams p = greedy(8);
  auto t1 = rt->complete("m", kWarmColdStory, p);
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  ASSERT_TRUE(t1->finish_key);
  ASSERT_GT(t1->context_tokens.size(), 64u);
  ASSERT_TRUE(rt->cache_flush());
  std::vector<TokenId> prompt2 = t1->context_tokens;
  auto more = *rt->tokenize("m", " The dog ran away.", false);
  prompt2.insert(prompt2.end(), more.begin(), more.end());

  auto cold_rt = make_runtime();
  ASSERT_TRUE(cold_rt->load_model(config(false)).ok());
  auto reference = cold_rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();

  // Another sequence first, so the slot holds no resident cells of t1.
  ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
  RequestParams pk = p;
  pk.parent_key = t1->finish_key;
  auto exact = rt->complete_tokens("m", prompt2, pk);
  ASSERT_TRUE(exact.ok()) << exact.status().to_string();
  EXPECT_EQ(exact->cache_hit_kind, CacheHitKind::kExact);
  expect_same_output(*exact, *reference);
  // A longest-prefix hit: a prompt that extends the exact run's saved row.
  ASSERT_TRUE(rt->cache_flush());
  std::vector<TokenId> prompt3 = exact->context_tokens;
  auto more3 = *rt->tokenize("m", " Then they went home.", false);
  prompt3.insert(prompt3.end(), more3.begin(), more3.end());
  auto reference3 = cold_rt->complete_tokens("m", prompt3, p);
  ASSERT_TRUE(reference3.ok()) << reference3.status().to_string();
  ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
  auto prefix = rt->complete_tokens("m", prompt3, p);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->cache_hit_kind, CacheHitKind::kPartial);
  expect_same_output(*prefix, *reference3);
  // The same prompt as the exact run: its longest row is longer than the prompt, so the
  // restore cuts it back by the generated tokens. A sliding-window model's row holds only
  // the window there, so it prefills cold instead (docs/runtime.md); same output.
  ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
  auto again = rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(again.ok());
  expect_same_output(*again, *reference);
  if (again->cache_hit_kind == CacheHitKind::kCold) {
    EXPECT_GT(rt->cache_counters()["runtime_truncate_fallbacks"], 0u);
  } else {
    EXPECT_EQ(again->cache_hit_kind, CacheHitKind::kPartial);
  }
  EXPECT_EQ(rt->cache_counters()["runtime_restore_failures"], 0u);
}

}  // namespace hearth::runtime::testing
