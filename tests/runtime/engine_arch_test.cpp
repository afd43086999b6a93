// Warm == cold over the real engine for every architecture of the reference
// architecture set: an exact hit (the row restored into another slot after another
// request used it) and a longest-prefix hit give the cold run's tokens and logits bit
// for bit. The prompt is longer than gemma's 64-position sliding window, and MoE
// routing is recomputed for the new positions only.
#include <filesystem>

#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

std::string arch_model(const std::string& file) {
  return std::string(HEARTH_SHARED_DIR) + "/reference/architectures/models/" + file;
}

ModelConfig arch_config(std::string id, const std::string& path, bool caching) {
  return engine_config(std::move(id), path, /*n_seq_max=*/1, caching);
}

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it. "
    "Lily was sad, so her friend Tom gave her his kite, and they flew it together all day.";

class ArchWarmCold : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchWarmCold, ExactAndPrefixHitsAreBitIdentical) {
  const std::string path = arch_model(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(arch_config("m", path, true)).ok());
  RequestParams p = greedy(8);
  auto t1 = rt->complete("m", kStory, p);
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  ASSERT_TRUE(t1->finish_key);
  ASSERT_GT(t1->context_tokens.size(), 64u);
  ASSERT_TRUE(rt->cache_flush());
  std::vector<TokenId> prompt2 = t1->context_tokens;
  auto more = *rt->tokenize("m", " The dog ran away.", false);
  prompt2.insert(prompt2.end(), more.begin(), more.end());

  auto cold_rt = make_runtime();
  ASSERT_TRUE(cold_rt->load_model(arch_config("m", path, false)).ok());
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
  ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
  auto prefix = rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->cache_hit_kind, CacheHitKind::kPartial);
  expect_same_output(*prefix, *reference);
  EXPECT_EQ(rt->cache_counters()["runtime_restore_failures"], 0u);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchWarmCold,
                         ::testing::Values("small-llama-hd48-q8_0.gguf", "small-qwen3-q4_k_m.gguf",
                                           "small-qwen3moe-q8_0.gguf", "small-mixtral-f16.gguf",
                                           "small-phi3-gqa-q8_0.gguf", "small-gemma2-f16.gguf",
                                           "small-gemma3-q8_0.gguf"),
                         [](const auto& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace hearth::runtime
