// The runtime over the real engine (stories260K): warm == cold bit-identical for exact,
// resume and longest-prefix hits; concurrent requests equal solo runs.
#include <filesystem>
#include <future>

#include <unistd.h>

#include "slow_disk.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

class EngineRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  }
  static ModelConfig config(std::string id, int32_t n_seq_max, bool caching = true) {
    return engine_config(std::move(id), kModel, n_seq_max, caching);
  }
  static CompletionResult cold(std::span<const TokenId> prompt, const RequestParams& p) {
    auto rt = make_runtime();
    EXPECT_TRUE(rt->load_model(config("ref", 1, false)).ok());
    auto r = rt->complete_tokens("ref", prompt, p);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  }
};

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it.";

TEST_F(EngineRuntime, ExactResumeAndPrefixHitsAreBitIdentical) {
  SlowDisk disk(std::chrono::milliseconds(250));  // each disk publish takes 250 ms
  auto rt = make_runtime(disk.options());
  ModelConfig cfg = config("m", 2);
  cfg.tier = Tier::kDisk;  // the slow publishes keep the finish save in flight
  auto loaded = rt->load_model(cfg);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(rt->model_info("m")->backend, "engine");
  RequestParams p = greedy(12);
  auto t1 = rt->complete("m", kStory, p);
  ASSERT_TRUE(t1.ok()) << t1.status().to_string();
  ASSERT_TRUE(t1->finish_key);
  std::vector<TokenId> prompt2 = t1->context_tokens;
  auto more = *rt->tokenize("m", " Lily was sad.", false);
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  RequestParams pk = p;
  pk.parent_key = t1->finish_key;
  auto resume = rt->complete_tokens("m", prompt2, pk);  // finish save still in flight
  ASSERT_TRUE(resume.ok());
  EXPECT_EQ(resume->cache_hit_kind, CacheHitKind::kResume);
  const CompletionResult reference = cold(prompt2, p);
  expect_same_output(*resume, reference);

  auto exact = rt->complete_tokens("m", prompt2, pk);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->cache_hit_kind, CacheHitKind::kExact);
  expect_same_output(*exact, reference);

  auto prefix = rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->cache_hit_kind, CacheHitKind::kPartial);
  EXPECT_GT(prefix->cache_delta.read, 0);
  expect_same_output(*prefix, reference);

  RequestParams seeded = p;
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.seed = 7;
  auto warm_seeded = rt->complete_tokens("m", prompt2, seeded);
  ASSERT_TRUE(warm_seeded.ok());
  EXPECT_NE(warm_seeded->cache_hit_kind, CacheHitKind::kCold);
  expect_same_output(*warm_seeded, cold(prompt2, seeded));
}

// File tiers restore by reading the row straight into the engine's KV (in-place
// import): exact and longest-prefix hits from ram_file and disk rows are still
// bit-identical to a cold run.
TEST_F(EngineRuntime, FileTierRestoresAreBitIdentical) {
  for (Tier tier : {Tier::kRamFile, Tier::kDisk}) {
    SCOPED_TRACE(tier == Tier::kDisk ? "disk" : "ram_file");
    const auto dir =
        std::filesystem::temp_directory_path() / ("hearth-rt-import-" + std::to_string(::getpid()) +
                                                  "-" + std::to_string(static_cast<int>(tier)));
    std::filesystem::remove_all(dir);
    RuntimeOptions o;
    if (tier == Tier::kDisk)
      o.cache.disk_dir = dir.string();
    else
      o.cache.ram_file_dir = dir.string();
    auto rt = std::move(Runtime::create(o)).value();
    auto c = config("m", 1);
    c.tier = tier;
    ASSERT_TRUE(rt->load_model(c).ok());
    RequestParams p = greedy(10);
    auto t1 = rt->complete("m", kStory, p);
    ASSERT_TRUE(t1.ok()) << t1.status().to_string();
    ASSERT_TRUE(t1->finish_key);
    ASSERT_TRUE(rt->cache_flush());
    std::vector<TokenId> prompt2 = t1->context_tokens;
    auto more = *rt->tokenize("m", " The dog ran away.", false);
    prompt2.insert(prompt2.end(), more.begin(), more.end());
    const CompletionResult reference = cold(prompt2, p);
    // Another sequence first, so the slot holds no resident cells of t1.
    ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
    RequestParams pk = p;
    pk.parent_key = t1->finish_key;
    auto exact = rt->complete_tokens("m", prompt2, pk);
    ASSERT_TRUE(exact.ok()) << exact.status().to_string();
    EXPECT_EQ(exact->cache_hit_kind, CacheHitKind::kExact);
    expect_same_output(*exact, reference);
    ASSERT_TRUE(rt->complete("m", "A cat sat on a mat and looked at the moon.", p).ok());
    auto prefix = rt->complete_tokens("m", prompt2, p);
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(prefix->cache_hit_kind, CacheHitKind::kPartial);
    expect_same_output(*prefix, reference);
    EXPECT_EQ(rt->cache_counters()["runtime_restore_failures"], 0u);
    rt->shutdown();
    std::filesystem::remove_all(dir);
  }
}

