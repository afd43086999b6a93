// The KV element types through the runtime: with Q8_0 and Q4_0 KV an exact hit (the row
// restored into another slot) and a longest-prefix hit give the cold run's tokens and
// logits bit for bit, as F16 does; and the KV type is part of the cache namespace (the
// backend's kv_layout names it and the rows shrink), so a row never crosses types.
#include <filesystem>
#include <string>
#include <utility>

#include "runtime/engine_backend.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

std::string reference_model(const std::string& file) {
  const std::string root = std::string(HEARTH_SHARED_DIR) + "/reference/";
  if (std::filesystem::exists(root + "models/" + file)) return root + "models/" + file;
  return root + "architectures/models/" + file;
}

ModelConfig kv_config(std::string id, const std::string& path, KvType kv_type, bool caching) {
  ModelConfig c;
  c.id = std::move(id);
  c.model_path = path;
  c.kv_type = kv_type;
  c.n_ctx = 512;
  c.n_seq_max = 1;
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

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it. "
    "Lily was sad, so her friend Tom gave her his kite, and they flew it together all day.";

class KvTypeWarmCold : public ::testing::TestWithParam<std::pair<const char*, KvType>> {};

TEST_P(KvTypeWarmCold, ExactAndPrefixHitsAreBitIdentical) {
  const std::string path = reference_model(GetParam().first);
  const KvType kv_type = GetParam().second;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(kv_config("m", path, kv_type, true)).ok());
  RequestParams p = greedy(8);
  auto t1 = rt->complete("m", kStory, p);
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  ASSERT_TRUE(t1->finish_key);
  ASSERT_TRUE(rt->cache_flush());
  std::vector<TokenId> prompt2 = t1->context_tokens;
  auto more = *rt->tokenize("m", " The dog ran away.", false);
  prompt2.insert(prompt2.end(), more.begin(), more.end());

  auto cold_rt = make_runtime();
  ASSERT_TRUE(cold_rt->load_model(kv_config("m", path, kv_type, false)).ok());
  auto reference = cold_rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();

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

INSTANTIATE_TEST_SUITE_P(KvTypes, KvTypeWarmCold,
                         ::testing::Values(std::pair{"small-llama-q4_0.gguf", KvType::kQ8_0},
                                           std::pair{"small-llama-q4_0.gguf", KvType::kQ4_0},
                                           std::pair{"small-gemma2-f16.gguf", KvType::kQ8_0},
                                           std::pair{"small-qwen3moe-q8_0.gguf", KvType::kQ4_0}),
                         [](const auto& info) {
                           std::string n = std::filesystem::path(info.param.first).stem().string() +
                                           "_" + kv_type_name(info.param.second);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Each KV type is its own namespace: the layouts differ (numerics names the type, the
// bytes per position shrink: Q8_0 34/64 and Q4_0 18/64 of F16's).
TEST(KvTypeNamespace, LayoutNamesTheTypeAndRowsShrink) {
  const std::string path = reference_model("small-llama-q4_0.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  std::string layouts[3];
  size_t bytes[3] = {};
  const KvType types[3] = {KvType::kF16, KvType::kQ8_0, KvType::kQ4_0};
  for (int i = 0; i < 3; ++i) {
    auto backend = engine_factory(kv_config("m", path, types[i], false))();
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    layouts[i] = (*backend)->kv_identity().kv_layout;
    const size_t at = layouts[i].find("kv_bytes_per_pos=");
    ASSERT_NE(at, std::string::npos) << layouts[i];
    bytes[i] = std::stoul(layouts[i].substr(at + 17));
  }
  EXPECT_NE(layouts[0].find("kv=f16;"), std::string::npos) << layouts[0];
  EXPECT_NE(layouts[1].find("kv=q8_0;"), std::string::npos) << layouts[1];
  EXPECT_NE(layouts[2].find("kv=q4_0;"), std::string::npos) << layouts[2];
  EXPECT_EQ(bytes[1] * 64, bytes[0] * 34);
  EXPECT_EQ(bytes[2] * 64, bytes[0] * 18);
}

}  // namespace
}  // namespace hearth::runtime
