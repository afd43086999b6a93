// LoRA adapters through the runtime over the real engine (stories260K and a random
// adapter from `hearth gen-model --lora-for`): the cache keys rows on the cache's
// effective_fingerprint(base, adapters + scales), so rows never cross adapter sets; a
// warm hit under an adapter equals its cold run bit for bit; requests with different
// adapter sets run concurrently with the same outputs as alone; the adapter list admin.
#include <cstdlib>
#include <filesystem>
#include <future>
#include <set>

#include <unistd.h>

#include "hearth/cache/key.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {
using namespace testing;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sun. One day, she saw a big red ball in the park.";

class LoraRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
    if (!std::filesystem::exists(HEARTH_CLI_PATH)) GTEST_SKIP() << "no hearth binary";
    adapter_ = gen(7);
    other_ = gen(8);
    ASSERT_FALSE(adapter_.empty() || other_.empty());
  }
  void TearDown() override {
    std::filesystem::remove(adapter_);
    std::filesystem::remove(other_);
  }
  static std::string gen(int seed) {
    const std::string out =
        (std::filesystem::temp_directory_path() /
         ("hearth_rt_lora_" + std::to_string(getpid()) + "_" + std::to_string(seed) + ".gguf"))
            .string();
    const std::string cmd = std::string(HEARTH_CLI_PATH) + " gen-model --lora-for " + kModel +
                            " --rank 4 --alpha 8 --seed " + std::to_string(seed) + " --out " + out +
                            " > /dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? out : "";
  }
  ModelConfig config(bool caching = true, float scale = 1.0f) const {
    ModelConfig c = engine_config("m", kModel, 2, caching);
    c.adapters = {AdapterSpec{adapter_, scale}};
    return c;
  }
  // The request's output on a fresh runtime that saves nothing.
  CompletionResult cold(std::span<const TokenId> prompt, const RequestParams& p) const {
    auto rt = make_runtime();
    EXPECT_TRUE(rt->load_model(config(false)).ok());
    auto r = rt->complete_tokens("m", prompt, p);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  }
  std::string adapter_, other_;
};

RequestParams with_lora(RequestParams p, std::vector<AdapterScale> lora) {
  p.lora = std::move(lora);
  return p;
}

TEST_F(LoraRuntime, RowsNeverCrossAdapterSetsAndWarmEqualsCold) {
  auto rt = make_runtime();
  auto loaded = rt->load_model(config());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const RequestParams p = greedy(8);
  const std::vector<TokenId> prompt = *rt->tokenize("m", kStory);
  // The model's scale (1), the base (every adapter at 0) and scale 0.5.
  auto adapted = rt->complete_tokens("m", prompt, p);
  auto base = rt->complete_tokens("m", prompt, with_lora(p, {}));
  auto half = rt->complete_tokens("m", prompt, with_lora(p, {{0, 0.5f}}));
  ASSERT_TRUE(adapted.ok() && base.ok() && half.ok());
  // Each is a cold prefill: the others' rows are not theirs.
  EXPECT_EQ(adapted->cache_hit_kind, CacheHitKind::kCold);
  EXPECT_EQ(base->cache_hit_kind, CacheHitKind::kCold);
  EXPECT_EQ(half->cache_hit_kind, CacheHitKind::kCold);
  EXPECT_NE(adapted->token_logits, base->token_logits);
  EXPECT_NE(adapted->token_logits, half->token_logits);
  // Three namespaces: the base fingerprint and effective_fingerprint(base, {sha, scale}).
  ASSERT_TRUE(rt->cache_flush());
  const std::string base_fp = rt->model_info("m")->fingerprint_hex;
  const Digest256 base_d = *digest_from_hex(base_fp);
  const Digest256 sha = *sha256_file(adapter_);
  std::set<std::string> want = {base_fp};
  for (float s : {1.0f, 0.5f}) {
    const cache::LoraAdapterId id{sha, s};
    want.insert(to_hex(cache::effective_fingerprint(base_d, std::span(&id, 1))));
  }
  std::set<std::string> seen;
  for (const auto& row : rt->cache_rows()) seen.insert(row.fingerprint_hex);
  EXPECT_EQ(seen, want);
  // The adapter's list reports the same digest.
  auto list = rt->list_adapters("m");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].sha256_hex, to_hex(sha));

  // Warm == cold under the adapter: an exact hit by parent_key and a longest-prefix hit.
  std::vector<TokenId> prompt2 = adapted->context_tokens;
  auto more = *rt->tokenize("m", " She ran to get it.", false);
  prompt2.insert(prompt2.end(), more.begin(), more.end());
  const CompletionResult reference = cold(prompt2, p);
  RequestParams pk = p;
  pk.parent_key = adapted->finish_key;
  auto exact = rt->complete_tokens("m", prompt2, pk);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->cache_hit_kind, CacheHitKind::kExact);
  expect_same_output(*exact, reference);
  ASSERT_TRUE(rt->cache_flush());
  auto prefix = rt->complete_tokens("m", prompt2, p);
  ASSERT_TRUE(prefix.ok());
  EXPECT_NE(prefix->cache_hit_kind, CacheHitKind::kCold);
  expect_same_output(*prefix, reference);
  // The adapter row's key given to a base request is not restored: the base prefills
  // its own prompt (a partial hit on the base row at most).
  RequestParams base_pk = with_lora(p, {});
  base_pk.parent_key = adapted->finish_key;
  auto crossed = rt->complete_tokens("m", prompt2, base_pk);
  ASSERT_TRUE(crossed.ok());
  EXPECT_NE(crossed->cache_hit_kind, CacheHitKind::kExact);
  EXPECT_NE(crossed->token_logits, exact->token_logits);
}