TEST_F(EngineRuntime, ConcurrentRequestsEqualSoloRuns) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config("m", 4, false)).ok());
  const char* prompts[] = {"Once upon a time", "The cat sat", "Tom had a big",
                           "One day, a bird",  "There was a", "Sue liked to"};
  std::vector<std::future<Result<CompletionResult>>> fs;
  RequestParams p = greedy(10);
  for (const char* s : prompts)
    fs.push_back(std::async(std::launch::async, [&, s] { return rt->complete("m", s, p); }));
  for (size_t i = 0; i < fs.size(); ++i) {
    auto r = fs[i].get();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto tokens = *rt->tokenize("m", prompts[i]);
    expect_same_output(*r, cold(tokens, p));
  }
}

}  // namespace
}  // namespace hearth::runtime

namespace hearth::runtime {
namespace {
using namespace testing;

// frequency / presence penalties reach the engine's sampler: every greedy pick is the
// argmax of the raw logits minus count * frequency + presence over the last 64 tokens.
TEST(EnginePenalties, FrequencyAndPresenceAreApplied) {
  const std::string model = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "SKIPPED: " << model << " is absent";
  auto rt = make_runtime();
  ModelConfig c;
  c.id = "m";
  c.model_path = model;
  c.n_ctx = 256;
  c.n_threads = 1;
  ASSERT_TRUE(rt->load_model(c).ok());
  RequestParams p = greedy(32);
  auto plain = rt->complete("m", "Once upon a time", p);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  p.sampling.frequency_penalty = 0.7f;
  p.sampling.presence_penalty = 0.9f;
  auto pen = rt->complete("m", "Once upon a time", p);
  ASSERT_TRUE(pen.ok()) << pen.status().to_string();
  ASSERT_EQ(pen->token_logits.size(), pen->generated.size());
  EXPECT_NE(pen->generated, plain->generated);
  const size_t n_prompt = pen->context_tokens.size() - pen->generated.size();
  for (size_t i = 0; i < pen->generated.size(); ++i) {
    std::vector<float> l = pen->token_logits[i];
    const size_t end = n_prompt + i;
    const size_t begin = end > 64 ? end - 64 : 0;
    std::map<TokenId, int> counts;
    for (size_t k = begin; k < end; ++k) counts[pen->context_tokens[k]]++;
    for (auto [t, n] : counts) l[static_cast<size_t>(t)] -= n * 0.7f + 0.9f;
    size_t best = 0;
    for (size_t k = 1; k < l.size(); ++k)
      if (l[k] > l[best]) best = k;
    EXPECT_EQ(static_cast<TokenId>(best), pen->generated[i]) << "step " << i;
  }
}

}  // namespace
}  // namespace hearth::runtime