TEST_F(LoraRuntime, ScaleZeroIsTheBaseModelBitForBit) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(false, 0.0f)).ok());
  auto plain = make_runtime();
  ModelConfig c = engine_config("m", kModel, 2, false);
  ASSERT_TRUE(plain->load_model(c).ok());
  const RequestParams p = greedy(8);
  auto zero = rt->complete("m", kStory, p);
  auto ref = plain->complete("m", kStory, p);
  ASSERT_TRUE(zero.ok() && ref.ok());
  expect_same_output(*zero, *ref);
  EXPECT_EQ(rt->model_info("m")->fingerprint_hex, plain->model_info("m")->fingerprint_hex);
}

TEST_F(LoraRuntime, ConcurrentRequestsUnderDifferentSetsEqualSoloRuns) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(false)).ok());
  auto second = rt->load_adapter("m", AdapterSpec{other_, 1.0f});
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->id, 1);
  const RequestParams p = greedy(10);
  const std::vector<std::vector<AdapterScale>> sets = {{{0, 1.0f}}, {{1, 2.0f}}, {}};
  std::vector<CompletionResult> solo;
  for (const auto& s : sets) {
    auto r = rt->complete("m", kStory, with_lora(p, s));
    ASSERT_TRUE(r.ok());
    solo.push_back(*r);
  }
  // Two at a time share the batches (n_seq_max 2), the third queues.
  std::vector<std::future<Result<CompletionResult>>> runs;
  for (const auto& s : sets)
    runs.push_back(std::async(std::launch::async,
                              [&rt, &p, s] { return rt->complete("m", kStory, with_lora(p, s)); }));
  for (size_t i = 0; i < runs.size(); ++i) {
    auto r = runs[i].get();
    ASSERT_TRUE(r.ok());
    expect_same_output(*r, solo[i]);
  }
}

TEST_F(LoraRuntime, AdapterAdmin) {
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(config(false)).ok());
  const RequestParams p = greedy(4);
  // Unknown ids are refused by name, in requests and in scales.
  auto bad = rt->complete("m", kStory, with_lora(p, {{0, 1.0f}, {5, 1.0f}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lora[1].id"), std::string::npos);
  const AdapterScale scales[] = {{3, 1.0f}};
  EXPECT_EQ(rt->set_adapter_scales("m", scales).code(), ErrorCode::kInvalidArgument);
  // Scales: listed ones set, the others 0 (llama-server's POST /lora-adapters).
  ASSERT_TRUE(rt->load_adapter("m", AdapterSpec{other_, 0.25f}).ok());
  const AdapterScale only_second[] = {{1, 0.75f}};
  ASSERT_TRUE(rt->set_adapter_scales("m", only_second).ok());
  auto list = *rt->list_adapters("m");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].scale, 0.0f);
  EXPECT_EQ(list[1].scale, 0.75f);
  // The model's scales are what a request without `lora` runs with.
  auto by_model = rt->complete("m", kStory, p);
  auto explicit_set = rt->complete("m", kStory, with_lora(p, {{1, 0.75f}}));
  ASSERT_TRUE(by_model.ok() && explicit_set.ok());
  expect_same_output(*by_model, *explicit_set);
  // A bad file names what is wrong; unload forgets the id, which is never reused.
  auto not_adapter = rt->load_adapter("m", AdapterSpec{kModel, 1.0f});
  ASSERT_FALSE(not_adapter.ok());
  EXPECT_NE(not_adapter.status().message().find("general.type"), std::string::npos);
  ASSERT_TRUE(rt->unload_adapter("m", 0).ok());
  EXPECT_EQ(rt->unload_adapter("m", 0).code(), ErrorCode::kNotFound);
  auto again = rt->load_adapter("m", AdapterSpec{adapter_, 1.0f});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, 2);  // not 0, and the refused file took none
  EXPECT_EQ(rt->list_adapters("m")->size(), 2u);
}

}  // namespace
}  // namespace hearth::runtime
